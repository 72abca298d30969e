package agent

import (
	"slices"
	"testing"
	"time"
)

// TestHolds: the partitions whose retention Kafka does not run (spec R1.2):
// a partition being moved to another log dir (a -future sibling, cleaner
// on), a compacted topic with the cleaner off, a log dir the broker has
// offline. Nothing in them is eligible, and the partition says why.
func TestHolds(t *testing.T) {
	old := func(topic string, kind PartitionKind) Partition {
		p := mkPartition(0, 300, 300, seg{0, 100, 200 * time.Hour}, seg{100, 100, 200 * time.Hour}, seg{200, 100, 0})
		p.Topic, p.Kind = topic, kind
		p.Dir = topic + "-0"
		if kind == KindFuture {
			p.Dir = topic + "-0.abc-future"
		}
		return p
	}
	del := cfg(hour, -1, "delete")
	cd := cfg(hour, -1, "compact,delete")
	cases := []struct {
		name     string
		defaults TopicConfig
		topics   map[string]TopicConfig
		offline  map[string]string
		dirs     [][]*Partition
		want     map[string]Reason // "dir/partition dir" -> held reason
		eligible map[string]bool   // ... -> any segment eligible
	}{
		{
			name: "R1.2/moving: live and -future logs held while the cleaner runs", defaults: del,
			dirs:     [][]*Partition{{new(old("a", KindLive)), new(old("b", KindLive))}, {new(old("a", KindFuture))}},
			want:     map[string]Reason{"0/a-0": HeldMoving, "0/b-0": ReasonNone, "1/a-0.abc-future": HeldMoving},
			eligible: map[string]bool{"0/a-0": false, "0/b-0": true, "1/a-0.abc-future": false},
		},
		{
			name: "R1.2/moving: no pause with the cleaner disabled", defaults: func() TopicConfig { c := del; c.CleanerDisabled = true; return c }(),
			dirs:     [][]*Partition{{new(old("a", KindLive))}, {new(old("a", KindFuture))}},
			want:     map[string]Reason{"0/a-0": ReasonNone, "1/a-0.abc-future": ReasonNone},
			eligible: map[string]bool{"0/a-0": true, "1/a-0.abc-future": true},
		},
		{
			name: "R1.2/cleaner_disabled: compact,delete without the cleaner", defaults: func() TopicConfig { c := del; c.CleanerDisabled = true; return c }(),
			topics:   map[string]TopicConfig{"c": func() TopicConfig { c := cd; c.CleanerDisabled = true; return c }()},
			dirs:     [][]*Partition{{new(old("c", KindLive)), new(old("d", KindLive))}},
			want:     map[string]Reason{"0/c-0": HeldCleanerDisabled, "0/d-0": ReasonNone},
			eligible: map[string]bool{"0/c-0": false, "0/d-0": true},
		},
		{
			name: "R1.2/cleaner_disabled: compact,delete with the cleaner is not held", defaults: del,
			topics:   map[string]TopicConfig{"c": cd},
			dirs:     [][]*Partition{{new(old("c", KindLive))}},
			want:     map[string]Reason{"0/c-0": ReasonNone},
			eligible: map[string]bool{"0/c-0": true},
		},
		{
			name: "R1.2/log_dir_offline: every partition of the dir", defaults: del,
			offline: map[string]string{"/d1": "KAFKA_STORAGE_ERROR"},
			dirs:    [][]*Partition{{new(old("a", KindLive))}, {new(old("b", KindLive)), new(old("a", KindFuture))}},
			// The -future log is in the offline dir: the live one is not moving.
			want:     map[string]Reason{"0/a-0": ReasonNone, "1/b-0": HeldLogDirOffline, "1/a-0.abc-future": HeldLogDirOffline},
			eligible: map[string]bool{"0/a-0": true, "1/b-0": false, "1/a-0.abc-future": false},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dirs []LogDir
			for i, ps := range tc.dirs {
				dirs = append(dirs, LogDir{Path: []string{"/d0", "/d1"}[i], Partitions: ps})
			}
			cs := ConfigSet{Defaults: tc.defaults, Topics: tc.topics, OfflineLogDirs: tc.offline}
			snap := BuildSnapshot(testNow, dirs, cs, Health{})
			seen := 0
			for i, d := range snap.LogDirs {
				for _, p := range d.Partitions {
					key := []string{"0", "1"}[i] + "/" + p.Dir
					want, ok := tc.want[key]
					if !ok {
						continue
					}
					seen++
					if p.Held != want {
						t.Errorf("%s: held %q, want %q", key, p.Held, want)
					}
					el := slices.ContainsFunc(p.Segments, func(s Segment) bool { return s.State == StateEligible })
					if el != tc.eligible[key] {
						t.Errorf("%s: eligible %v, want %v (%v)", key, el, tc.eligible[key], render(*p))
					}
					if p.Held != ReasonNone && slices.ContainsFunc(p.Segments, func(s Segment) bool { return s.ExpiredBytes > 0 }) {
						t.Errorf("%s: held, but expired bytes %v", key, p.Segments)
					}
				}
			}
			if seen != len(tc.want) {
				t.Errorf("saw %d of %d partitions", seen, len(tc.want))
			}
			// The input is not modified.
			if dirs[0].Partitions[0].Held != ReasonNone || dirs[0].Partitions[0].Segments[0].State != 0 {
				t.Errorf("input partition modified: %+v", dirs[0].Partitions[0])
			}
		})
	}
}

// The broker's retention check interval comes with its defaults (the
// enforcer's pending bytes, spec R3.5); offline it is 0 (Kafka's default
// assumed).
func TestBrokerDefaultsRetentionCheckInterval(t *testing.T) {
	c, err := BrokerDefaults(map[string]string{"log.retention.check.interval.ms": "1000"})
	if err != nil || c.RetentionCheckIntervalMs != 1000 {
		t.Fatalf("%d %v", c.RetentionCheckIntervalMs, err)
	}
	if _, err := BrokerDefaults(map[string]string{"log.retention.check.interval.ms": "x"}); err == nil {
		t.Fatal("a bad interval accepted")
	}
	if DefaultTopicConfig().RetentionCheckIntervalMs != 0 || DefaultTopicConfig().RemoteCopyLagBytes != -1 {
		t.Fatal("defaults")
	}
}

// TestHoldsLeaveSharedSlicesAlone: the live agent publishes the same
// Partitions slice in successive snapshots while nothing in a dir changes.
// A hold goes into a copy: the shared slice (and so every snapshot already
// published) is unchanged, and once the -future log is gone the next
// publish of the same shared slice carries no hold (spec R1.2).
func TestHoldsLeaveSharedSlicesAlone(t *testing.T) {
	live := mkPartition(0, 300, 300, seg{0, 100, 200 * time.Hour}, seg{100, 100, 200 * time.Hour}, seg{200, 100, 0})
	live.Topic, live.Dir, live.Kind = "a", "a-0", KindLive
	future := live
	future.Dir, future.Kind = "a-0.abc-future", KindFuture
	cs := ConfigSet{Defaults: cfg(hour, -1, "delete")}
	shared := []*Partition{new(Classify(live, cs.Defaults, testNow))}

	during := []LogDir{{Path: "/d0", Partitions: shared}, {Path: "/d1", Partitions: []*Partition{&future}}}
	cs.Holds(during, testNow)
	if during[0].Partitions[0].Held != HeldMoving {
		t.Fatalf("moving partition not held: %q", during[0].Partitions[0].Held)
	}
	if during[0].Partitions[0] == shared[0] || shared[0].Held != ReasonNone {
		t.Fatal("the hold was written into the shared slice")
	}

	after := []LogDir{{Path: "/d0", Partitions: shared}}
	cs.Holds(after, testNow)
	if after[0].Partitions[0] != shared[0] || after[0].Partitions[0].Held != ReasonNone {
		t.Fatalf("after the move: held %q, shared %v", after[0].Partitions[0].Held, after[0].Partitions[0] == shared[0])
	}
	if !slices.ContainsFunc(after[0].Partitions[0].Segments, func(s Segment) bool { return s.State == StateEligible }) {
		t.Error("after the move nothing is eligible")
	}
}
