package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7, R8.5: no lease can be renewed while the ledger is lost, so none
// counts as lapsed for it: when a peer reads the ledger back, each lease
// it follows counts again from that read. The owner, alive, renews it
// within the lease; a dead owner's protection is lifted a lease after the
// ledger came back. Before, every lease had run out the moment the ledger
// returned, and the first peer to read it lifted a live agent's protection
// (found by the simulation, ledger_reshape seeds 140 and 725: a cordon and
// bindings of live agents lifted as the repaired topic came back).
func TestR8_7LeasesCountAgainWhenTheLedgerIsBack(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	owner, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, owner, clock, full())
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm()) // it follows broker 2's lease
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	// The topic is reshaped for longer than a lease: nobody can renew.
	f.ledgerErr = ledger.ErrLedgerLost
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		_ = peer.Reconcile(t.Context())
		_ = owner.Reconcile(t.Context())
	}
	// Repaired: the peer reads it back first.
	f.ledgerErr = nil
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.7/the peer lifted a live agent's protection as the ledger came back: %v, lifts %v", f.acls, f.records.Lifts)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, owner, clock, full()) // renews its lease
	// The owner dies: its protection is lifted a lease later.
	for range 12 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
	}
	if f.acls[denyAll("a")] {
		t.Fatalf("R8.5/a dead agent's protection outlived its lease after the ledger came back: %v", f.acls)
	}
}
