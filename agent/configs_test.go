package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseConfigFile(t *testing.T) {
	good := `
defaults:
  retention.ms: 3600000
  cleanup.policy: delete
topics:
  orders.v1:
    retention.bytes: 1048576
  compacted:
    cleanup.policy: compact
  both:
    cleanup.policy: delete,compact
    retention.ms: -1
`
	cs, err := ParseConfigFile([]byte(good), DefaultTopicConfig())
	if err != nil {
		t.Fatal(err)
	}
	if cs.Defaults.RetentionMs != 3600000 || cs.Defaults.SegmentBytes != 1<<30 {
		t.Errorf("defaults %+v", cs.Defaults)
	}
	if o := cs.For("orders.v1"); o.RetentionBytes != 1048576 || o.RetentionMs != 3600000 {
		t.Errorf("orders.v1 %+v: topic block applies on top of the defaults", o)
	}
	if c := cs.For("compacted").CleanupPolicy; c != (CleanupPolicy{Compact: true}) {
		t.Errorf("compacted %v", c)
	}
	if b := cs.For("both"); b.CleanupPolicy != (CleanupPolicy{Compact: true, Delete: true}) || b.RetentionMs != -1 {
		t.Errorf("both %+v", b)
	}
	if u := cs.For("unknown"); u != cs.Defaults {
		t.Errorf("unknown topic %+v", u)
	}
	bad := []struct{ body, field string }{
		{"defaults:\n  retention.msec: 5\n", "retention.msec"},
		{"topics:\n  a:\n    segment.byte: 5\n", "segment.byte"},
		{"topics:\n  a:\n    cleanup.policy: purge\n", "topics.a.cleanup.policy"},
		{"defaults:\n  local.retention.bytes: -3\n", "defaults.local.retention.bytes"},
		{"topics:\n  a:\n    preallocate: maybe\n", "topics.a.preallocate"},
		{"topics:\n  a:\n    retention.bytes: [1, 2]\n", "topics.a.retention.bytes"},
		{"topics:\n  a:\n    remote.storage.enabled: true\n", "topics.a.remote.storage.enabled"},
		{"topics:\n  a:\n    segment.bytes: 0\n", "topics.a.segment.bytes"},
		{"topics:\n  \"bad name\":\n    retention.ms: 1\n", "topics.bad name"},
		{"defaults:\n  retention.ms: abc\n", "retention.ms"},
		{"colour: blue\n", "colour"},
	}
	for _, b := range bad {
		t.Run("R6/bad config names "+b.field, func(t *testing.T) {
			_, err := ParseConfigFile([]byte(b.body), DefaultTopicConfig())
			if err == nil || !strings.Contains(err.Error(), b.field) {
				t.Errorf("error %v, want it to name %q", err, b.field)
			}
		})
	}
}

// TestParseConfigFileKafkaKeys is issue 13 point 4: the offline file takes
// every Kafka topic config key, applies those retention depends on, and
// still refuses keys that are not Kafka's.
func TestParseConfigFileKafkaKeys(t *testing.T) {
	body := `
defaults:
  retention.bytes: -2
topics:
  tiered:
    remote.storage.enable: true
    local.retention.ms: 3600000
    local.retention.bytes: -2
    remote.log.copy.disable: false
    preallocate: true
    segment.bytes: 1048576
    internal.segment.bytes: 16384
  everything:
    cleanup.policy: ""
    compression.gzip.level: 5
    compression.lz4.level: 9
    compression.type: zstd
    compression.zstd.level: 3
    delete.retention.ms: 1
    errors.deadletterqueue.group.enable: false
    file.delete.delay.ms: 1000
    flush.messages: 1
    flush.ms: 1
    follower.replication.throttled.replicas: "*"
    leader.replication.throttled.replicas: "0:1,1:2"
    max.compaction.lag.ms: 100
    max.decompressed.message.bytes: 1000000
    max.message.bytes: 1000000
    message.timestamp.after.max.ms: 1
    message.timestamp.before.max.ms: 1
    message.timestamp.type: LogAppendTime
    min.cleanable.dirty.ratio: 0.5
    min.compaction.lag.ms: 1
    min.insync.replicas: 2
    remote.copy.lag.bytes: -1
    remote.copy.lag.ms: -1
    remote.log.delete.on.disable: true
    segment.jitter.ms: 1
    segment.ms: 1000
    unclean.leader.election.enable: true
`
	cs, err := ParseConfigFile([]byte(body), DefaultTopicConfig())
	if err != nil {
		t.Fatal(err)
	}
	if cs.Defaults.RetentionBytes != -1 {
		t.Errorf("R1.7: retention.bytes -2 is no limit, got %d", cs.Defaults.RetentionBytes)
	}
	tc := cs.For("tiered")
	if !tc.RemoteStorage || tc.LocalRetentionMs != 3600000 || tc.LocalRetentionBytes != -2 || tc.RemoteCopyDisable || !tc.Preallocate || tc.SegmentBytes != 16384 {
		t.Errorf("tiered: %+v", tc)
	}
	if !tc.Tiered("tiered") {
		t.Error("R1.7: offline, a topic with remote.storage.enable=true is tiered")
	}
	if e := cs.For("everything"); e.CleanupPolicy != (CleanupPolicy{}) || e.RetentionMs != DefaultTopicConfig().RetentionMs {
		t.Errorf("everything: %+v", e)
	}
}

type fakeFetcher struct {
	mu    sync.Mutex
	calls int
	fail  int // the first fail calls fail
	topic []string
}

func (f *fakeFetcher) FetchConfigs(_ context.Context, topics []string) (ConfigSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.topic = topics
	if f.calls <= f.fail {
		return ConfigSet{}, errors.New("broker unreachable")
	}
	c := DefaultTopicConfig()
	c.RetentionMs = int64(f.calls)
	return ConfigSet{Defaults: DefaultTopicConfig(), Topics: map[string]TopicConfig{"a": c}, Time: time.Now()}, nil
}

func TestConfigRefresherKeepsLastOnFailure(t *testing.T) {
	f := &fakeFetcher{fail: 2}
	initial := ConfigSet{Defaults: DefaultTopicConfig(), Topics: map[string]TopicConfig{"a": {RetentionMs: 42}}}
	logger, logs := testLogger(t)
	r, err := NewConfigRefresher(ConfigRefresherConfig{Interval: 40 * time.Millisecond}, logger, f, func() []string { return []string{"a"} }, initial)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for v := r.Current().For("a").RetentionMs; v < 4 || v == 42; v = r.Current().For("a").RetentionMs {
		if time.Now().After(deadline) {
			t.Fatalf("configs never refreshed: %+v", r.Current().For("a"))
		}
		if v := r.Current().For("a").RetentionMs; v != 42 && v < 3 {
			t.Fatalf("R6: a failed fetch replaced the configs: %d", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "topic configs refresh failed") || !strings.Contains(logs.String(), "recovered") {
		t.Errorf("logs:\n%s", logs)
	}
}
