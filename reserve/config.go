package reserve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Topic config keys the reservation depends on, as Kafka spells them.
const (
	KeyRetentionBytes       = "retention.bytes"
	KeyRetentionMs          = "retention.ms"
	KeySegmentBytes         = "segment.bytes"
	KeyInternalSegmentBytes = "internal.segment.bytes" // Kafka 4.x test-only override of segment.bytes
	KeySegmentIndexBytes    = "segment.index.bytes"
	KeyIndexIntervalBytes   = "index.interval.bytes"
	KeyCleanupPolicy        = "cleanup.policy"
)

// ApplyTopicConfigs returns base with the topic configs in m applied. Keys
// the reservation does not depend on are ignored; an empty value leaves the
// base value (Kafka reports unset configs as null).
func ApplyTopicConfigs(base agent.TopicConfig, m map[string]string) (agent.TopicConfig, error) {
	c := base
	ints := []struct {
		key string
		dst *int64
	}{
		{KeyRetentionBytes, &c.RetentionBytes},
		{KeyRetentionMs, &c.RetentionMs},
		{KeySegmentBytes, &c.SegmentBytes},
		{KeySegmentIndexBytes, &c.SegmentIndexBytes},
		{KeyIndexIntervalBytes, &c.IndexIntervalBytes},
		{KeyInternalSegmentBytes, &c.SegmentBytes}, // after segment.bytes: it wins when set
	}
	for _, f := range ints {
		v, ok := m[f.key]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return base, fmt.Errorf("topic config %s=%q: not an integer", f.key, v)
		}
		*f.dst = n
	}
	if v, ok := m[KeyCleanupPolicy]; ok && strings.TrimSpace(v) != "" {
		p, err := ParseCleanupPolicy(v)
		if err != nil {
			return base, err
		}
		c.CleanupPolicy = p
	}
	if err := validateTopicConfig(c); err != nil {
		return base, err
	}
	return c, nil
}

// ParseCleanupPolicy parses a cleanup.policy list ("delete", "compact",
// "compact,delete" in any order).
func ParseCleanupPolicy(v string) (agent.CleanupPolicy, error) {
	var p agent.CleanupPolicy
	for _, part := range strings.Split(v, ",") {
		switch strings.TrimSpace(part) {
		case "delete":
			p.Delete = true
		case "compact":
			p.Compact = true
		default:
			return p, fmt.Errorf("topic config cleanup.policy=%q: want delete, compact or compact,delete", v)
		}
	}
	return p, nil
}

func validateTopicConfig(c agent.TopicConfig) error {
	switch {
	case c.RetentionBytes < -1:
		return fmt.Errorf("topic config retention.bytes=%d: want -1 or more", c.RetentionBytes)
	case c.RetentionMs < -1:
		return fmt.Errorf("topic config retention.ms=%d: want -1 or more", c.RetentionMs)
	case c.SegmentBytes <= 0:
		return fmt.Errorf("topic config segment.bytes=%d: want more than 0", c.SegmentBytes)
	case c.SegmentIndexBytes < 0:
		return fmt.Errorf("topic config segment.index.bytes=%d: want 0 or more", c.SegmentIndexBytes)
	}
	return nil
}

// BrokerDefaults returns the topic config a new topic gets from the broker
// configuration (the log.* settings), on top of Kafka's built-in defaults.
func BrokerDefaults(broker map[string]string) (agent.TopicConfig, error) {
	m := map[string]string{}
	for topicKey, brokerKey := range map[string]string{
		KeyRetentionBytes:     "log.retention.bytes",
		KeySegmentBytes:       "log.segment.bytes",
		KeySegmentIndexBytes:  "log.index.size.max.bytes",
		KeyIndexIntervalBytes: "log.index.interval.bytes",
		KeyCleanupPolicy:      "log.cleanup.policy",
	} {
		if v := strings.TrimSpace(broker[brokerKey]); v != "" {
			m[topicKey] = v
		}
	}
	// Kafka: log.retention.ms, else log.retention.minutes, else log.retention.hours.
	for _, k := range []struct {
		key  string
		unit int64
	}{{"log.retention.ms", 1}, {"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}} {
		v := strings.TrimSpace(broker[k.key])
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return agent.TopicConfig{}, fmt.Errorf("broker config %s=%q: not an integer", k.key, v)
		}
		if n > 0 {
			n *= k.unit
		}
		m[KeyRetentionMs] = strconv.FormatInt(n, 10)
		break
	}
	c, err := ApplyTopicConfigs(agent.DefaultTopicConfig(), m)
	if err != nil {
		return agent.TopicConfig{}, fmt.Errorf("broker defaults: %w", err)
	}
	return c, nil
}
