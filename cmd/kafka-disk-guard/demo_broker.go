package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// brokerTopicConfigs reads the effective retention configs of every topic
// from a real broker (demo --bootstrap-server). A small stand-in until the
// admin adapter package offers it.
func brokerTopicConfigs(bootstrap string) (agent.ConfigSet, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = "kafka-disk-guard-demo"
	cfg.Admin.Timeout = 10 * time.Second
	admin, err := sarama.NewClusterAdmin(strings.Split(bootstrap, ","), cfg)
	if err != nil {
		return agent.ConfigSet{}, fmt.Errorf("connect %s: %w", bootstrap, err)
	}
	defer admin.Close()
	topics, err := admin.ListTopics()
	if err != nil {
		return agent.ConfigSet{}, fmt.Errorf("list topics: %w", err)
	}
	cs := agent.ConfigSet{Topics: make(map[string]agent.TopicConfig, len(topics)), Defaults: agent.DefaultTopicConfig(), Time: time.Now()}
	for name := range topics {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: name})
		if err != nil {
			return agent.ConfigSet{}, fmt.Errorf("describe configs of topic %s: %w", name, err)
		}
		tc, err := parseTopicConfig(entries)
		if err != nil {
			return agent.ConfigSet{}, fmt.Errorf("topic %s: %w", name, err)
		}
		cs.Topics[name] = tc
	}
	return cs, nil
}

// parseTopicConfig maps a topic's effective config entries to TopicConfig.
func parseTopicConfig(entries []sarama.ConfigEntry) (agent.TopicConfig, error) {
	tc := agent.DefaultTopicConfig()
	ints := map[string]*int64{
		"retention.ms":         &tc.RetentionMs,
		"retention.bytes":      &tc.RetentionBytes,
		"segment.bytes":        &tc.SegmentBytes,
		"segment.index.bytes":  &tc.SegmentIndexBytes,
		"index.interval.bytes": &tc.IndexIntervalBytes,
	}
	for _, e := range entries {
		if dst, ok := ints[e.Name]; ok {
			v, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil {
				return tc, fmt.Errorf("config %s=%q: %w", e.Name, e.Value, err)
			}
			*dst = v
			continue
		}
		if e.Name == "cleanup.policy" {
			tc.CleanupPolicy = agent.CleanupPolicy{}
			for _, p := range strings.Split(e.Value, ",") {
				switch strings.TrimSpace(p) {
				case "delete":
					tc.CleanupPolicy.Delete = true
				case "compact":
					tc.CleanupPolicy.Compact = true
				}
			}
		}
	}
	return tc, nil
}
