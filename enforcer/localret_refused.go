package enforcer

import (
	"errors"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// A lowering Kafka refused (ErrConfigRefused: INVALID_CONFIG, a policy)
// is remembered per topic, with the value refused and the topic's
// configs as the pass that planned it saw them: the topic is not lowered
// again until the lowering episode ends or its configs change (then the
// model's value may be one Kafka accepts). Without it the claim, read
// back as never taken, leaves the record and the next pass sends the same
// change again: one refusal, one record write and one ERROR line every
// other pass. In memory: a restart tries once more.
type refusedLowering struct {
	Value  string
	Config agent.TopicConfig
}

// rememberRefusal notes a lowering Kafka refused, with a log line once.
func (e *Enforcer) rememberRefusal(c ConfigChange, err error) {
	if !errors.Is(err, ErrConfigRefused) || c.Value == nil {
		return
	}
	if e.prot.refused == nil {
		e.prot.refused = map[string]refusedLowering{}
	}
	e.prot.refused[c.Topic] = refusedLowering{Value: *c.Value, Config: c.Config}
	e.logger.Warn("local retention lowering refused by Kafka: not tried again for the topic until the episode ends or its configs change",
		"topic", c.Topic, "key", c.Key, "value", *c.Value)
}

// endRefusals forgets every refusal once the episode ended: no log dir
// at or above the restore bound (Policy.lowerFrom), the snapshot fresh.
// Every pass runs it (protection is not read in every pass).
func (e *Enforcer) endRefusals(o Observed) {
	if len(e.prot.refused) == 0 || o.Stale {
		return
	}
	from := e.policy.lowerFrom()
	for i := range o.Snapshot.LogDirs {
		if o.Snapshot.LogDirs[i].Usage.Ratio() >= from {
			return
		}
	}
	e.prot.refused = nil
}

// refusedTopics forgets the refusals of topics whose configs changed
// since, and lists the rest: the topics planConfigs does not lower.
func (e *Enforcer) refusedTopics(s *agent.Snapshot) map[string]bool {
	out := map[string]bool{}
	for t, r := range e.prot.refused {
		if s.TopicConfig(t) != r.Config {
			delete(e.prot.refused, t)
			e.logger.Info("local retention lowering tried again: the topic's configs changed since Kafka refused it",
				"topic", t, "refused_value", r.Value)
			continue
		}
		out[t] = true
	}
	return out
}
