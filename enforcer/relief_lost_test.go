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

// readFailingReassign is fakeReassign whose config reads fail while fail
// is set (a timeout, a controller move).
type readFailingReassign struct {
	*fakeReassign
	fail bool
}

func (f *readFailingReassign) ThrottleConfig(ctx context.Context, resource, name, key string) (string, bool, error) {
	if f.fail {
		return "", false, errors.New("injected: REQUEST_TIMED_OUT")
	}
	return f.fakeReassign.ThrottleConfig(ctx, resource, name, key)
}

// R8.7, R8.5: a peer restoring an expired reassigner's replication
// throttle has marked the claim releasing under its own instance (the
// owner's process no longer takes it for its own) when the ledger is lost
// before the values are restored: the peer writes the claim back from
// memory once the ledger is back and finishes the release. Before, no
// process remembered it: the owner had given it up to the peer, and the
// peer kept only its own claim, so the throttle stayed on the topic for
// good (found by the simulation, ledger_reshape seed 1863 with relief:
// events follower.replication.throttled.replicas=2:2 left).
func TestR8_7ReassignerWritesBackThePeerClaimItWasReleasing(t *testing.T) {
	r, fake, st, clock, _, logs := reassignFixture(t, 0)
	r.cfg.Relief.Reassign = false // only tends its peers' claims
	admin := &readFailingReassign{fakeReassign: fake}
	r.d.Admin = admin
	ctx := context.Background()
	key := ledger.ResourceTopic + "/t/" + LeaderThrottledReplicas
	fake.v[key] = "0:1,0:2"
	peer := ledger.ReassignClaim{Owner: ledger.ReassignOwner(2), Instance: "a2", Partitions: []string{"t/0"},
		Entries: []ledger.ThrottleEntry{{Resource: ledger.ResourceTopic, Name: "t", Key: LeaderThrottledReplicas, Value: "0:1,0:2"}},
		Renewed: clock.t, LeaseMs: time.Minute.Milliseconds()}
	if err := st.StoreReassign(ctx, peer); err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(ctx); err != nil { // the peer's claim first seen
		t.Fatalf("%v\n%s", err, logs)
	}
	clock.t = clock.t.Add(70 * time.Second)
	admin.fail = true
	if err := r.Pass(ctx); err == nil {
		t.Fatalf("restore with the config reads failing: want an error\n%s", logs)
	}
	if c := st.recs.Reassigns[peer.Owner]; !c.Releasing || c.Instance != "a1" {
		t.Fatalf("peer's claim %+v: want it marked releasing by this agent (a1)", c)
	}
	st.recs = ledger.NewRecords() // the ledger lost and created again
	admin.fail = false
	clock.t = clock.t.Add(10 * time.Second)
	if err := r.Pass(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if v, ok := fake.v[key]; ok || len(st.recs.Reassigns) != 0 {
		t.Fatalf("after the ledger came back: %s=%q (set %v), claims %v: want the value restored and no claim\n%s",
			key, v, ok, st.recs.Reassigns, logs)
	}
}
