package enforcer

import (
	"path"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// exemptTopic reports whether topic is never protected: internal by
// convention (agent.HasInternalPrefix: Kafka's own, the guard's ownership
// topic), the ownership topic by its configured name, or matching one of
// the exempt patterns (path.Match globs, e.g. "connect-*").
func exemptTopic(topic, ownershipTopic string, patterns []string) bool {
	if agent.HasInternalPrefix(topic) || topic == ownershipTopic {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, topic); ok {
			return true
		}
	}
	return false
}
