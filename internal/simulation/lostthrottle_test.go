package simulation

import (
	"testing"

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
