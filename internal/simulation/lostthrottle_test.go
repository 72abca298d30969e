package simulation

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// A peer's reassigner that marked another owner's replication throttle
// claim releasing remembers it (and writes it back if the ledger loses
// it) only while the claim reads back as its own release: read back as
// its owner's (written again from the owner's memory) or another peer's,
// the reassigner forgets it (enforcer.Reassigner.restoreReleasing), and
// the model must not take it for the claim's holder when the topic goes
// (found by the simulation: ledger_delete seed 1279, where agent 3 was
// taken for the holder of broker 2's claim, lost while agent 2 was dead,
// and I1 took the throttle values no live process remembered for a
// guard's left instead of unattributed).
func TestPeerForgetsAReassignClaimReadBackAsAnotherProcesses(t *testing.T) {
	s := newTestSim(t)
	owner := ledger.ReassignOwner(2)
	k := ledger.ReassignKey(owner)
	entries := []ledger.ThrottleEntry{{Resource: "broker", Name: "1", Key: "follower.replication.throttled.rate", Value: "67108864"}}
	for _, other := range []string{"agent-2", "agent-1"} {
		peer := newTrackedRelief(s.c.ReliefAdmin("agent-3"), "agent-3", ledger.ReassignKey(ledger.ReassignOwner(3)))
		releasing := ledger.ReassignClaim{Owner: owner, Instance: "agent-3", Releasing: true, Entries: entries, LeaseMs: 60000}
		if err := peer.StoreReassign(t.Context(), releasing); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.LoadRecords(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !peer.knows[k] {
			t.Fatalf("a claim the peer is releasing, read back as its release: not remembered")
		}
		c := ledger.ReassignClaim{Owner: owner, Instance: other, Entries: entries, LeaseMs: 60000}
		if other == "agent-1" {
			c.Releasing = true // another peer took the release over
		}
		if err := s.c.ReliefAdmin(other).StoreReassign(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.LoadRecords(t.Context()); err != nil {
			t.Fatal(err)
		}
		if peer.knows[k] {
			t.Errorf("the claim read back as %s's: still taken for one the peer remembers", other)
		}
	}
}

// A move throttle claim lost with the ledger while its agent was dead is
// remembered by no live process: the agent, restarted, finds the guard's
// value in place, claimed by no record, takes it for the operator's
// (R8.6) and claims the broker again under the same key, with that value
// to put back at its release. That new claim is not the lost one back:
// the lost claim's value stays unattributed, and I1 waives it once the
// release leaves it in place (found by the simulation: seed 18751, where
// I1 took broker 3's 20971520, left after the moves, for a guard's).
func TestMoveThrottleClaimedAgainAfterItsLossIsUnattributed(t *testing.T) {
	s := newTestSim(t)
	s.classes[Relief] = true
	r := s.reliefOn()
	ctx := t.Context()
	a := s.agents[jbodBroker-1]
	if a.name != "agent-3" {
		t.Fatalf("agent %s, want agent-3", a.name)
	}
	admin := s.c.ReliefAdmin(a.name)
	rate := "20971520"
	claim := ledger.ThrottleClaim{BrokerID: jbodBroker, Instance: a.name, Key: enforcer.ThrottleKey, Value: rate, LeaseMs: 60000}
	setClaimed := func(c ledger.ThrottleClaim) {
		t.Helper()
		st := newTrackedRelief(admin, a.name, ledger.ThrottleKey(jbodBroker))
		r.stores[a.name] = []*trackedRelief{st}
		if err := st.StoreThrottle(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := admin.SetThrottle(ctx, jbodBroker, rate, true); err != nil {
			t.Fatal(err)
		}
	}
	release := func(c ledger.ThrottleClaim) *Failure {
		t.Helper()
		if err := enforcer.RestoreThrottle(ctx, admin, c); err != nil {
			t.Fatal(err)
		}
		if err := admin.DeleteThrottle(ctx, jbodBroker); err != nil {
			t.Fatal(err)
		}
		s.settleLost()
		recs, err := s.c.ThrottleClaims()
		return s.reliefLeft(s.c.ThrottleValues(), recs, err)
	}
	r.stores = map[string][]*trackedRelief{}

	// Without a loss, a claim that puts the guard's own value back leaves
	// it: I1.
	orig := rate
	own := claim
	own.Orig = &orig
	setClaimed(own)
	if f := release(own); f == nil || f.Invariant != "I1" {
		t.Fatalf("the guard's move throttle left, nothing lost: %v, want I1", f)
	}
	if err := admin.SetThrottle(ctx, jbodBroker, "", false); err != nil {
		t.Fatal(err)
	}

	// The claim, then the agent's death and the topic's loss.
	setClaimed(claim)
	a.deadTill = s.step + 5
	s.forget(a)
	s.loseLedger()
	s.c.DeleteOwnershipTopic()
	// Restarted in the same step, the agent claims the broker again (the
	// topic created again), the guard's value taken for the operator's.
	a.deadTill = -1
	if err := s.c.Admin(a.broker, a.name).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	setClaimed(own)
	s.settleLost()
	if f := release(own); f != nil {
		t.Fatalf("the lost claim's value, left by the release of the claim made again: %v", f)
	}
}
