package enforcer

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// monoClock is a wall clock that can jump and a monotonic clock that
// cannot.
type monoClock struct {
	wall time.Time
	mono time.Duration
}

func (c *monoClock) Now() time.Time         { return c.wall }
func (c *monoClock) Elapsed() time.Duration { return c.mono }
func (c *monoClock) tick(d time.Duration)   { c.wall, c.mono = c.wall.Add(d), c.mono+d }
func (c *monoClock) jump(d time.Duration)   { c.wall = c.wall.Add(d) }
func (c *monoClock) at(s *agent.Snapshot)   { s.Time = c.wall; stampConfigs(s, c.wall) }
func stampConfigs(s *agent.Snapshot, t time.Time) {
	for k := range s.ConfigFetched {
		s.ConfigFetched[k] = t
	}
}

// evidenceEnforcer is an enforcer over ev and clock, without a configured
// broker id.
func evidenceEnforcer(t *testing.T, cfg Config, s *agent.Snapshot, admin Admin, ev Evidence, clock Clock) (*Enforcer, *prometheus.Registry, *staticSource) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if cfg.Purge == (PurgeConfig{}) {
		cfg.Purge = lenientPurge
	}
	src := &staticSource{snap: s, ch: make(chan struct{}, 1)}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src, Admin: admin, Clock: clock, Evidence: ev})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg, src
}

func (s *staticSource) set(snap *agent.Snapshot) {
	s.mu.Lock()
	s.snap = snap
	s.mu.Unlock()
}

// R7.1 through Reconcile: the guarded node comes from the identity check
// (not configured, not the first log dir's), keys the ownership record and
// is what BrokerID reports; a cluster that names another cluster id, or
// evidence that cannot be read, holds everything back with the reason in
// the metrics, and the agent acts again once the evidence is back.
func TestR7_1IdentityThroughReconcile(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	ev := newFakeEvidence(s)
	ev.down = true
	clock := &clockAt{t0}
	e, reg, _ := evidenceEnforcer(t, Config{Enabled: true}, s, f, ev, clock)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.acls) != 0 || f.lso[TopicPartition{"a", 0}] != 0 {
		t.Fatalf("acted without evidence: acls %v lso %v", f.acls, f.lso)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "identity_unconfirmed"}); v != 1 {
		t.Errorf("blocked{identity_unconfirmed} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": dir, "reason": "not_confirmed"}); v != 1 {
		t.Errorf("log_dir_identity{not_confirmed} %v", v)
	}
	if e.BrokerID() != -1 {
		t.Errorf("broker id %d before the identity check", e.BrokerID())
	}

	// The evidence comes back: read again within an Interval.
	ev.mu.Lock()
	ev.down = false
	ev.mu.Unlock()
	clock.t = clock.t.Add(DefaultInterval)
	s.Time, s.ConfigFetched["a"], s.ConfigFetched["b"] = clock.t, clock.t, clock.t
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.BrokerID() != 1 || f.lso[TopicPartition{"a", 0}] != 20 || f.records.Agents[1].BrokerID != 1 || len(f.acls) == 0 {
		t.Fatalf("after the evidence: broker %d lso %v records %v acls %d", e.BrokerID(), f.lso, f.records.Agents, len(f.acls))
	}
	if v := gather(t, reg, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": dir, "reason": "confirmed"}); v != 1 {
		t.Errorf("log_dir_identity{confirmed} %v", v)
	}
	reads := ev.reads
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ev.reads != reads {
		t.Errorf("identity read again within its interval")
	}

	// A snapshot whose log dir names another cluster: nothing more, and
	// protection (on, this agent's) is kept, not lifted.
	other := fullSnapshot()
	other.LogDirs[0].ClusterID = "dr-cluster"
	other.Time = clock.t
	stampConfigs(other, clock.t)
	e.src.(*staticSource).set(other)
	lso := f.lso[TopicPartition{"a", 0}]
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.lso[TopicPartition{"a", 0}] != lso || len(f.acls) == 0 {
		t.Errorf("another cluster's log dir: lso %v acls %v", f.lso, f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": dir, "reason": "cluster_mismatch"}); v != 1 {
		t.Errorf("log_dir_identity{cluster_mismatch} %v", v)
	}
}

// Rights through Reconcile: a principal without the rights protection
// needs gets no purge of unexpired data; the metric counts the gaps per
// feature; observe mode reports the same.
func TestRightsThroughReconcile(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	ev := newFakeEvidence(s)
	ev.report = rights.Report{Features: []rights.Feature{rights.Observe, rights.DeleteRecords, rights.ProtectACL},
		Gaps: []rights.Gap{{Need: rights.Need{Feature: rights.ProtectACL, Scope: rights.ScopeCluster, Operation: rights.Alter}}}}
	e, reg, _ := evidenceEnforcer(t, Config{Enabled: true}, s, f, ev, &clockAt{t0})
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.lso[TopicPartition{"a", 0}] != 0 {
		t.Errorf("purged without the rights to protect: %v", f.lso)
	}
	if v := gather(t, reg, "kafka_disk_guard_missing_rights", map[string]string{"feature": "protect_acl"}); v != 1 {
		t.Errorf("missing_rights{protect_acl} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_missing_rights", map[string]string{"feature": "delete_records"}); v != 0 {
		t.Errorf("missing_rights{delete_records} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "protection_unavailable"}); v != 1 {
		t.Errorf("blocked{protection_unavailable} %v", v)
	}
	if got := e.features; !slices.Equal(got, []rights.Feature{rights.Observe, rights.DeleteRecords, rights.ProtectACL, rights.Tiered, rights.Cordon, rights.Move}) {
		t.Errorf("features checked %v", got)
	}
}

// R7.5 through Reconcile: a forward jump of the wall clock against the
// monotonic clock holds deletions by retention time for ClockJumpHold,
// with the reason and the jump in the metrics; a test clock without a
// monotonic reading never jumps.
func TestR7_5ClockJumpThroughReconcile(t *testing.T) {
	E, O := agent.StateEligible, agent.StateOpen
	clock := &monoClock{wall: t0}
	mk := func() *agent.Snapshot {
		s := snap(800, 1000, part("a", 0, 0, 30, seg(0, 1, E), seg(10, 2, E), seg(20, 3, O)))
		clock.at(s)
		return s
	}
	s := mk()
	f := newFakeAdmin(s)
	e, reg, src := evidenceEnforcer(t, Config{Enabled: true, BrokerID: new(int32(1)), Evidence: EvidenceConfig{ClockJumpHold: time.Minute}},
		s, f, newFakeEvidence(s), clock)
	pass := func() {
		t.Helper()
		src.set(mk())
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	// The first segment alone is enough (51 bytes): undo it to see the next pass.
	if f.lso[TopicPartition{"a", 0}] != 10 {
		t.Fatalf("no deletion before the jump: %v", f.lso)
	}
	f.lso[TopicPartition{"a", 0}] = 0
	delete(e.virtualLSO, TopicPartition{"a", 0})
	clock.tick(10 * time.Second)
	clock.jump(2 * time.Hour)
	pass()
	if f.lso[TopicPartition{"a", 0}] != 0 {
		t.Fatalf("R7.5/deleted by retention time right after a jump: %v", f.lso)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "clock_jump"}); v != 1 {
		t.Errorf("blocked{clock_jump} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_clock_forward_jump_seconds", nil); v != 7200 {
		t.Errorf("clock_forward_jump_seconds %v", v)
	}
	clock.tick(30 * time.Second)
	pass()
	if f.lso[TopicPartition{"a", 0}] != 0 {
		t.Fatalf("R7.5/deleted within the hold: %v", f.lso)
	}
	clock.tick(31 * time.Second)
	pass()
	if f.lso[TopicPartition{"a", 0}] != 10 {
		t.Fatalf("R7.5/not deleted after the hold: %v", f.lso)
	}
	if v := gather(t, reg, "kafka_disk_guard_clock_forward_jump_seconds", nil); v != 0 {
		t.Errorf("clock_forward_jump_seconds %v after the hold", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_clock_forward_jumps_total", nil); v != 1 {
		t.Errorf("clock_forward_jumps_total %v", v)
	}

	// A clock without a monotonic reading never jumps.
	plain := &clockAt{t0}
	e2, _, _ := evidenceEnforcer(t, Config{Enabled: true, BrokerID: new(int32(1))}, s, newFakeAdmin(s), newFakeEvidence(s), plain)
	o := Observed{Now: t0}
	e2.readClock(&o)
	plain.t = t0.Add(48 * time.Hour)
	o = Observed{Now: plain.t}
	if e2.readClock(&o); o.ClockJump != 0 {
		t.Errorf("a plain test clock jumped: %v", o.ClockJump)
	}
}

// R7.3 caps through Reconcile: the unexpired bytes purged are remembered
// on the monotonic clock; the hour's cap, spent, stops purging until an
// hour has passed, whatever the wall clock does.
func TestR7_3CapsThroughReconcile(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	clock := &monoClock{wall: t0}
	var segs []agent.Segment
	for i := range 30 {
		segs = append(segs, sized(int64(i)*10, i, C, 100))
	}
	segs = append(segs, sized(300, 30, O, 100))
	s := snap(9500, 10000, part("a", 0, 0, 310, segs...))
	clock.at(s)
	f := newFakeAdmin(s)
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Purge: PurgeConfig{MaxPercentPerPass: 2, MaxPercentPerHour: 5, MaxPercentPerDay: 10, OtherBytesPercent: 100}}
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	unexpired := func() float64 { return gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) }
	for range 5 {
		clock.tick(time.Second)
		clock.at(s)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// 200 per pass, 500 per hour: 200, 200, 100 (the segment that reaches
	// the cap is the last), then nothing.
	if got := unexpired(); got != 500 {
		t.Fatalf("R7.3/unexpired bytes purged in 5 passes: %v, want 500", got)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("blocked{purge_cap} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_purged_unexpired_window_bytes", map[string]string{"log_dir": dir, "window": "1h"}); v != 500 {
		t.Errorf("purged_unexpired_window_bytes{1h} %v", v)
	}
	clock.jump(2 * time.Hour) // the wall clock does not free the window
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := unexpired(); got != 500 {
		t.Fatalf("R7.3/a wall clock jump reopened the window: %v", got)
	}
	clock.tick(time.Hour)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := unexpired(); got != 700 {
		t.Fatalf("R7.3/an hour later: %v, want 700", got)
	}
}

// R7.3 feedback through Reconcile: deleted segments gone from the log dir
// while the filesystem's used bytes stay (files held open) hold purging
// back as purge_ineffective; the hold lifts once the space comes back.
func TestR7_3PurgeFeedback(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	const mib = 1 << 20
	clock := &monoClock{wall: t0}
	fsOf := func(used uint64) agent.Filesystem {
		return agent.Filesystem{Known: true, Device: 1, TotalBytes: 100 * mib, UsedBytes: used}
	}
	mk := func(first int, used uint64) *agent.Snapshot {
		var segs []agent.Segment
		for i := first; i < 10; i++ {
			segs = append(segs, sized(int64(i)*10, i, C, 8*mib))
		}
		segs = append(segs, sized(100, 10, O, mib))
		s := snap(used, 100*mib, part("a", 0, int64(first)*10, 110, segs...))
		s.LogDirs[0].Usage.Basis = agent.CapacityFilesystem
		s.LogDirs[0].Filesystem = fsOf(used)
		clock.at(s)
		return s
	}
	s := mk(0, 92*mib) // 81 MiB live, 11 MiB other: the protect band, purge to 85%
	f := newFakeAdmin(s)
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Purge: PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100, OtherBytesPercent: 50}}
	e, reg, src := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	pass := func(s *agent.Snapshot) {
		t.Helper()
		src.set(s)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	pass(s)
	gone := int(f.lso[TopicPartition{"a", 0}] / 10)
	if gone == 0 {
		t.Fatal("no purge")
	}
	// The broker removed the segments; the filesystem's used bytes did not
	// fall (a process holds them open). Watched for 5 s, then held.
	for range 7 {
		clock.tick(time.Second)
		pass(mk(gone, 92*mib))
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_ineffective"}); v != 1 {
		t.Fatalf("blocked{purge_ineffective} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_purge_checks_total", map[string]string{"result": "ineffective"}); v < 1 {
		t.Errorf("purge_checks_total{ineffective} %v", v)
	}
	// While held, nothing more is purged (during the 5 s watch, usage
	// still high, the next segment went too).
	held := f.lso[TopicPartition{"a", 0}]
	gone = int(held / 10)
	for range 3 {
		clock.tick(time.Second)
		pass(mk(gone, 92*mib))
	}
	if f.lso[TopicPartition{"a", 0}] != held {
		t.Errorf("purged again while ineffective: %d -> %d", held, f.lso[TopicPartition{"a", 0}])
	}
	// The space comes back (the files were closed): after 5 s the hold
	// lifts.
	freed := uint64(92*mib - gone*8*mib)
	for range 7 {
		clock.tick(time.Second)
		pass(mk(gone, freed))
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_ineffective"}); v != 0 {
		t.Errorf("blocked{purge_ineffective} %v after the space came back", v)
	}

	// Deletions whose bytes leave the filesystem are effective, and an
	// effective one lifts a hold of the log dir (usage behaves again).
	s2 := mk(0, 92*mib)
	f2 := newFakeAdmin(s2)
	e2, reg2, src2 := evidenceEnforcer(t, cfg, s2, f2, newFakeEvidence(s2), clock)
	src2.set(s2)
	if err := e2.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	e2.ev.ineffective = map[string]ineffective{dir: {baseline: 0, bytes: 1}} // an earlier verdict
	gone = int(f2.lso[TopicPartition{"a", 0}] / 10)
	for range 7 {
		clock.tick(time.Second)
		src2.set(mk(gone, uint64(92*mib-gone*8*mib)))
		if err := e2.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if v := gather(t, reg2, "kafka_disk_guard_purge_checks_total", map[string]string{"result": "effective"}); v != 1 {
		t.Errorf("purge_checks_total{effective} %v", v)
	}
	if v := gather(t, reg2, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_ineffective"}); v != 0 || len(e2.ev.ineffective) != 0 {
		t.Errorf("blocked{purge_ineffective} %v (holds %v) after effective deletions", v, e2.ev.ineffective)
	}
}
