package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// IsKafkaTopicConfig reports whether key is one of Apache Kafka 4.4's
// topic configs: LogConfig.configNames() (TopicConfig's keys, the
// replication throttles and the internal internal.segment.bytes).
func IsKafkaTopicConfig(key string) bool {
	switch key {
	case "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
		"compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable",
		"file.delete.delay.ms", "flush.messages", "flush.ms", "follower.replication.throttled.replicas",
		"index.interval.bytes", "internal.segment.bytes", "leader.replication.throttled.replicas",
		"local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
		"max.decompressed.message.bytes", "max.message.bytes", "message.timestamp.after.max.ms",
		"message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
		"min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.copy.lag.bytes",
		"remote.copy.lag.ms", "remote.log.copy.disable", "remote.log.delete.on.disable",
		"remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
		"segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable":
		return true
	}
	return false
}

// setTopicConfig applies one Kafka topic config to c. Keys retention does
// not depend on are left alone. A blank value keeps c (Kafka reports
// unset configs as null). internal.segment.bytes is not applied here: it
// must win over segment.bytes whatever the order (see applyTopicConfigs).
func setTopicConfig(c *TopicConfig, key, value string) error {
	v := strings.TrimSpace(value)
	var dst *int64
	var flag *bool
	switch key {
	case "retention.ms":
		dst = &c.RetentionMs
	case "retention.bytes":
		dst = &c.RetentionBytes
	case "segment.bytes":
		dst = &c.SegmentBytes
	case "segment.index.bytes":
		dst = &c.SegmentIndexBytes
	case "index.interval.bytes":
		dst = &c.IndexIntervalBytes
	case "local.retention.ms":
		dst = &c.LocalRetentionMs
	case "local.retention.bytes":
		dst = &c.LocalRetentionBytes
	case "remote.copy.lag.bytes":
		dst = &c.RemoteCopyLagBytes
	case "preallocate":
		flag = &c.Preallocate
	case "remote.storage.enable":
		flag = &c.RemoteStorage
	case "remote.log.copy.disable":
		flag = &c.RemoteCopyDisable
	case "cleanup.policy":
		p, err := ParseCleanupPolicy(value)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", key, value, err)
		}
		c.CleanupPolicy = p
		return nil
	default:
		return nil
	}
	if v == "" {
		return nil
	}
	if flag != nil {
		// ConfigDef's BOOLEAN: true or false, in any case.
		switch strings.ToLower(v) {
		case "true":
			*flag = true
		case "false":
			*flag = false
		default:
			return fmt.Errorf("%s=%q: want true or false", key, v)
		}
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%s=%q: not an integer", key, v)
	}
	if key == "retention.bytes" && n < -1 {
		// Kafka has no validator for retention.bytes: any negative value
		// means no limit (UnifiedLog.deleteRetentionSizeBreachedSegments).
		n = -1
	}
	*dst = n
	return nil
}

// ApplyTopicConfigs returns base with Kafka topic configs applied, named as
// Kafka names them ("retention.ms", "cleanup.policy", ...), as
// DescribeConfigs or a CreateTopics request carries them. Keys retention
// does not depend on are ignored; a blank value keeps base (Kafka reports
// unset configs as null). internal.segment.bytes, Kafka 4.x's override of
// segment.bytes, wins when set. retention.bytes below -1 (legal in Kafka)
// is stored as -1: no limit. Errors name the key.
func ApplyTopicConfigs(base TopicConfig, entries map[string]string) (TopicConfig, error) {
	c := base
	for k, v := range entries {
		if err := setTopicConfig(&c, k, v); err != nil {
			return base, err
		}
	}
	if v := strings.TrimSpace(entries["internal.segment.bytes"]); v != "" {
		if err := setTopicConfig(&c, "segment.bytes", v); err != nil {
			return base, fmt.Errorf("internal.segment.bytes=%q: not an integer", v)
		}
	}
	if err := ValidateTopicConfig(c); err != nil {
		return base, err
	}
	return c, nil
}

// BrokerDefaults is the topic config a topic without overrides gets from a
// broker's configs, on top of Kafka's built-in defaults: the log.*
// synonyms of topic configs (ServerTopicConfigSynonyms), and the two
// broker-wide switches retention depends on (log.cleaner.enable,
// remote.log.storage.system.enable). log.retention.ms wins over
// log.retention.minutes, which wins over log.retention.hours, as in Kafka;
// a negative value disables the limit.
func BrokerDefaults(broker map[string]string) (TopicConfig, error) {
	topic := map[string]string{}
	for brokerKey, topicKey := range map[string]string{
		"log.retention.bytes":       "retention.bytes",
		"log.segment.bytes":         "segment.bytes",
		"log.index.size.max.bytes":  "segment.index.bytes",
		"log.index.interval.bytes":  "index.interval.bytes",
		"log.cleanup.policy":        "cleanup.policy",
		"log.preallocate":           "preallocate",
		"log.local.retention.ms":    "local.retention.ms",
		"log.local.retention.bytes": "local.retention.bytes",
	} {
		if v, ok := broker[brokerKey]; ok && (strings.TrimSpace(v) != "" || topicKey == "cleanup.policy") {
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
	if v := strings.TrimSpace(broker["log.retention.check.interval.ms"]); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return TopicConfig{}, fmt.Errorf("broker config log.retention.check.interval.ms=%q: want a positive integer", v)
		}
		c.RetentionCheckIntervalMs = n
	}
	for _, s := range []struct {
		key string
		dst *bool
	}{{"log.cleaner.enable", &c.CleanerDisabled}, {"remote.log.storage.system.enable", &c.RemoteStorageSystemDisabled}} {
		v, ok := broker[s.key]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			*s.dst = false
		case "false":
			*s.dst = true
		default:
			return TopicConfig{}, fmt.Errorf("broker config %s=%q: want true or false", s.key, v)
		}
	}
	return c, nil
}
