package enforcer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7, R8.5: the ownership topic is deleted (or reshaped and repaired)
// and created again empty while the mover holds its throttle claim: the
// mover writes the claim again from memory, and the operator's value it
// names comes back once the moves end. Before, the mover read "no claim":
// with the moves done it left the guard's throttle in place; with more
// moves planned it took the guard's own value for the operator's (found
// by the simulation, ledger_delete seed 3 and ledger_reshape seed 2 with
// relief: an operator's 555 replaced for good by the guard's 20971520).
func TestR8_7MoverWritesBackTheThrottleClaimTheLedgerLost(t *testing.T) {
	for _, movesAgain := range []bool{false, true} {
		f := &fakeMoves{value: "555", set: true, claims: map[int32]ledger.ThrottleClaim{}}
		src := &staticSource{snap: jbodSnapshot(800)}
		clock := &clockAt{time.Unix(1e9, 0)}
		mv, _, _ := newTestMover(t, true, f, fakeDirs{}, src, clock)
		if err := mv.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if f.value != "20971520" || len(f.claims) != 1 {
			t.Fatalf("throttle %q, claims %v: want the guard's, claimed", f.value, f.claims)
		}
		f.claims = map[int32]ledger.ThrottleClaim{} // the ledger lost and created again
		clock.t = clock.t.Add(10 * time.Second)
		if movesAgain {
			// The first moves done, more planned: the claim is written back
			// and the operator's value in it kept.
			if err := mv.Pass(t.Context()); err != nil {
				t.Fatal(err)
			}
			if c, ok := f.claims[1]; !ok || c.Orig == nil || *c.Orig != "555" {
				t.Fatalf("moves again after the loss: claim %+v (held %v), want the operator's 555 as the value to restore", c, ok)
			}
		}
		src.snap = jbodSnapshot(600) // calm: nothing in flight, nothing planned
		clock.t = clock.t.Add(10 * time.Second)
		if err := mv.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if f.value != "555" || !f.set || len(f.claims) != 0 {
			t.Fatalf("moves again %v: throttle %q set %v, claims %v: want the operator's 555 back and no claim",
				movesAgain, f.value, f.set, f.claims)
		}
	}
}

// R8.7, R8.5: the ledger lost a reassigner's replication throttle claim
// while Kafka reassigned under it: the reassigner writes the claim again
// from memory and removes the values once the reassignment is done.
// Before, it read "no claim", left the values in place for good, and
// started no later reassignment where they were (throttle_in_place)
// (found by the simulation, ledger_delete with relief: broker 1's
// follower.replication.throttled.rate left after the faults stopped).
func TestR8_7ReassignerWritesBackTheClaimTheLedgerLost(t *testing.T) {
	r, admin, st, clock, _, logs := reassignFixture(t, 0)
	ctx := context.Background()
	if err := r.Pass(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if len(admin.v) == 0 || len(st.recs.Reassigns) != 1 {
		t.Fatalf("values %v, claims %v: want a reassignment under a claimed throttle", admin.v, st.recs.Reassigns)
	}
	st.recs = ledger.NewRecords() // the ledger lost and created again
	clock.t = clock.t.Add(10 * time.Second)
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.recs.Reassigns["broker-1"]; !ok {
		t.Fatalf("claim not written back while Kafka reassigns: %v\n%s", st.recs.Reassigns, logs)
	}
	admin.busy = nil // Kafka is done
	clock.t = clock.t.Add(10 * time.Second)
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(admin.v) != 0 || len(st.recs.Reassigns) != 0 {
		t.Fatalf("after the reassignment: values %v, claims %v: want none\n%s", admin.v, st.recs.Reassigns, logs)
	}
}

// failingThrottle fails every throttle config change while fail is set.
type failingThrottle struct {
	*fakeReassign
	fail bool
}

func (f *failingThrottle) SetThrottleConfig(ctx context.Context, v ThrottleConfigValue) error {
	if f.fail {
		return errors.New("REQUEST_TIMED_OUT")
	}
	return f.fakeReassign.SetThrottleConfig(ctx, v)
}

// R8.7 (simulation class ledger_delete with relief, seed 1863): a peer
// releasing an expired replication throttle claim whose restore fails,
// and then the ownership topic lost and created again, writes the claim
// back, releasing, as it recorded it, and restores its values once it
// can. Its owner forgot the claim when the peer took it over; before the
// fix no process remembered it, and the throttle stayed for good.
func TestR8_7PeerWritesBackAReplicationThrottleClaimItWasReleasing(t *testing.T) {
	r, admin, st, clock, _, logs := reassignFixture(t, 0)
	r.cfg.Relief.Reassign = false // this agent starts nothing of its own
	failing := &failingThrottle{fakeReassign: admin, fail: true}
	r.d.Admin = failing
	const key = "broker/2/leader.replication.throttled.rate"
	admin.v[key] = "67108864"
	st.recs.Reassigns["broker-2"] = ledger.ReassignClaim{Owner: "broker-2", Instance: "a2", Partitions: []string{"t/0"},
		Entries: []ledger.ThrottleEntry{{Resource: "broker", Name: "2", Key: "leader.replication.throttled.rate", Value: "67108864"}},
		Renewed: clock.t, LeaseMs: time.Minute.Milliseconds()}
	ctx := context.Background()
	_ = r.Pass(ctx) // it sees the claim renewed
	clock.t = clock.t.Add(61 * time.Second)
	if err := r.Pass(ctx); err == nil {
		t.Fatalf("the test needs the release to fail: %v\n%s", st.recs.Reassigns, logs)
	}
	if c := st.recs.Reassigns["broker-2"]; !c.Releasing {
		t.Fatalf("the test needs the claim recorded releasing: %+v", c)
	}
	st.recs = ledger.NewRecords() // the ledger lost and created again
	clock.t = clock.t.Add(10 * time.Second)
	_ = r.Pass(ctx)
	if c, ok := st.recs.Reassigns["broker-2"]; !ok || !c.Releasing {
		t.Fatalf("R8.7/the claim this agent was releasing was not written back: %v\n%s", st.recs.Reassigns, logs)
	}
	failing.fail = false
	for range 10 {
		clock.t = clock.t.Add(10 * time.Second)
		_ = r.Pass(ctx)
	}
	if _, ok := admin.v[key]; ok || len(st.recs.Reassigns) != 0 {
		t.Fatalf("R8.7/throttle %v, claims %v after the release can go through: want none\n%s", admin.v, st.recs.Reassigns, logs)
	}
}
