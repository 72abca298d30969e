package enforcer

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R8.8: a second agent for the same broker left in observe mode, with the
// same instance name as the enforcing one (two sidecars in one pod, host
// networking), lifts nothing while the enforcing agent renews its lease
// (found by the simulation, class duplicate_agent, seed 1: it lifted the
// quota every pass), and lifts once no process has renewed it for a lease.
func TestR8_8ObserveDuplicateWithTheSameInstanceLiftsNothing(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(cfg Config) (*Enforcer, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg.BrokerID = new(int32(1))
		s := full()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: "broker-1-pod"})
		if err != nil {
			t.Fatal(err)
		}
		return e, reg
	}
	active, _ := newAs(Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}})
	observer, reg := newAs(Config{Interval: time.Second})
	passAt(t, active, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, active, clock, full())
		passAt(t, observer, clock, full())
		if !f.acls[denyAll("a")] {
			t.Fatal("R8.8/an observe-mode duplicate with the same instance name lifted the active agent's protection")
		}
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/standby %v", v)
	}
	// The active agent dies: after a lease the observer lifts.
	for range 15 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, observer, clock, full())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.8/not lifted after the lease: %v", f.acls)
	}
}

// R8.8, R7.3 (lease fencing): two enforcing instances for one broker never
// purge its log dir past the caps together. The active instance's record
// holds its purges and keeps its lease without any claim, so the second
// stands by; it takes over once the first stops renewing, counting the
// purges the record holds; and the first, back, reads the second's
// record and stands by (found by the simulation, duplicate_agent, seed
// 18: with its claims released the active agent's record had no lease,
// and the duplicate purged a fresh hour's cap beside it).
func TestR8_8DuplicateInstanceNeverPurgesPastTheCaps(t *testing.T) {
	// In the purge band, under the protect band: no claim, only purges.
	x := newLeaseFixture(t, 8800, 10*time.Second)
	clock, pass := x.clock, x.pass
	// At most one segment past the hour's cap (500 bytes: offset 50).
	const maxLSO = 60
	a, _ := x.instance("pod-a")
	b, regB := x.instance("pod-b")
	// Both start while the log dir is calm: neither record holds a purge.
	clock.tick(10 * time.Second)
	pass(a)
	pass(b)
	x.fill()
	for range 6 {
		clock.tick(10 * time.Second)
		pass(a)
		pass(b)
	}
	if lso := x.lso(); lso == 0 || lso > maxLSO {
		t.Fatalf("R8.8/log start offset %d with both instances running: want some purged, at most the hour's cap (offset %d)", lso, maxLSO)
	}
	if v := gather(t, regB, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R8.8/the second instance purged %v unexpired bytes while the first renewed its lease", v)
	}
	if v := gather(t, regB, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/the second instance's standby %v while the first renews its lease", v)
	}
	// The first stops (its passes fail, or it died): after a lease the
	// second takes over, with the first's purges counted.
	for range 12 {
		clock.tick(10 * time.Second)
		pass(b)
	}
	// The first is back: it reads the second's record and stands by.
	for range 6 {
		clock.tick(10 * time.Second)
		pass(a)
		pass(b)
	}
	if lso := x.lso(); lso > maxLSO {
		t.Fatalf("R7.3/log start offset %d: two instances purged past the hour's cap (offset %d)", lso, maxLSO)
	}
}

// staleRecords is an admin whose records reads return an older copy
// while old is set: reads that raced another instance's write (each
// ended before that write, and this agent's next write came after it).
type staleRecords struct {
	*fakeAdmin
	old *Records
}

func (s *staleRecords) LoadRecords(ctx context.Context) (Records, error) {
	if s.old != nil {
		return s.old.Clone(), nil
	}
	return s.fakeAdmin.LoadRecords(ctx)
}

// R8.8: two enforcing instances for one broker write one record. An
// instance whose read raced the other's write writes from a stale copy,
// over the other's claims (before it writes, an instance without a live
// lease reads the ledger: only a race gets past that, lease_takeover_test.go):
// those bindings stay in place and no record names them. The
// instance that claimed them keeps them as set unrecorded, stands by
// while the other renews, and lifts them once it acts again (found by the
// simulation, duplicate_agent, seed 311: the absence shape's ALLOWs left
// for good after the faults stopped).
func TestR8_8ClaimsWrittenOverByAnotherInstanceAreLifted(t *testing.T) {
	full, calm := protectSnaps()
	O := agent.StateOpen
	fullC := func() *agent.Snapshot {
		return snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, O)), part("b", 0, 0, 10, seg(0, 1, O)), part("c", 0, 0, 10, seg(0, 1, O)))
	}
	f := newFakeAdmin(fullC())
	clock := &clockAt{t0}
	newAs := func(instance string, admin Admin) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := calm()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	stale := &staleRecords{fakeAdmin: f}
	first, second := newAs("pod-a", f), newAs("pod-b", stale)
	passAt(t, second, clock, calm()) // reads the empty ledger
	empty, err := f.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	passAfter(t, first, clock, time.Second, full())
	if !f.acls[denyAll("a")] || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("not protected by pod-a: %v %+v", f.acls, f.records.Agents[1])
	}
	stale.old = &empty
	_ = tryPassAfter(t, second, clock, time.Second, fullC())
	if r := f.records.Agents[1]; r.Instance != "pod-b" || slices.Contains(r.ACLTopics(), "a") {
		t.Fatalf("the test needs pod-b's record over pod-a's: %+v", r)
	}
	stale.old = nil
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, first, clock, calm())
		passAt(t, second, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Errorf("R8.8/bindings left once both instances are calm (claimed by pod-a, its record written over by pod-b): %v", f.acls)
	}
}

// A fresh agent that has never renewed a lease (nothing claimed yet) is
// not fenced for it: in a pass that did not read the ledger, its first
// purge reads it then (no other instance holds the broker) and goes on,
// with enforcer_blocked{reason="lease_fenced"} 0 throughout (a healthy
// start raised KafkaDiskGuardEnforcerBlocked).
func TestR8_8FreshAgentIsNotFencedBeforeItsFirstLease(t *testing.T) {
	x := newLeaseFixture(t, 8800, 20*time.Second)
	clock := x.clock
	e, reg := x.instance("pod-a")
	clock.at(x.calm)
	_ = e.Reconcile(t.Context()) // reads the ledger: calm, nothing claimed, no lease
	x.fill()
	clock.tick(5 * time.Second) // within the interval: the ledger is not due
	clock.at(x.full)
	_ = e.Reconcile(t.Context())
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "lease_fenced"}); v != 0 {
		t.Errorf("R8.8/lease_fenced %v for a fresh agent no other instance contends with", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v == 0 {
		t.Errorf("R8.8/the fresh agent purged nothing in the purge band")
	}
}
