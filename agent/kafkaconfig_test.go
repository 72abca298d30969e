package agent

import "testing"

func TestApplyTopicConfigs(t *testing.T) {
	base := DefaultTopicConfig()
	tests := []struct {
		name    string
		in      map[string]string
		want    func(*TopicConfig)
		wantErr bool
	}{
		{"empty keeps base", nil, func(*TopicConfig) {}, false},
		{"null values keep base", map[string]string{"retention.ms": "", "segment.bytes": " "}, func(*TopicConfig) {}, false},
		{"all keys", map[string]string{"retention.bytes": "100", "retention.ms": "-1", "segment.bytes": "2048",
			"segment.index.bytes": "4096", "index.interval.bytes": "1", "cleanup.policy": "delete,compact", "unrelated": "x"},
			func(c *TopicConfig) {
				c.RetentionBytes, c.RetentionMs, c.SegmentBytes, c.SegmentIndexBytes, c.IndexIntervalBytes = 100, -1, 2048, 4096, 1
				c.CleanupPolicy = CleanupPolicy{Delete: true, Compact: true}
			}, false},
		{"internal.segment.bytes wins", map[string]string{"segment.bytes": "1048576", "internal.segment.bytes": "32768"},
			func(c *TopicConfig) { c.SegmentBytes = 32768 }, false},
		{"compact", map[string]string{"cleanup.policy": "compact"}, func(c *TopicConfig) { c.CleanupPolicy = CleanupPolicy{Compact: true} }, false},
		{"R1.7/empty policy list (Kafka 4.2+) is its own policy", map[string]string{"cleanup.policy": ""}, func(c *TopicConfig) { c.CleanupPolicy = CleanupPolicy{} }, false},
		{"R1.7/retention.bytes below -1 is legal and means no limit", map[string]string{"retention.bytes": "-2"}, func(c *TopicConfig) { c.RetentionBytes = -1 }, false},
		{"R1.7/retention.bytes far below -1", map[string]string{"retention.bytes": "-9223372036854775808"}, func(c *TopicConfig) { c.RetentionBytes = -1 }, false},
		{"R1.7/tiered keys", map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "TRUE", "local.retention.ms": "3600000",
			"local.retention.bytes": "-1", "preallocate": "true"}, func(c *TopicConfig) {
			c.RemoteStorage, c.RemoteCopyDisable, c.LocalRetentionMs, c.LocalRetentionBytes, c.Preallocate = true, true, 3600000, -1, true
		}, false},
		{"R1.7/local retention -2 (use retention.*)", map[string]string{"local.retention.ms": "-2", "local.retention.bytes": "-2"}, func(*TopicConfig) {}, false},
		{"R1.7/local.retention.ms below -2", map[string]string{"local.retention.ms": "-3"}, nil, true},
		{"R1.7/bad boolean", map[string]string{"remote.storage.enable": "yes"}, nil, true},
		{"bad int", map[string]string{"retention.bytes": "1GB"}, nil, true},
		{"retention.ms below -1", map[string]string{"retention.ms": "-2"}, nil, true},
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
				if got != base {
					t.Fatalf("on error got %+v, want base back", got)
				}
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
		name string
		e    map[string]string
		want func(*TopicConfig)
	}{
		{"kafka defaults when nothing is set", nil, func(*TopicConfig) {}},
		{"hours", map[string]string{"log.retention.hours": "2", "log.retention.ms": ""}, func(c *TopicConfig) { c.RetentionMs = 7_200_000 }},
		{"minutes over hours", map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}, func(c *TopicConfig) { c.RetentionMs = 180_000 }},
		{"ms over minutes", map[string]string{"log.retention.minutes": "3", "log.retention.ms": "5"}, func(c *TopicConfig) { c.RetentionMs = 5 }},
		{"-1 disables", map[string]string{"log.retention.ms": "-1", "log.retention.bytes": "-1"}, func(c *TopicConfig) { c.RetentionMs = -1 }},
		{"sizes and policy", map[string]string{"log.retention.bytes": "100", "log.segment.bytes": "2000", "log.index.size.max.bytes": "4096", "log.index.interval.bytes": "512", "log.cleanup.policy": "compact,delete"},
			func(c *TopicConfig) {
				c.RetentionBytes, c.SegmentBytes, c.SegmentIndexBytes, c.IndexIntervalBytes = 100, 2000, 4096, 512
				c.CleanupPolicy = CleanupPolicy{Compact: true, Delete: true}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BrokerDefaults(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultTopicConfig()
			tc.want(&want)
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		e    map[string]string
		want func(*TopicConfig)
	}{
		{"R1.7/cleaner disabled", map[string]string{"log.cleaner.enable": "false"}, func(c *TopicConfig) { c.CleanerDisabled = true }},
		{"R1.7/cleaner enabled", map[string]string{"log.cleaner.enable": "true"}, func(*TopicConfig) {}},
		{"R1.7/remote log storage system off", map[string]string{"remote.log.storage.system.enable": "false"}, func(c *TopicConfig) { c.RemoteStorageSystemDisabled = true }},
		{"R1.7/remote log storage system on", map[string]string{"remote.log.storage.system.enable": "true", "log.local.retention.ms": "60000",
			"log.local.retention.bytes": "1000", "log.preallocate": "true"}, func(c *TopicConfig) {
			c.LocalRetentionMs, c.LocalRetentionBytes, c.Preallocate = 60000, 1000, true
		}},
		{"R1.7/log.retention.bytes below -1", map[string]string{"log.retention.bytes": "-5"}, func(*TopicConfig) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BrokerDefaults(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultTopicConfig()
			tc.want(&want)
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	for _, bad := range []map[string]string{{"log.segment.bytes": "big"}, {"log.retention.hours": "x"}, {"log.cleaner.enable": "no"}} {
		if _, err := BrokerDefaults(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
