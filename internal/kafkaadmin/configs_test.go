package kafkaadmin

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

func TestBrokerDefaultsFromEntries(t *testing.T) {
	tests := []struct {
		name string
		e    map[string]string
		want func(*agent.TopicConfig)
	}{
		{"kafka defaults when nothing is set", map[string]string{}, func(*agent.TopicConfig) {}},
		{"hours", map[string]string{"log.retention.hours": "2", "log.retention.ms": ""}, func(c *agent.TopicConfig) { c.RetentionMs = 7_200_000 }},
		{"minutes over hours", map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}, func(c *agent.TopicConfig) { c.RetentionMs = 180_000 }},
		{"ms over minutes", map[string]string{"log.retention.minutes": "3", "log.retention.ms": "5"}, func(c *agent.TopicConfig) { c.RetentionMs = 5 }},
		{"-1 disables", map[string]string{"log.retention.ms": "-1", "log.retention.bytes": "-1"}, func(c *agent.TopicConfig) { c.RetentionMs = -1 }},
		{"sizes and policy", map[string]string{"log.retention.bytes": "100", "log.segment.bytes": "2000", "log.index.size.max.bytes": "4096", "log.index.interval.bytes": "512", "log.cleanup.policy": "compact,delete"},
			func(c *agent.TopicConfig) {
				c.RetentionBytes, c.SegmentBytes, c.SegmentIndexBytes, c.IndexIntervalBytes = 100, 2000, 4096, 512
				c.CleanupPolicy = agent.CleanupPolicy{Compact: true, Delete: true}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BrokerDefaultsFromEntries(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			want := agent.DefaultTopicConfig()
			tc.want(&want)
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	if _, err := BrokerDefaultsFromEntries(map[string]string{"log.segment.bytes": "big"}); err == nil {
		t.Error("bad number accepted")
	}
}

func TestTopicConfigFromEntries(t *testing.T) {
	base := agent.DefaultTopicConfig()
	got, err := TopicConfigFromEntries(base, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "unrelated": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got.RetentionMs != 1000 || got.CleanupPolicy != (agent.CleanupPolicy{Compact: true}) || got.SegmentBytes != base.SegmentBytes {
		t.Errorf("%+v", got)
	}
	if _, err := TopicConfigFromEntries(base, map[string]string{"cleanup.policy": "zap"}); err == nil {
		t.Error("bad policy accepted")
	}
}

var _ agent.ConfigFetcher = (*ConfigFetcher)(nil)
