package enforcer

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// passAt publishes s at the clock's time and runs one pass.
func passAt(t *testing.T, e *Enforcer, clock *clockAt, s *agent.Snapshot) {
	t.Helper()
	s.Time = clock.t
	src := e.src.(*staticSource)
	src.mu.Lock()
	src.snap = s
	src.mu.Unlock()
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// What a pass reads of the protection records (spec R8.1, R8.4): the
// first pass reads them, then every interval (the cluster-wide view and
// the other agents' leases); switching protection on plans on the cached
// records (an agent without a live lease reads them once before its
// record's first write, within protection.recordTimeout: lease fencing,
// TestR8_8InstanceWithoutLeaseReadsBeforeItsFirstWrite); lifting reads
// them again after writing the smaller record, so it never removes what
// another agent claims meanwhile.
func TestReconcileRecordReads(t *testing.T) {
	O := agent.StateOpen
	parts := func() []agent.Partition {
		return []agent.Partition{part("a", 0, 0, 10, seg(0, 1, O)), part("b", 0, 0, 10, seg(0, 1, O))}
	}
	calm := func() *agent.Snapshot { return snap(100, 1000, parts()...) }
	full := func() *agent.Snapshot { return snap(950, 1000, parts()...) }
	clock := &clockAt{t0}
	f := newFakeAdmin(calm())
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: 10 * time.Second}, calm(), f, clock)
	step := func(d time.Duration, s *agent.Snapshot, wantLoads int, what string) {
		t.Helper()
		clock.t = clock.t.Add(d)
		passAt(t, e, clock, s)
		if f.loads != wantLoads {
			t.Fatalf("%s: %d record reads, want %d", what, f.loads, wantLoads)
		}
	}
	step(0, calm(), 1, "first pass reads the records")
	step(5*time.Second, calm(), 1, "read less than an interval ago")
	step(20*time.Second, calm(), 2, "R8.1/an interval since the last read: read (other agents' leases)")
	step(20*time.Second, full(), 3, "R8.4/switching protection on uses the cached records (and, without a lease, reads before its first write)")
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("not protected: %v", f.acls)
	}
	step(time.Second, full(), 4, "protected: the cached records are an interval old")
	step(time.Second, full(), 4, "protected: read less than an interval ago (the lease live)")
	step(10*time.Second, full(), 5, "protected: an interval since the last read")

	// Meanwhile another agent protected topic a too and claims its DENY.
	f.mu.Lock()
	f.records.Agents[2] = Record{BrokerID: 2, LogDirs: []string{"/other"}, Renewed: clock.t, LeaseMs: 60000,
		Owned: []Owned{{Kind: OwnedACL, Shape: &Shape{Deny: []string{AnyPrincipal}}, Topics: []string{"a"}}}}
	f.mu.Unlock()
	step(time.Second, calm(), 6, "R8.1/lifting reads the records again after writing the smaller one")
	if !f.acls[denyAll("a")] {
		t.Error("R8.1/lifted a DENY another agent claims")
	}
	if f.acls[denyAll("b")] {
		t.Error("R3.7/b still protected")
	}
	if own := f.records.Agents[1]; len(own.Held()) > 0 || len(own.LogDirs) > 0 {
		t.Errorf("R8.1/own record after lifting: %+v", own)
	}
}

// Offsets are read only for the partitions of log dirs that free space
// this pass, and only those of topics the guard may delete from: never a
// compacted or a tiered one (R7.4: DeleteRecords would delete its remote
// copy), which therefore keeps its log start offset.
func TestReconcileReadsOffsetsOnlyWhereFreeing(t *testing.T) {
	E, O := agent.StateEligible, agent.StateOpen
	s := snap(800, 1000, part("a", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)), part("compacted", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("single", 0, 0, 20, seg(0, 1, O)), part("tiered", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)))
	calm := agent.LogDir{Path: "/calm", BrokerID: 1, Partitions: []*agent.Partition{new(part("b", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)))},
		Usage: agent.Usage{CapacityBytes: 1000, UsedBytes: 100, AvailableBytes: 900, Basis: agent.CapacityConfigured}}
	s.LogDirs = append(s.LogDirs, calm)
	clock := &clockAt{t0}
	f := newFakeAdmin(s)
	e, _ := newTestEnforcer(t, Config{Enabled: true}, s, f, clock)
	passAt(t, e, clock, s)
	want := [][]TopicPartition{{{"a", 0}}}
	if fmt.Sprint(f.offsetCalls) != fmt.Sprint(want) {
		t.Fatalf("offsets read for %v, want %v", f.offsetCalls, want)
	}
	if f.lso[TopicPartition{"a", 0}] != 10 || f.lso[TopicPartition{"b", 0}] != 0 || f.lso[TopicPartition{"tiered", 0}] != 0 {
		t.Fatalf("R3.1/log start offsets %v", f.lso)
	}
}

// purge_fraction takes its share once per partition per interval (R3.2).
func TestReconcilePurgeFractionOncePerInterval(t *testing.T) {
	mk := func() *agent.Snapshot { return snap(870_000, 1_000_000, part("a", 0, 0, 100, segRun(20, 5)...)) }
	clock := &clockAt{t0}
	f := newFakeAdmin(mk())
	e, reg := newTestEnforcer(t, Config{Enabled: true, Profile: ProfileLocal, Interval: 10 * time.Second}, mk(), f, clock)
	tp := TopicPartition{"a", 0}
	for _, c := range []struct {
		after time.Duration
		lso   int64
	}{
		{0, 10},                // 10% of 100 offsets: two 5-offset segments
		{time.Second, 10},      // same interval: no second share
		{10 * time.Second, 15}, // next interval: 10% of the 90 left, one segment fits
	} {
		clock.t = clock.t.Add(c.after)
		passAt(t, e, clock, mk())
		if f.lso[tp] != c.lso {
			t.Fatalf("R3.2/after %s: log start offset %d, want %d", c.after, f.lso[tp], c.lso)
		}
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "purge_fraction", "result": "ok"}); v != 2 {
		t.Errorf("purge_fraction actions %v, want 2", v)
	}
}

// The daily window counts as run only when no log dir that would run it
// was held back; a held-back window runs at the next pass that may.
func TestReconcileScheduleBookkeeping(t *testing.T) {
	E, O := agent.StateEligible, agent.StateOpen
	clock := &clockAt{t0}
	mk := func(scanErr bool) *agent.Snapshot {
		s := snap(100, 1000, part("a", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)))
		s.ConfigFetched["a"] = clock.t // configs as fresh as the pass (R7.2)
		if scanErr {
			s.LogDirs[0].Err = fmt.Errorf("permission denied")
		}
		return s
	}
	f := newFakeAdmin(mk(false))
	e, reg := newTestEnforcer(t, Config{Enabled: true}, mk(false), f, clock)
	clock.t = t0.Add(17 * time.Hour) // 05:00 the next day: the 04:00 window has come
	passAt(t, e, clock, mk(true))
	if !e.lastScheduled.Equal(t0) || f.lso[TopicPartition{"a", 0}] != 0 {
		t.Fatalf("R6/held-back window counted as run: last %s, lso %v", e.lastScheduled, f.lso)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "scan_errors"}); v != 1 {
		t.Errorf("blocked{scan_errors} %v", v)
	}
	clock.t = clock.t.Add(time.Minute)
	passAt(t, e, clock, mk(false))
	if !e.lastScheduled.Equal(clock.t) || f.lso[TopicPartition{"a", 0}] != 10 {
		t.Fatalf("R3.1/window not run: last %s, lso %v", e.lastScheduled, f.lso)
	}
	clock.t = clock.t.Add(time.Hour)
	before := len(f.offsetCalls)
	passAt(t, e, clock, mk(false))
	if len(f.offsetCalls) != before {
		t.Errorf("R3.1/the window ran twice the same day")
	}
}
