package enforcer

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// The values the guard sets and restores as a tiered topic's
// local.retention.bytes, as Kafka 4.4's LogConfig validates them (spec
// R7.4). Small pure functions, apart from the claim bookkeeping.

// LocalRetentionFloor is the lowest local.retention.bytes the guard sets on
// a topic:
//   - never 0: with local.retention.bytes=0 Kafka rolls the active segment
//     at every retention check (UnifiedLog.deletableSegments: the size
//     predicate holds for the active segment too, which is then rolled),
//     so tiny segments, tiny uploads and remote log metadata records pile
//     up while it stays; 1 frees the same closed, uploaded segments
//     (freedAt: a segment goes while what stays is at least the value,
//     and the active segment stays);
//   - never below remote.copy.lag.bytes when it is positive (KIP-1241):
//     LogConfig.validateRemoteCopyLagSize rejects the change with
//     INVALID_CONFIG.
func LocalRetentionFloor(c agent.TopicConfig) int64 {
	return max(1, c.RemoteCopyLagBytes)
}

// AcceptedLocalBytes returns the local.retention.bytes nearest v that
// Kafka 4.4 accepts with the topic's other configs c (v = -2: inherit
// retention.bytes), and whether that is v itself. LogConfig's rules:
//   - remote.log.copy.disable=true: -2 or equal to retention.bytes
//     (validateRetentionConfigsWhenRemoteCopyDisabled);
//   - retention.bytes >= 0: not -1 and not above retention.bytes
//     (validateRemoteStorageRetentionSize);
//   - remote.copy.lag.bytes > 0: the effective value (-2: retention.bytes)
//     not below it when >= 0 (validateRemoteCopyLagSize).
//
// The nearest accepted value: retention.bytes for a value above it (or
// -1 under a size limit, or any other under remote.log.copy.disable), and
// remote.copy.lag.bytes for a value below it.
func AcceptedLocalBytes(v int64, c agent.TopicConfig) (int64, bool) {
	if c.RemoteCopyDisable {
		if v == -2 || v == c.RetentionBytes {
			return v, true
		}
		return -2, false
	}
	w := v
	if c.RetentionBytes >= 0 && w != -2 && (w == -1 || w > c.RetentionBytes) {
		w = c.RetentionBytes
	}
	eff := w
	if eff == -2 {
		eff = max(c.RetentionBytes, -1)
	}
	if lag := c.RemoteCopyLagBytes; lag > 0 && eff >= 0 && lag > eff {
		if c.RetentionBytes < 0 || lag <= c.RetentionBytes {
			w = lag
		}
	}
	return w, w == v
}
