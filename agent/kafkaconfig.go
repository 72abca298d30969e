package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// ApplyTopicConfigs returns base with Kafka topic configs applied, named as
// Kafka names them ("retention.ms", "cleanup.policy", ...), as
// DescribeConfigs or a CreateTopics request carries them. Keys retention
// does not depend on are ignored; a blank numeric value keeps base (Kafka
// reports unset configs as null). internal.segment.bytes, Kafka 4.x's
// override of segment.bytes, wins when set. Errors name the key.
func ApplyTopicConfigs(base TopicConfig, entries map[string]string) (TopicConfig, error) {
	c := base
	for _, f := range []struct {
		key string
		dst *int64
	}{
		{"retention.ms", &c.RetentionMs},
		{"retention.bytes", &c.RetentionBytes},
		{"segment.bytes", &c.SegmentBytes},
		{"segment.index.bytes", &c.SegmentIndexBytes},
		{"index.interval.bytes", &c.IndexIntervalBytes},
		{"internal.segment.bytes", &c.SegmentBytes}, // after segment.bytes: it wins
	} {
		v := strings.TrimSpace(entries[f.key])
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return base, fmt.Errorf("%s=%q: not an integer", f.key, v)
		}
		*f.dst = n
	}
	if v, ok := entries["cleanup.policy"]; ok {
		p, err := ParseCleanupPolicy(v)
		if err != nil {
			return base, fmt.Errorf("cleanup.policy=%q: %w", v, err)
		}
		c.CleanupPolicy = p
	}
	if err := ValidateTopicConfig(c); err != nil {
		return base, err
	}
	return c, nil
}

// BrokerDefaults is the topic config a topic without overrides gets from a
// broker's log.* configs, on top of Kafka's built-in defaults.
// log.retention.ms wins over log.retention.minutes, which wins over
// log.retention.hours, as in Kafka; a negative value disables the limit.
func BrokerDefaults(broker map[string]string) (TopicConfig, error) {
	topic := map[string]string{}
	for brokerKey, topicKey := range map[string]string{
		"log.retention.bytes":      "retention.bytes",
		"log.segment.bytes":        "segment.bytes",
		"log.index.size.max.bytes": "segment.index.bytes",
		"log.index.interval.bytes": "index.interval.bytes",
		"log.cleanup.policy":       "cleanup.policy",
	} {
		if v, ok := broker[brokerKey]; ok && strings.TrimSpace(v) != "" {
			topic[topicKey] = v
		}
	}
	for _, r := range []struct {
		key  string
		unit int64
	}{{"log.retention.ms", 1}, {"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}} {
		v := strings.TrimSpace(broker[r.key])
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("broker config %s=%q: not an integer", r.key, v)
		}
		if n < 0 {
			n = -1
		} else {
			n *= r.unit
		}
		topic["retention.ms"] = strconv.FormatInt(n, 10)
		break
	}
	c, err := ApplyTopicConfigs(DefaultTopicConfig(), topic)
	if err != nil {
		return TopicConfig{}, fmt.Errorf("broker defaults: %w", err)
	}
	return c, nil
}
