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

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// liftedAndTakenOver is the start both tests of an instance written over
// after a lift share: pod-a protects topic a; its passes fail from there
// (it runs none) and a peer lifts its expired lease; pod-b, seeing pod-a's
// lease unrenewed, takes broker 1 over and acknowledges the lift.
type liftedAndTakenOver struct {
	f             *fakeAdmin
	clock         *clockAt
	first, second *Enforcer
	calm          func() *agent.Snapshot
	lift          ledger.Lift
}

func takeOverAfterALift(t *testing.T) liftedAndTakenOver {
	t.Helper()
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(instance string) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := calm()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first, second := newAs("pod-a"), newAs("pod-b")
	passAt(t, first, clock, full())
	if !f.acls[denyAll("a")] || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("not protected by pod-a: %v %+v", f.acls, f.records.Agents[1])
	}
	clock.t = clock.t.Add(11 * time.Second)
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 1, By: "agent of broker 2", Reason: "lease not renewed",
		Kind: ledger.LiftLeaseExpired, Now: clock.t})
	if err != nil || len(res.Lifts) != 1 || f.acls[denyAll("a")] {
		t.Fatalf("the peer's lift: %+v, %v; bindings %v", res, err, f.acls)
	}
	for range 12 {
		passAfter(t, second, clock, time.Second, calm())
	}
	return liftedAndTakenOver{f: f, clock: clock, first: first, second: second, calm: calm, lift: res.Lifts[0]}
}

// R8.6, R8.8: an instance whose record another instance for its broker
// wrote over keeps what it claimed as set unrecorded (keepOverwritten),
// but not what a lift voided since it wrote: the lifter released it. Its
// reads failed while its lease lapsed; a peer lifted its bindings, the
// other instance took over and acknowledged the lift, and the operator
// then froze topic a with the same binding (protection status showed no
// claim on it). Kept as unrecorded, the operator's binding was taken for
// this instance's and deleted (found by the simulation, ledger_garbage
// seed 174: {orders literal User:* * WRITE DENY} removed).
func TestR8_8OverwrittenInstanceKeepsNothingALiftVoided(t *testing.T) {
	x := takeOverAfterALift(t)
	f, clock, first, second, calm := x.f, x.clock, x.first, x.second, x.calm
	if r := f.records.Agents[1]; r.Instance != "pod-b" || r.Ack != x.lift.ID || r.Claims() {
		t.Fatalf("the test needs pod-b's record, the lift acknowledged, over pod-a's: %+v", r)
	}
	// The operator freezes topic a: no record claims the binding.
	f.acls[denyAll("a")] = true
	for range 5 {
		passAfter(t, first, clock, time.Second, calm())
		passAfter(t, second, clock, time.Second, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.6/the operator's binding %v, made after a lift voided pod-a's identical claim, was deleted by pod-a", denyAll("a"))
	}
}

// R8.5, R8.8: a local-retention claim of an instance whose record another
// instance for its broker wrote over (from a stale read that lacked it)
// is kept like its bindings: the instance restores the operator's value
// once the disk is calm. Forgotten, the lowered value belonged to no claim
// and stayed for good (found by the simulation, ledger_garbage seed 1125:
// local.retention.bytes of events left at 5775360 over the operator's
// 104857600).
func TestR8_8OverwrittenInstanceKeepsItsLocalRetentionClaim(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	clock := &clockAt{t0}
	newAs := func(instance string, admin Admin) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge,
			Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := tieredSnap(100)
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	stale := &staleRecords{fakeAdmin: f}
	first, second := newAs("pod-a", f), newAs("pod-b", stale)
	passAt(t, second, clock, tieredSnap(100)) // reads the empty ledger
	empty, err := f.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	passAfter(t, first, clock, time.Second, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" || len(f.records.Agents[1].ConfigClaims()) != 1 {
		t.Fatalf("not lowered by pod-a: %q %+v", v, f.records.Agents[1])
	}
	stale.old = &empty
	_ = tryPassAfter(t, second, clock, time.Second, tieredSnap(950))
	if r := f.records.Agents[1]; r.Instance != "pod-b" || len(r.ConfigClaims()) != 0 {
		t.Fatalf("the test needs pod-b's record, without the claim, over pod-a's: %+v", r)
	}
	stale.old = nil
	for range 5 {
		passAfter(t, first, clock, time.Second, tieredSnap(100))
		passAfter(t, second, clock, time.Second, tieredSnap(100))
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Errorf("R8.5/local.retention.bytes %q once both instances are calm, want the operator's 100000 (claimed by pod-a, its record written over by pod-b)", v)
	}
}

// failingACLs fails TopicACLs while fail is set.
type failingACLs struct {
	*fakeAdmin
	fail bool
}

func (a *failingACLs) TopicACLs(ctx context.Context) ([]ACL, error) {
	if a.fail {
		return nil, errDown
	}
	return a.fakeAdmin.TopicACLs(ctx)
}

// R8.8: an observe-mode instance that took over its broker's record (the
// active instance's lease seen unrenewed) writes nothing from records it
// did not read this pass: the active instance may have written since.
// Here its reads of the cluster failed through the pass that took over;
// the active instance, back, dropped its local-retention claim (the
// operator had changed the value) and renewed its lease; the observer's
// next pass, within the interval, used its cached records and wrote the
// claim back, releasing, over the active instance's record. Another
// agent had meanwhile lowered the operator's new value to the same
// number: two claims on one value with different originals, and the
// operator's lift restored the older original over the operator's newer
// value (found by the simulation: seed 2581 of the default mix,
// local.retention.bytes 100 MB restored over the operator's 200 MB).
func TestR8_8ObserveInstanceWritesNothingFromRecordsNotReadThisPass(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	clock := &clockAt{t0}
	newAs := func(instance string, enabled bool, admin Admin) *Enforcer {
		cfg := Config{Enabled: enabled, Interval: time.Second, Purge: lenientPurge,
			Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := tieredSnap(870)
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	observerAdmin := &failingACLs{fakeAdmin: f}
	active, observer := newAs("pod-a", true, f), newAs("pod-b", false, observerAdmin)
	passAt(t, active, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" || len(f.records.Agents[1].ConfigClaims()) != 1 {
		t.Fatalf("not lowered by pod-a: %q %+v", v, f.records.Agents[1])
	}
	// pod-a runs no pass for a lease; pod-b follows its record.
	for range 10 {
		passAfter(t, observer, clock, time.Second, tieredSnap(870))
	}
	if r := f.records.Agents[1]; r.Instance != "pod-a" {
		t.Fatalf("pod-b wrote before the lease ran out: %+v", r)
	}
	// pod-b's pass that sees the lease run out fails reading the ACLs.
	observerAdmin.fail = true
	_ = tryPassAfter(t, observer, clock, time.Second, tieredSnap(870))
	observerAdmin.fail = false
	if r := f.records.Agents[1]; r.Instance != "pod-a" {
		t.Fatalf("the test needs pod-b's takeover pass to write nothing: %+v", r)
	}
	// The operator sets its own value; pod-a, back, drops its claim.
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = "200000"
	f.mu.Unlock()
	passAfter(t, active, clock, 200*time.Millisecond, tieredSnap(870))
	if r := f.records.Agents[1]; r.Instance != "pod-a" || len(r.ConfigClaims()) != 0 {
		t.Fatalf("the test needs pod-a's record without its claim: %+v", r)
	}
	// Broker 2's agent lowers the operator's value to the same number
	// pod-a had set.
	orig := "200000"
	if err := f.StoreRecord(t.Context(), Record{Version: 2, BrokerID: 2, Instance: "broker-2", Strategy: StrategyACL, LeaseMs: 10000,
		Renewed: clock.t, Updated: clock.t, Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &orig}}}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = "400"
	f.mu.Unlock()
	// pod-b, within the interval of its last read.
	_ = tryPassAfter(t, observer, clock, 200*time.Millisecond, tieredSnap(870))
	if r := f.records.Agents[1]; r.Instance != "pod-a" || len(r.ConfigClaims()) != 0 {
		t.Errorf("R8.8/pod-b (observe mode) wrote broker 1's record from records it did not read this pass, over pod-a's newer one: %+v", r)
	}
	if _, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Now: clock.t}); err != nil {
		t.Fatal(err)
	}
	if v, _ := localRetention(f, "tiered"); v != "200000" {
		t.Errorf("R8.5/the operator's lift restored local.retention.bytes %q, want the operator's newer 200000", v)
	}
}

// R8.5: a local-retention claim kept from a record another instance wrote
// over is not written back when another record's claim on another
// original sets its value: the operator changed the value since, and
// another agent lowered the new one to the same number. Written back,
// two claims with different originals would share the value, and a lift
// could restore the older original over the operator's newer value (as
// at seed 2581, by another path).
func TestR8_5KeptClaimNeverSharesAValueWithAnotherOriginal(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	older, newer := "100000", "200000"
	kept := ConfigClaim{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &older}
	recs := ledger.NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Instance: "pod-b"}
	e.prot.keptConfigs = []ConfigClaim{kept}
	if got := e.mergeKept(recs).Agents[1].Configs; len(got) != 1 {
		t.Fatalf("the kept claim is not written back into the record as read: %+v", got)
	}
	recs.Agents[2] = Record{BrokerID: 2, Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &newer}}}
	if got := e.mergeKept(recs).Agents[1].Configs; len(got) != 0 {
		t.Errorf("R8.5/the kept claim (400 over %s) written back beside broker 2's claim of 400 over %s: %+v", older, newer, got)
	}
}

// R8.5, R8.8: an instance that took its broker over lowers a local
// retention; the ownership topic is lost, a peer writes back its older
// copy of the other instance's record (without the claim) and lifts it
// (that instance's lease expired). The lift voids the instance's claim,
// but its writer released nothing of it: the record it lifted lacked it.
// The instance keeps the claim (keepOverwritten) and restores the
// operator's value itself while the guard's value is in place. Not kept
// (voided), the lowered value belonged to no claim and stayed for good
// (found by the simulation, seed 9921: local.retention.bytes of events
// left at 5079040 over the operator's <unset>).
func TestR8_8OverwrittenInstanceRestoresTheClaimALiftOfAnOlderCopyMissed(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge,
		Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
	s := tieredSnap(100)
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
		Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: "pod-b"})
	if err != nil {
		t.Fatal(err)
	}
	passAt(t, b, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" || len(f.records.Agents[1].ConfigClaims()) != 1 {
		t.Fatalf("not lowered by pod-b: %q %+v", v, f.records.Agents[1])
	}
	// The topic is deleted; a peer writes back pod-a's record as it last
	// read it (it protected topic a), then lifts it.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	old := ledger.Record{BrokerID: 1, Instance: "pod-a", Started: t0.Add(-time.Hour), Renewed: t0.Add(-time.Hour),
		LeaseMs: (10 * time.Second).Milliseconds(), Restored: true, Updated: t0.Add(-time.Hour),
		Strategy: StrategyACL, Owned: []Owned{{Kind: OwnedACL, Shape: &Shape{Deny: []string{AnyPrincipal}}, Topics: []string{"a"}}}}
	if err := f.StoreRecord(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 1, By: "agent of broker 2", Reason: "lease not renewed",
		Kind: ledger.LiftLeaseExpired, Now: clock.t})
	if err != nil || len(res.Lifts) != 1 {
		t.Fatalf("the peer's lift: %+v, %v", res, err)
	}
	if v, _ := localRetention(f, "tiered"); v != "400" {
		t.Fatalf("the test needs the lift to leave pod-b's value (the record it lifted lacks the claim): %q", v)
	}
	for range 15 { // pod-a's lease, seen unrenewed: pod-b takes over
		passAfter(t, b, clock, time.Second, tieredSnap(100))
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Errorf("R8.5/local.retention.bytes %q once pod-b is calm, want the operator's 100000 (claimed by pod-b, a lift of an older copy of pod-a's record over its own)", v)
	}
}

// R8.5, R8.7, R8.8: pod-a lowers a local retention; the ownership topic is
// lost, and pod-b, restarted meanwhile, finds it empty, acts, and lowers
// pod-a's value further, taking it for the operator's (no record names
// it). pod-a, back, stands by: pod-b's record holds a claim on the key,
// but not pod-a's original. pod-a keeps its claim all the same, and once
// it acts again (pod-b's claim released on calm, pod-a's value back,
// pod-b's lease not renewed) it restores the operator's value. Not kept (the key was
// claimed), pod-a's value was no claim's and stayed for good (found by the
// simulation, seed 7144: local.retention.bytes of events left at 13262848
// over the operator's <unset>).
func TestR8_8OverwrittenInstanceKeepsItsClaimOnAKeyTheOtherClaims(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	clock := &clockAt{t0}
	newAs := func(instance string) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge,
			Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := tieredSnap(100)
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// Ten segments a partition, nine uploaded: a little pressure lowers
	// it a little, more pressure further.
	big := func(used, capacity uint64) *agent.Snapshot {
		return withTiered(snap(used, capacity, tieredPart(0, 10, 9), tieredPart(1, 10, 9)))
	}
	a := newAs("pod-a")
	passAt(t, a, clock, big(860, 1000))
	lowered, _ := localRetention(f, "tiered")
	if lowered == "100000" || len(f.records.Agents[1].ConfigClaims()) != 1 {
		t.Fatalf("not lowered by pod-a: %q %+v", lowered, f.records.Agents[1])
	}
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	b := newAs("pod-b")
	passAt(t, b, clock, big(9900, 10000))
	if v, _ := localRetention(f, "tiered"); v == lowered || f.records.Agents[1].Instance != "pod-b" {
		t.Fatalf("the test needs pod-b's record, its claim lowering pod-a's value %q further: %q %+v", lowered, v, f.records.Agents[1])
	}
	passAt(t, a, clock, tieredSnap(100))
	if !a.prot.standby {
		t.Fatal("the test needs pod-a standing by")
	}
	// pod-b's claim is released on calm (it restores pod-a's value); its
	// record, with no claim left, is not renewed: pod-a, holding a claim,
	// takes over.
	for range 15 {
		passAfter(t, b, clock, time.Second, tieredSnap(100))
		passAt(t, a, clock, tieredSnap(100))
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Errorf("R8.5/local.retention.bytes %q after calm, want the operator's 100000 (pod-a's claim, its record written over by pod-b's claim on pod-a's value)", v)
	}
}

// R8.7, R8.8: the claims an instance keeps from its record written over
// (keepOverwritten) go into its own record as read only after the records
// the topic lost are written back (restoreLost). Merged before, a kept
// claim took the key in the other instance's new record as restoreLost
// saw it, so the claim of that instance's earlier process on the key,
// remembered here, was not written into it (ledger.Adopt adds a config
// claim only on a key the record does not claim), and its lowered value
// stayed for good (found by the simulation, seed 2488: the kept claim,
// 4710400, had been restored by a peer's lift; the earlier process's
// 4751360 was left).
func TestR8_7KeptClaimDoesNotHideAnEarlierProcessesClaimOnTheKey(t *testing.T) {
	f := newFakeAdmin(tieredSnap(100))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "300"}}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge,
		Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
	s := tieredSnap(100)
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
		Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	orig := "100000"
	// pod-b's earlier process lowered to 300; pod-a remembers that record.
	earlier := Record{BrokerID: 1, Instance: "pod-b", Started: t0.Add(-time.Hour), Updated: t0.Add(-time.Minute),
		Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "300", Orig: &orig}}}
	mem := ledger.NewRecords()
	mem.Agents[1] = earlier
	a.prot.remembered = &mem
	// pod-b restarted while the ledger was lost: its new record names no
	// claim. pod-a keeps a claim of its own on the key (400, long
	// restored).
	if err := f.StoreRecord(t.Context(), Record{BrokerID: 1, Instance: "pod-b", Started: t0.Add(-time.Second), Fresh: true, Updated: t0.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	a.prot.keptConfigs = []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &orig}}
	passAt(t, a, clock, tieredSnap(100))
	if cs := f.records.Agents[1].Configs; !slices.ContainsFunc(cs, func(c ConfigClaim) bool { return c.Value == "300" }) {
		t.Errorf("R8.7/pod-b's earlier claim on the key (300) not written back into its record, pod-a's kept claim merged first: %+v", cs)
	}
}

// R8.8: of the claims of its record written over, an instance keeps one
// on a key the record over it claims on another original (that claim may
// have been made on this one's value, seed 7144), but not one on a key
// the record over it claims on the same original: the other instance took
// it over (or lowered further on the same operator's value) and restores
// that original itself; kept, it came back as this instance's claim once
// the other had released it.
func TestR8_8OverwrittenInstanceKeepsNoClaimTheOtherTookOver(t *testing.T) {
	e, _ := newTestEnforcer(t, Config{Enabled: true}, tieredSnap(100), newFakeAdmin(tieredSnap(100)), &clockAt{t0})
	orig, mine := "100000", "400"
	e.instance = "pod-a"
	for _, c := range []struct {
		overOrig *string
		kept     bool
	}{{&orig, false}, {&mine, true}} {
		e.prot.keptConfigs, e.prot.overwritten = nil, time.Time{}
		e.prot.written = &Record{BrokerID: 1, Instance: "pod-a", Updated: t0,
			Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: mine, Orig: &orig}}}
		recs := ledger.NewRecords()
		recs.Agents[1] = Record{BrokerID: 1, Instance: "pod-b", Updated: t0.Add(time.Second),
			Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "300", Orig: c.overOrig}}}
		e.keepOverwritten(recs)
		if got := len(e.prot.keptConfigs) == 1; got != c.kept {
			t.Errorf("R8.8/the record over it claims the key on %s: kept %v, want %v", *c.overOrig, got, c.kept)
		}
	}
}

// R8.5, R8.8: a lift of the other instance's record, written over this
// instance's before the lift, released what that record claimed, not
// this instance's claims it lacks: those stay in place and are kept as
// set unrecorded (keepOverwritten), released once the disk is calm.
// Taken as voided by the lift, they were in no record and no memory, and
// stayed for good (found by the simulation, seed 22514: agent-1b wrote
// over agent-1's record, an operator's lift --all deleted agent-1b's DENY
// WRITE User:*, and agent-1's absence-shape ALLOWs stayed, User:producer
// reading events through them after the operator's DENY READ
// User:mallory). pod-a protects a and b with the absence shape; pod-b,
// from a stale read, writes over pod-a's record with DENY WRITE User:*
// (pod-a's ALLOWs are an operator's to it); the operator lifts broker 1.
func TestR8_8OverwrittenInstanceKeepsWhatALiftOfTheOtherInstancesRecordMissed(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
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
	readA := ledger.LiteralACL("a", AnyPrincipal, OpRead, PermAllow)
	passAfter(t, first, clock, time.Second, full())
	if !f.acls[readA] || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("a not protected by pod-a with the absence shape: %v %+v", f.acls, f.records.Agents[1])
	}
	stale.old = &empty
	_ = tryPassAfter(t, second, clock, time.Second, full())
	stale.old = nil
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !f.acls[denyAll("a")] || !slices.Contains(r.ACLTopics(), "a") {
		t.Fatalf("the test needs pod-b's record, claiming DENY WRITE User:* on a, over pod-a's: %+v %v", r, f.acls)
	}
	clock.t = clock.t.Add(time.Second)
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Reason: "test", Now: clock.t})
	if err != nil || len(res.Lifts) != 1 || f.acls[denyAll("a")] || !f.acls[readA] {
		t.Fatalf("the operator's lift of pod-b's record: %+v, %v; bindings %v", res, err, f.acls)
	}
	for range 4 {
		passAfter(t, first, clock, time.Second, full())
		passAfter(t, second, clock, time.Second, full())
	}
	for range 15 {
		passAfter(t, first, clock, time.Second, calm())
		passAfter(t, second, clock, time.Second, calm())
	}
	if len(f.acls) != 0 {
		t.Errorf("R8.5/bindings left once both instances are calm (pod-a's, its record written over by pod-b's, which the operator lifted): %v", f.acls)
	}
}
