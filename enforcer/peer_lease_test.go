package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R3.8 with R8.5: the reassigner times a peer's replication throttle
// claim on its monotonic clock, never its wall clock. Its wall clock
// gone back 10 minutes after it first saw the claim, it restores the
// claim a lease after that all the same (found by the simulation, seed
// 14649: agent-1b first saw broker 2's claim with its clock 5 minutes
// ahead, the clocks agreed again, and the claim, whose owner was done
// with it, outlived its lease by 5 minutes); its wall clock gone 2 hours
// ahead, it does not restore a claim it saw renewed 10 seconds before.
func TestR3_8R8_5ReassignerTimesAPeersClaimOnItsMonotonicClock(t *testing.T) {
	r, admin, st, _, _, logs := reassignFixture(t, 0)
	r.cfg.Relief.Reassign = false // only the peers' claims are in play
	clock := &monoClock{wall: t0}
	r.d.Clock = clock
	pass := func() {
		t.Helper()
		if err := r.Pass(t.Context()); err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
	}
	claim := func(owner, broker string) {
		admin.v["broker/"+broker+"/"+LeaderThrottleRate] = "100"
		st.recs.Reassigns[owner] = ledger.ReassignClaim{Owner: owner, Partitions: []string{"t/0"}, Renewed: clock.wall, LeaseMs: 60000,
			Entries: []ledger.ThrottleEntry{{Resource: ledger.ResourceBroker, Name: broker, Key: LeaderThrottleRate, Value: "100"}}}
	}
	restored := func(owner, broker string) bool {
		_, held := st.recs.Reassigns[owner]
		_, set := admin.v["broker/"+broker+"/"+LeaderThrottleRate]
		return !held && !set
	}

	claim("broker-2", "2")
	pass() // first seen
	clock.jump(-10 * time.Minute)
	for range 5 {
		clock.tick(10 * time.Second)
		pass()
	}
	if restored("broker-2", "2") {
		t.Fatal("R3.8/broker-2's claim restored 50 s after it was first seen, within its lease")
	}
	clock.tick(10 * time.Second)
	pass()
	if !restored("broker-2", "2") {
		t.Errorf("R3.8/R8.5: broker-2's claim, unrenewed a lease on the monotonic clock, kept (the wall clock went back 10 minutes): %v %v",
			st.recs.Reassigns, admin.v)
	}

	claim("broker-3", "3")
	pass() // first seen
	clock.jump(2 * time.Hour)
	clock.tick(10 * time.Second)
	pass()
	if restored("broker-3", "3") {
		t.Fatal("R3.8/R8.5: broker-3's claim, seen renewed 10 s before, restored (the wall clock went 2 hours ahead)")
	}
	for range 5 {
		clock.tick(10 * time.Second)
		pass()
	}
	if !restored("broker-3", "3") {
		t.Errorf("R3.8: broker-3's claim kept a lease after it was first seen: %v %v", st.recs.Reassigns, admin.v)
	}
}

// R3.8 with R8.5: the mover, too, times another broker's move throttle
// claim on its monotonic clock: a wall clock gone back keeps no dead
// claim past its lease, one gone ahead expires no live claim.
func TestR3_8R8_5MoverTimesAPeersClaimOnItsMonotonicClock(t *testing.T) {
	f := &fakeMoves{value: "20971520", set: true, claims: map[int32]ledger.ThrottleClaim{}}
	clock := &monoClock{wall: time.Unix(1e9, 0)}
	mv, _, logs := newTestMover(t, true, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(600)}, clock)
	pass := func() {
		t.Helper()
		if err := mv.Pass(t.Context()); err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
	}
	claim := func() {
		f.value, f.set = "20971520", true
		f.claims[2] = ledger.ThrottleClaim{BrokerID: 2, Key: ThrottleKey, Value: "20971520", LeaseMs: 60000, Renewed: clock.wall}
	}

	claim()
	pass() // first seen
	clock.jump(-10 * time.Minute)
	clock.tick(50 * time.Second)
	pass()
	if len(f.claims) != 1 {
		t.Fatal("R3.8/broker 2's claim restored 50 s after it was first seen, within its lease")
	}
	clock.tick(10 * time.Second)
	pass()
	if f.set || len(f.claims) != 0 {
		t.Errorf("R3.8/R8.5: broker 2's claim, unrenewed a lease on the monotonic clock, kept (the wall clock went back 10 minutes): throttle %q set %v, claims %v",
			f.value, f.set, f.claims)
	}

	claim()
	pass() // first seen
	clock.jump(2 * time.Hour)
	clock.tick(10 * time.Second)
	pass()
	if !f.set || len(f.claims) != 1 {
		t.Fatal("R3.8/R8.5: broker 2's claim, seen renewed 10 s before, restored (the wall clock went 2 hours ahead)")
	}
	clock.tick(50 * time.Second)
	pass()
	if f.set || len(f.claims) != 0 {
		t.Errorf("R3.8: broker 2's claim kept a lease after it was first seen: throttle %q set %v, claims %v", f.value, f.set, f.claims)
	}
}

// R3.8 with R8.5: the reassigner renews its own claim while Kafka
// reassigns, also when its wall clock went back past the last renewal:
// peers time the claim on their monotonic clocks, so a renewal left
// until the wall clock caught up would have them restore (unthrottle) a
// claim still in use once its lease ran out.
func TestR3_8R8_5ReassignerRenewsItsClaimAfterTheClockWentBack(t *testing.T) {
	r, _, st, clock, _, logs := reassignFixture(t, 0)
	if err := r.Pass(t.Context()); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	first, ok := st.recs.Reassigns["broker-1"]
	if !ok {
		t.Fatalf("the test needs a reassignment claimed: %v\n%s", st.recs.Reassigns, logs)
	}
	clock.t = clock.t.Add(-10 * time.Minute)
	if err := r.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := st.recs.Reassigns["broker-1"]; !got.Renewed.Equal(clock.t) {
		t.Errorf("R8.5: claim renewed at %v not renewed while the reassignment runs, the wall clock gone back to %v", first.Renewed, clock.t)
	}
}

// R3.8 with R8.5: the mover, too, renews its own claim while moves are in
// flight when its wall clock went back past the last renewal.
func TestR3_8R8_5MoverRenewsItsClaimAfterTheClockWentBack(t *testing.T) {
	f := &fakeMoves{claims: map[int32]ledger.ThrottleClaim{}}
	clock := &clockAt{time.Unix(1e9, 0)}
	mv, _, logs := newTestMover(t, true, f, fakeDirs{future: true}, &staticSource{snap: jbodSnapshot(600)}, clock)
	renewed := clock.t.Add(-time.Second)
	f.claims[1] = ledger.ThrottleClaim{BrokerID: 1, Key: ThrottleKey, Value: "20971520", LeaseMs: 60000, Renewed: renewed, Instance: "test"}
	f.value, f.set = "20971520", true
	clock.t = clock.t.Add(-10 * time.Minute)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if got := f.claims[1]; !got.Renewed.Equal(clock.t) {
		t.Errorf("R8.5: claim renewed at %v not renewed while a move is in flight, the wall clock gone back to %v: %+v\n%s", renewed, clock.t, got, logs)
	}
}
