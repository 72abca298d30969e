package enforcer

import "context"

// The cluster-wide effect of a lowered local retention (spec R7.4): the
// value is the topic's, so every replica of the topic on every broker
// drops its uploaded local copies, while the plan's bytes are this
// broker's only. The plan, its log lines and `protection status` name how
// many replicas on how many brokers that is, from the cluster's metadata.

// ReplicaAdmin reads the replicas of topics from the cluster's metadata
// (one Metadata request). Optional: an Admin without it leaves the
// cluster-wide figures out (unknown), never holds a lowering back.
type ReplicaAdmin interface {
	TopicReplicas(ctx context.Context, topics []string) (map[string]TopicReplicas, error)
}

// readReplicas reads the replicas of the topics a pass may lower, for the
// plan's cluster-wide figures; nil when the admin cannot say or the read
// fails (logged at DEBUG: the figures are information, not a gate).
func (e *Enforcer) readReplicas(ctx context.Context, topics []string) map[string]TopicReplicas {
	ra, ok := e.admin.(ReplicaAdmin)
	if !ok || len(topics) == 0 {
		return nil
	}
	got, err := ra.TopicReplicas(ctx, topics)
	if err != nil {
		e.logger.Debug("topic replicas not read: the plan's cluster-wide figures are left out", "err", err)
		return nil
	}
	return got
}

// scopeAttrs are a local retention change's log attributes about its
// reach: the bytes are this broker's log dir, the value the topic's
// (scope cluster), with the replicas and brokers it reaches when known.
func (c ConfigChange) scopeAttrs() []any {
	attrs := []any{"log_dir", c.LogDir, "bytes", c.Bytes, "scope", "cluster"}
	if r := c.Replicas; r != nil {
		attrs = append(attrs, "replicas", r.Replicas, "brokers", r.Brokers)
	}
	return attrs
}

func (po *ProtectionObserved) replicasOf(topic string) *TopicReplicas {
	if r, ok := po.Replicas[topic]; ok {
		return &r
	}
	return nil
}
