package reserve

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

func TestApplyTopicConfigs(t *testing.T) {
	base := agent.DefaultTopicConfig()
	tests := []struct {
		name    string
		in      map[string]string
		want    func(*agent.TopicConfig)
		wantErr bool
	}{
		{"empty keeps base", nil, func(*agent.TopicConfig) {}, false},
		{"null values keep base", map[string]string{"retention.ms": "", "segment.bytes": " "}, func(*agent.TopicConfig) {}, false},
		{"all keys", map[string]string{"retention.bytes": "100", "retention.ms": "-1", "segment.bytes": "2048",
			"segment.index.bytes": "4096", "index.interval.bytes": "1", "cleanup.policy": "delete,compact", "unrelated": "x"},
			func(c *agent.TopicConfig) {
				c.RetentionBytes, c.RetentionMs, c.SegmentBytes, c.SegmentIndexBytes, c.IndexIntervalBytes = 100, -1, 2048, 4096, 1
				c.CleanupPolicy = agent.CleanupPolicy{Delete: true, Compact: true}
			}, false},
		{"internal.segment.bytes wins", map[string]string{"segment.bytes": "1048576", "internal.segment.bytes": "32768"},
			func(c *agent.TopicConfig) { c.SegmentBytes = 32768 }, false},
		{"compact", map[string]string{"cleanup.policy": "compact"}, func(c *agent.TopicConfig) { c.CleanupPolicy = agent.CleanupPolicy{Compact: true} }, false},
		{"bad int", map[string]string{"retention.bytes": "1GB"}, nil, true},
		{"negative retention", map[string]string{"retention.bytes": "-2"}, nil, true},
		{"zero segment", map[string]string{"segment.bytes": "0"}, nil, true},
		{"bad policy", map[string]string{"cleanup.policy": "delete,keep"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyTopicConfigs(base, tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			want := base
			tt.want(&want)
			if got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestBrokerDefaults(t *testing.T) {
	tests := []struct {
		name   string
		in     map[string]string
		wantMs int64
	}{
		{"kafka default", nil, 7 * 24 * 3600 * 1000},
		{"ms wins", map[string]string{"log.retention.ms": "1000", "log.retention.hours": "1"}, 1000},
		{"minutes over hours", map[string]string{"log.retention.minutes": "2", "log.retention.hours": "1"}, 120000},
		{"hours", map[string]string{"log.retention.ms": "", "log.retention.hours": "1"}, 3600000},
		{"unlimited", map[string]string{"log.retention.ms": "-1"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := BrokerDefaults(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if c.RetentionMs != tt.wantMs {
				t.Fatalf("retention.ms = %d, want %d", c.RetentionMs, tt.wantMs)
			}
		})
	}
	c, err := BrokerDefaults(map[string]string{"log.retention.bytes": "10", "log.segment.bytes": "20", "log.index.size.max.bytes": "30", "log.cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionBytes != 10 || c.SegmentBytes != 20 || c.SegmentIndexBytes != 30 || !c.CleanupPolicy.Compact || c.CleanupPolicy.Delete {
		t.Fatalf("got %+v", c)
	}
	if _, err := BrokerDefaults(map[string]string{"log.retention.hours": "x"}); err == nil {
		t.Fatal("no error for a bad broker config")
	}
}
