package enforcer

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7 (found by the simulation, seed 80719 of the default mix):
// broker 3's agent lowers tiered's local.retention.bytes; broker 2's
// agent reads that record, broker 3's agent writes it again (a later
// write of the same process), and broker 4's agent reads the later one.
// The ownership topic is lost, an operator sets the value to 100000 and
// broker 3's agent restarts. Once the topic is back (empty), broker 1's
// agent starts and lowers the operator's value to broker 3's number;
// broker 2 writes back its copy of broker 3's record without the stale
// claim (withoutShadowed), and broker 3's new process takes that copy
// over. Broker 4's copy is a later write of the earlier process than the
// one taken over (writeEarlier): its claims are written into broker 3's
// record, which is not Fresh. The stale claim must be dropped there too
// (Records.Shadowed): written in and adopted, it restored its original
// over the operator's value once calm (here once broker 1's claim is
// lifted).
func TestR7_4R8_7EarlierProcessClaimShadowedSinceIsNotWrittenIn(t *testing.T) {
	f := newFakeAdmin(tieredSnap(950))
	f.live = []int32{1, 2, 3, 4}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(950), f, clock)
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	b4, _ := enforcerAs(t, 4, cfg, tieredSnap(100), f, clock)
	passAt(t, b3, clock, tieredSnap(950))
	lowered, ok := localRetention(f, "tiered")
	if !ok {
		t.Fatal("broker 3 did not lower")
	}
	passAt(t, b2, clock, tieredSnap(100)) // its copy of broker 3's record
	older := f.records.Agents[3].Seq
	for f.records.Agents[3].Seq == older {
		passAfter(t, b3, clock, time.Second, tieredSnap(950))
	}
	passAt(t, b4, clock, tieredSnap(100)) // its copy: a later write
	f.mu.Lock()
	f.records, f.ledgerErr = ledger.NewRecords(), fmt.Errorf("%w: topic has 3 partitions, want 1", ErrLedgerLost)
	f.configs["tiered"][LocalRetentionBytesKey] = "100000"
	f.mu.Unlock()
	b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock) // restarted
	if err := tryPassAfter(t, b3, clock, time.Second, tieredSnap(100)); !errors.Is(err, ErrLedgerLost) {
		t.Fatalf("the test needs the ledger lost: %v", err)
	}
	f.mu.Lock()
	f.ledgerErr = nil
	f.mu.Unlock()
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(950), f, clock)
	passAfter(t, b1, clock, time.Second, tieredSnap(950))
	if v, _ := localRetention(f, "tiered"); v != lowered {
		t.Fatalf("the test needs broker 1's value %q equal to broker 3's stale one %q", v, lowered)
	}
	passAt(t, b2, clock, tieredSnap(100)) // writes broker 3's record back, without the claim
	if r, ok := f.records.Agents[3]; !ok || !r.Restored || len(r.Configs) > 0 {
		t.Fatalf("the test needs broker 3's record written back by broker 2 without the claim: %+v", r)
	}
	passAt(t, b3, clock, tieredSnap(100)) // takes the copy over
	if r := f.records.Agents[3]; r.Fresh || !r.Inherited(t0) {
		t.Fatalf("the test needs broker 3's new process to take broker 2's copy over: %+v", r)
	}
	passAt(t, b4, clock, tieredSnap(100))
	if cs := f.records.Agents[3].Configs; len(cs) > 0 {
		t.Errorf("R8.7/broker 3's earlier claim on a value an operator changed while the ledger was lost written into its record: %+v", cs)
	}
	// Broker 1's agent dies (its lease runs out and a peer lifts its
	// claim), and every log dir calms down.
	for range 15 {
		passAfter(t, b3, clock, time.Second, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
		passAt(t, b4, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); !ok || v != "100000" {
		t.Errorf("R7.4/local.retention.bytes of tiered is %q (set %v) after calm, want the operator's 100000", v, ok)
	}
}
