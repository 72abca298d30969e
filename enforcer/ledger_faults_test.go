package enforcer

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Regression tests of issue 20's faults (spec R8.5-R8.8): each failed on
// the code before the ledger was made two-phase and verified.

// R8.5: a release that fails once is retried (issue 20, point 1). The
// claim stays in the record, releasing, the error stays up, and a later
// pass deletes the binding; only then does the claim leave the record.
func TestR8_5FailedReleaseIsRetried(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	f.failDeletes = 1
	pass := func() error { return tryPassAfter(t, e, clock, time.Second, calm()) }
	if err := pass(); err == nil {
		t.Fatal("no error from a failed release")
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("the fake did not fail the delete")
	}
	if rel := f.records.Agents[1].Releasing(); len(rel) == 0 {
		t.Fatalf("R8.5/the claim left the record before its binding was gone: %+v", f.records.Agents[1])
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "lift_failed"}); v != 1 {
		t.Errorf("R8.5/error{lift_failed} %v after a failed release", v)
	}
	for i := 0; i < 10 && len(f.acls) > 0; i++ {
		_ = pass()
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.5/a release that failed once is never retried: %v", f.acls)
	}
	for range 2 {
		if err := pass(); err != nil {
			t.Fatal(err)
		}
	}
	if f.records.Agents[1].Claims() {
		t.Errorf("R8.5/released claims still in the record: %+v", f.records.Agents[1])
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "lift_failed"}); v != 0 {
		t.Errorf("R8.5/error{lift_failed} %v once released", v)
	}
}

// R8.5: a quota release that fails once is retried, and the quota is
// never taken for an operator's (found by the simulation, seed 39 of
// call_before: ReleasingQuota read the releasing claim as none, so the
// next pass dropped the claim and the quota stayed, unclaimed, for good).
func TestR8_5FailedQuotaReleaseIsRetried(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}
	e, reg := newTestEnforcer(t, cfg, full(), f, clock)
	passAt(t, e, clock, full())
	if f.quota != 1024 {
		t.Fatalf("not protected: quota %d", f.quota)
	}
	f.failQuotaRemovals = 1
	pass := func() error { return tryPassAfter(t, e, clock, time.Second, calm()) }
	if err := pass(); err == nil {
		t.Fatal("no error from a failed quota release")
	}
	if f.quota != 1024 {
		t.Fatal("the fake did not fail the removal")
	}
	if q := f.records.Agents[1].ReleasingQuota(); q != 1024 {
		t.Fatalf("R8.5/the record's releasing quota reads %d, want 1024: %+v", q, f.records.Agents[1])
	}
	_ = pass()
	if q := f.records.Agents[1].ReleasingQuota(); f.quota == 1024 && q != 1024 {
		t.Fatalf("R8.5/the quota claim left the record while the quota is in place: %+v", f.records.Agents[1])
	}
	for i := 0; i < 10 && f.quota != 0; i++ {
		_ = pass()
	}
	if f.quota != 0 {
		t.Fatalf("R8.5/a quota release that failed once is never retried: quota %d", f.quota)
	}
	for range 2 {
		if err := pass(); err != nil {
			t.Fatal(err)
		}
	}
	if f.records.Agents[1].Claims() {
		t.Errorf("R8.5/released claims still in the record: %+v", f.records.Agents[1])
	}
	for _, reason := range []string{"lift_failed", "operator_quota"} {
		if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": reason}); v != 0 {
			t.Errorf("R8.5/error{%s} %v once released", reason, v)
		}
	}
}

// R8.5: an operator's lift drives releasing entries, and says (Remaining)
// what it could not remove; run again, it finishes the job.
func TestR8_5LiftDrivesReleasingEntries(t *testing.T) {
	f := newFakeAdmin(snap(0, 1))
	f.acls[denyAll("x")], f.acls[denyAll("y")] = true, true
	f.records = recs(agentRecord(2, releasingOwns(shapeDenyAll, "x"), owns(shapeDenyAll, "y")))
	f.failDeletes = 1
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Now: t0})
	if err == nil || len(res.Remaining) != 2 {
		t.Fatalf("R8.5/a lift that failed must say so: err %v remaining %v", err, res.Remaining)
	}
	res, err = ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Now: t0})
	if err != nil || len(res.Remaining) != 0 {
		t.Fatalf("R8.5/lift run again: err %v remaining %v", err, res.Remaining)
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.5/lift run again finds nothing to lift: %v left", f.acls)
	}
}

// R8.5: a peer drives the release of an expired agent whose lift was
// written but whose release failed.
func TestR8_5PeerRetriesAFailedPeerRelease(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, dead, clock, full())
	f.failDeletes = 1
	for range 40 {
		_ = tryPassAfter(t, peer, clock, time.Second, calm())
	}
	if _, ok := f.records.PendingLift(2); !ok {
		t.Fatal("no lift written")
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.5/a peer's failed release is never retried: %v", f.acls)
	}
}

// R8.6: an operator's binding identical to the one the guard wants is
// never adopted, so never deleted (issue 20, point 2); it counts as
// protection in place.
func TestR8_6OperatorBindingIsNeverAdopted(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.acls[denyAll("a")] = true // the operator froze topic a
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true}, full(), f, clock)
	passAt(t, e, clock, full())
	if !f.acls[denyAll("b")] {
		t.Fatal("b not protected")
	}
	if slices.Contains(f.records.Agents[1].ACLTopics(), "a") {
		t.Errorf("R8.6/the operator's binding on a is claimed: %v", f.records.Agents[1].ACLTopics())
	}
	for range 3 {
		passAfter(t, e, clock, time.Minute, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("R8.6/the operator's binding was deleted on calm")
	}
	if f.acls[denyAll("b")] {
		t.Fatal("the guard's own binding stayed")
	}
}

// R8.6: the quota records the value set, and the release removes exactly
// that value, even after producerByteRate changed (issue 20, point 4).
func TestR8_6QuotaReleaseRemovesTheValueSet(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}
	e, _ := newTestEnforcer(t, cfg, full(), f, clock)
	passAt(t, e, clock, full())
	if f.quota != 1024 {
		t.Fatalf("quota %d", f.quota)
	}
	// A rollout changes the rate; the agent restarts, still full.
	cfg.Protection.ProducerByteRate = 2048
	e, _ = newTestEnforcer(t, cfg, full(), f, clock)
	passAfter(t, e, clock, time.Minute, full())
	if q := f.records.Agents[1].Quota(); q != 1024 {
		t.Errorf("R8.6/the record claims %d, the value in place is 1024", q)
	}
	for range 3 {
		passAfter(t, e, clock, time.Minute, calm())
	}
	if f.quota != 0 {
		t.Fatalf("R8.6/the old quota is stranded: %d", f.quota)
	}
}

// R8.4: protection needs no offsets (issue 20, point 5): a leader that
// does not answer the offsets read holds deletions back, never
// protection, and the lease is renewed.
func TestR8_4UnreachableLeaderHoldsOnlyDeletions(t *testing.T) {
	O := agent.StateOpen
	full := func() *agent.Snapshot {
		return snap(950, 1000, part("a", 0, 0, 10, seg(0, 100, O), seg(5, 1, O)), part("b", 0, 0, 10, seg(0, 100, O), seg(5, 1, O)))
	}
	f := newFakeAdmin(full())
	f.offsetsErr = errors.New("dial tcp broker-2:9092: i/o timeout")
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), f, clock)
	for range 3 {
		_ = tryPassAfter(t, e, clock, time.Second, full())
	}
	if len(f.offsetCalls) != 0 {
		t.Fatalf("offsets read despite the fault")
	}
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("R8.4/one unreachable leader disabled protection: %v", f.acls)
	}
	if r := f.records.Agents[1]; r.Renewed.IsZero() {
		t.Fatalf("R8.1/lease not renewed: %+v", r)
	}
	for tp, lso := range f.lso {
		if lso != 0 {
			t.Fatalf("R6/deleted from %v without its offsets", tp)
		}
	}
}

// R8.8: a broker fenced for a restart (missing from the metadata) keeps
// its agent's protection while the disk is full, and the agent renews its
// lease so peers do not lift it (issue 20, point 6).
func TestR8_8FencedBrokerKeepsProtectionAndLease(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	e, _ := newTestEnforcer(t, cfg, full(), f, clock)
	passAt(t, e, clock, full())
	f.live = []int32{2, 3} // broker 1 restarts: fenced, for less than a lease
	for range 9 {
		passAfter(t, e, clock, time.Second, full())
	}
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.8/a restart lifted protection while the disk is full: %v", f.acls)
	}
	if r := f.records.Agents[1]; clock.t.Sub(r.Renewed) > 5*time.Second {
		t.Fatalf("R8.1/lease not renewed while fenced: renewed %v, now %v", r.Renewed, clock.t)
	}
}

// R8.7: a lost ledger is never "no records" (issue 20, point 3). With
// allow.everyone true the guard's own ALLOW bindings must not turn into
// an operator's: while the topic is lost nothing is claimed or released;
// once it is back (created again, empty) the agent writes its record from
// memory, and on calm releases every binding it set.
func TestR8_7LostLedgerIsNotNoRecords(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	set := len(f.acls)
	if set == 0 {
		t.Fatal("not protected")
	}
	pass := func(s *agent.Snapshot) error { return tryPassAfter(t, e, clock, 2*time.Second, s) }
	// The topic is deleted: every record with it.
	f.records, f.ledgerErr = ledger.NewRecords(), ErrLedgerMissing
	if err := pass(calm()); err == nil {
		t.Fatal("no error while the ledger is lost")
	}
	if len(f.acls) != set {
		t.Fatalf("R8.7/released on the word of a lost ledger: %v", f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 1 {
		t.Errorf("R8.7/ledger_lost %v", v)
	}
	// Created again, empty.
	f.ledgerErr = nil
	for range 4 {
		_ = pass(calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the guard's own bindings became an operator's after the ledger was lost: %v", f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 0 {
		t.Errorf("R8.7/ledger_lost %v once back", v)
	}
}

// R8.7: a record that does not decode is skipped and counted; its
// broker's claims are untouchable (no peer lifts them), and every other
// agent goes on (issue 20, point 3).
func TestR8_7UndecodableRecordIsSkippedAndUntouchable(t *testing.T) {
	rs := ledger.NewRecords()
	good, err := ledger.EncodeRecord(agentRecord(2, owns(shapeDenyAll, "a")))
	if err != nil {
		t.Fatal(err)
	}
	ledger.ApplyRecord(rs, []byte(ledger.RecordKey(2)), good)
	ledger.ApplyRecord(rs, []byte(ledger.RecordKey(2)), []byte(`{"v":99,"owned":"a newer format"}`))
	ledger.ApplyRecord(rs, []byte(ledger.RecordKey(3)), []byte("\x00garbage"))
	if rs.Undecodable[2] != 1 || rs.Undecodable[3] != 1 || len(rs.Agents[2].ACLTopics()) != 1 {
		t.Fatalf("R8.7/undecodable %v agents %v", rs.Undecodable, rs.Agents)
	}
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.acls[denyAll("a")] = true
	f.records = rs
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	e, reg := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 30 {
		passAfter(t, e, clock, time.Second, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("R8.7/a peer lifted the claims of a broker whose record does not decode")
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_ledger_undecodable_records", nil); v != 2 {
		t.Errorf("R8.7/undecodable_records %v, want 2", v)
	}
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Now: clock.t})
	if err != nil || !slices.Equal(res.Untouchable, []int32{2, 3}) || !f.acls[denyAll("a")] {
		t.Fatalf("R8.7/operator lift: %+v %v %v", res, err, f.acls)
	}
	// This agent protects as usual meanwhile.
	passAt(t, e, clock, full())
	if !f.acls[denyAll("b")] {
		t.Fatalf("R8.7/one undecodable record stopped every agent: %v", f.acls)
	}
	// A decodable record replaces it: the broker's claims are its own again.
	ledger.ApplyRecord(f.records, []byte(ledger.RecordKey(2)), good)
	if f.records.Undecodable[2] != 0 {
		t.Fatal("R8.7/a decodable record does not clear the mark")
	}
}

// The series of a log dir that left the config or the glob (a kubelet pod
// path after a reschedule) are removed: a stale write_protection_active
// 1 would keep an alert firing (issue 20, point 9).
func TestLogDirSeriesRemovedWhenTheDirLeaves(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	passAfter(t, e, clock, time.Second, full())
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", map[string]string{"log_dir": dir}); v != 1 {
		t.Fatalf("active %v", v)
	}
	moved := full()
	moved.LogDirs[0].Path = "/var/lib/kubelet/pods/new/volumes/data"
	passAfter(t, e, clock, time.Second, moved)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "log_dir" && l.GetValue() == dir && mf.GetName() != "kafka_disk_guard_log_dir_identity" {
					t.Errorf("series of the log dir that left: %s %v", mf.GetName(), m.GetLabel())
				}
			}
		}
	}
}

// R8.8: a second agent for the same broker (another install, left in
// observe mode) sees the first one's live lease and stands by: it lifts
// nothing, says so in a metric, and takes over once that lease expires
// (issue 20, point 8).
func TestR8_8SecondAgentForTheBrokerStandsBy(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	newAs := func(cfg Config, instance string) (*Enforcer, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg.BrokerID = new(int32(1))
		s := full()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e, reg
	}
	active, _ := newAs(cfg, "pod-a")
	observer, reg := newAs(Config{Interval: time.Second}, "pod-b")
	passAt(t, active, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	for range 20 {
		passAfter(t, active, clock, time.Second, full())
		passAt(t, observer, clock, full())
		if !f.acls[denyAll("a")] {
			t.Fatalf("R8.8/the second agent lifted the active agent's protection")
		}
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/standby %v", v)
	}
	// The active agent dies: the second takes over after the lease (in
	// observe mode it lifts what is now its own).
	for range 15 {
		passAfter(t, observer, clock, time.Second, full())
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/standby %v after the lease expired", v)
	}
	if len(f.acls) != 0 || f.records.Agents[1].Instance != "pod-b" {
		t.Fatalf("R8.8/no takeover: acls %v record %+v", f.acls, f.records.Agents[1])
	}
}

// R7.3 across restarts: the purge caps' windows are kept in the agent's
// record and restored at start, so a crash loop does not get a fresh
// budget each time (issue 20, point 7).
func TestR7_3PurgeCapsSurviveARestart(t *testing.T) {
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
	for range 5 {
		clock.tick(time.Second)
		clock.at(s)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 500 {
		t.Fatalf("unexpired bytes purged before the restart: %v, want 500 (the hour's cap)", got)
	}
	// The process restarts: a new monotonic clock, the same wall clock.
	clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
	e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	for range 5 {
		clock.tick(time.Second)
		clock.at(s)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/a restart reset the hour's cap: %v more unexpired bytes purged", got)
	}
	if v := gather(t, reg, "kafka_disk_guard_purged_unexpired_window_bytes", map[string]string{"log_dir": dir, "window": "24h"}); v != 500 {
		t.Errorf("R7.3/purged_unexpired_window_bytes{24h} %v after the restart, want 500", v)
	}
	// An hour later the hour's window has room again; the day's keeps count.
	clock.tick(time.Hour)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 200 {
		t.Fatalf("R7.3/an hour later: %v, want 200", got)
	}
}

// R4.4: observe mode reports a lift it would do once: the virtual
// record's releasing claims count as gone, not as in place forever.
func TestR4_4ObserveModeReportsAWouldBeLiftOnce(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Interval: time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	for range 4 {
		passAfter(t, e, clock, time.Second, calm())
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "unprotect", "result": "dry_run"}); v != 2 {
		t.Errorf("R4.4/would-be unprotect actions %v, want 2 (one per topic, once)", v)
	}
	if len(f.acls) != 0 || f.writes != 0 {
		t.Errorf("observe mode changed the cluster: %v, %d writes", f.acls, f.writes)
	}
}

// R8.1/R8.5: two agents give up a shared binding, each planning from a
// cache in which the other still holds it. Each goes through the release
// (the smaller record written, the topic read to its end), so the later
// one deletes it: no binding is left that no record claims.
func TestR8_5SharedBindingGivenUpFromStaleCaches(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second}
	a, _ := enforcerAs(t, 1, cfg, full(), f, clock)
	b, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	for range 3 {
		passAfter(t, a, clock, time.Second, full())
		passAt(t, b, clock, full())
	}
	if !f.acls[denyAll("a")] || len(f.records.Agents[1].ACLTopics()) == 0 || len(f.records.Agents[2].ACLTopics()) == 0 {
		t.Fatalf("not protected by both: %v %+v", f.acls, f.records.Agents)
	}
	// Calm at the same instant: neither reads the records before planning.
	passAfter(t, a, clock, 100*time.Millisecond, calm())
	passAt(t, b, clock, calm())
	for range 3 {
		passAfter(t, a, clock, time.Second, calm())
		passAt(t, b, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.1/a binding no record claims is left: %v, records %+v", f.acls, f.records.Agents)
	}
}

// R8.8: a broker missing from the metadata for a whole lease is gone
// (decommissioned), not restarting: its agent keeps no protection, as its
// peers lift it then (no flapping between the two).
func TestR8_8GoneBrokerKeepsNoProtection(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	e, _ := newTestEnforcer(t, cfg, full(), f, clock)
	passAt(t, e, clock, full())
	f.live = []int32{2, 3}
	for i := range 20 {
		passAfter(t, e, clock, time.Second, full())
		if i < 8 && !f.acls[denyAll("a")] {
			t.Fatalf("R8.8/lifted %ds into a restart", i+1)
		}
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.8/a broker gone for a lease keeps its protection: %v", f.acls)
	}
}

// R8.6: an operator's default quota at the wanted rate is protection in
// place: not claimed, no error, active, and still there after calm.
func TestR8_6OperatorQuotaAtTheWantedRateCountsAsInPlace(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.quota = 1024
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}, full(), f, clock)
	for range 2 {
		passAfter(t, e, clock, time.Minute, full())
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 1 {
		t.Errorf("R8.6/active %v with an operator's quota at the wanted rate", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "operator_quota"}); v != 0 {
		t.Errorf("R8.6/error{operator_quota} %v for a quota that protects", v)
	}
	if f.records.Agents[1].Quota() != 0 {
		t.Errorf("R8.6/the operator's quota is claimed: %+v", f.records.Agents[1])
	}
	for range 3 {
		passAfter(t, e, clock, time.Minute, calm())
	}
	if f.quota != 1024 {
		t.Fatalf("R8.6/the operator's quota was removed on calm: %d", f.quota)
	}
}

// jumpClock is a wall clock offset from a shared test clock (jumped),
// with a monotonic reading that follows the shared clock only.
type jumpClock struct {
	base   *clockAt
	start  time.Time
	offset time.Duration
}

func (c *jumpClock) Now() time.Time         { return c.base.t.Add(c.offset) }
func (c *jumpClock) Elapsed() time.Duration { return c.base.t.Sub(c.start) }

// R8.5: leases are timed on the monotonic clock (found by the
// simulation, seed 29 of clock_jump): a peer whose wall clock jumps
// forward by more than the lease does not take a lease it sees renewed
// for expired, and lifts nothing; a release backoff set before its wall
// clock jumps back is not stretched by the jump.
func TestR8_5WallClockJumpDoesNotExpireALiveLease(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 30 * time.Second}}
	ownClock := &jumpClock{base: clock, start: t0}
	owner, _ := enforcerAs(t, 2, cfg, full(), f, ownClock)
	peerClock := &jumpClock{base: clock, start: t0}
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, peerClock)
	step := func() {
		clock.t = clock.t.Add(time.Second)
		s := full()
		s.Time = ownClock.Now()
		owner.src.(*staticSource).snap = s
		if err := owner.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		c := calm()
		c.Time = peerClock.Now()
		peer.src.(*staticSource).snap = c
		_ = peer.Reconcile(t.Context())
	}
	for range 5 {
		step()
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	peerClock.offset = 5 * time.Minute
	for range 20 {
		step()
	}
	if _, ok := f.records.PendingLift(2); ok || f.records.Lifts[2].ID != "" {
		t.Fatalf("R8.5/a peer whose wall clock jumped lifted a live lease: %+v", f.records.Lifts[2])
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("R8.5/a peer whose wall clock jumped deleted a live agent's protection")
	}

	// The owner's release fails while its wall clock is 5 minutes ahead;
	// the clock comes back: the retry waits the backoff, not 5 minutes.
	ownClock.offset = 5 * time.Minute
	f.failDeletes = 1
	pass := func() {
		clock.t = clock.t.Add(time.Second)
		s := calm()
		s.Time = ownClock.Now()
		owner.src.(*staticSource).snap = s
		_ = owner.Reconcile(t.Context())
	}
	pass()
	if !f.acls[denyAll("a")] {
		t.Fatal("the fake did not fail the delete")
	}
	ownClock.offset = 0
	for range 10 {
		pass()
	}
	if f.acls[denyAll("a")] {
		t.Fatal("R8.5/the release backoff was stretched by the wall clock's jump back")
	}
}

// passAfter moves the clock on by d and runs a pass on s; a failed pass
// fails the test.
func passAfter(t *testing.T, e *Enforcer, clock *clockAt, d time.Duration, s *agent.Snapshot) {
	t.Helper()
	clock.t = clock.t.Add(d)
	passAt(t, e, clock, s)
}

// tryPassAfter moves the clock on by d and runs a pass on s, returning
// its error (the tests make passes fail).
func tryPassAfter(t *testing.T, e *Enforcer, clock *clockAt, d time.Duration, s *agent.Snapshot) error {
	clock.t = clock.t.Add(d)
	s.Time = clock.t
	src := e.src.(*staticSource)
	src.mu.Lock()
	src.snap = s
	src.mu.Unlock()
	return e.Reconcile(t.Context())
}

// R8.3: a topic whose shape changes keeps its old bindings until the new
// ones are in place. With allow.everyone.if.no.acl.found, an operator's
// binding on a protected topic makes its shape DENY WRITE User:*; the
// operator deleting it makes it the absence shape again (ALLOWs for
// User:*, no DENY). If creating the ALLOWs fails, the DENY must stay:
// released in the same pass, it left the topic without ACLs, writable by
// everyone until a later pass (found by the simulation, operator_acls).
// Once the new shape is in place, the old one goes.
func TestR8_3ShapeChangeKeepsTheOldShapeUntilTheNewIsInPlace(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
	alice := ledger.LiteralACL("a", "User:alice", OpRead, PermAllow)
	f.acls[alice] = true // the operator's: topic a gets DENY WRITE User:*
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	readA := ledger.LiteralACL("a", AnyPrincipal, OpRead, PermAllow)
	if !f.acls[denyAll("a")] || f.acls[readA] {
		t.Fatalf("a not protected by DENY WRITE User:*: %v", f.acls)
	}
	delete(f.acls, alice) // the operator's binding goes: a has the absence shape again
	f.failCreates = 1
	_ = tryPassAfter(t, e, clock, time.Second, full())
	if !f.acls[denyAll("a")] && !f.acls[readA] {
		t.Fatalf("R8.3/the DENY on a released before the absence shape was in place: a has no ACL, everyone writes: %v", f.acls)
	}
	for range 3 {
		passAfter(t, e, clock, time.Second, full())
	}
	if f.acls[denyAll("a")] || !f.acls[readA] {
		t.Errorf("R8.3/a's shape not changed once the creation succeeds: %v", f.acls)
	}
}
