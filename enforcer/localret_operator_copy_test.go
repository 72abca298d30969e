package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.6, R8.7 (found by the simulation, seed 55749): broker 2's
// agent lowers a tiered topic's local.retention.bytes (original "not
// set"), broker 1's agent reads that record, and the operator sets 1000;
// broker 1's next pass reads the same record and the operator's value.
// Broker 2's agent drops its claim (the operator's change), broker 3's
// lowers the operator's 1000 to the same number broker 2 had set, and the
// ownership topic is lost with both records before broker 1 reads them;
// brokers 2 and 3 restart. Broker 1 writes back what it remembers: before
// the fix, broker 2's older record with the claim on "not set", which
// broker 2's new process took over, found in place (broker 3's number)
// and restored, deleting the override the operator had set. A claim a
// peer saw changed by an operator is not written back: the value stays
// (broker 3's, its claim lost: unattributed, for the operator to decide).
func TestR7_4R8_7PeerCopyOfAClaimTheOperatorChangedNotWrittenBack(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(870), f, clock)
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(100), f, clock)
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	passAt(t, b2, clock, tieredSnap(870))
	lowered, ok := localRetention(f, "tiered")
	if cs := f.records.Agents[2].ConfigClaims(); !ok || len(cs) != 1 || cs[0].Orig != nil {
		t.Fatalf("the test needs broker 2 lowering on the unset value: %q %v %+v", lowered, ok, cs)
	}
	passAt(t, b1, clock, tieredSnap(100))
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = "1000" // the operator's
	f.mu.Unlock()
	passAfter(t, b1, clock, time.Second, tieredSnap(100)) // reads the claim and the operator's value
	passAt(t, b2, clock, tieredSnap(870))
	if len(f.records.Agents[2].ConfigClaims()) != 0 {
		t.Fatalf("the test needs broker 2 dropping its claim on the operator's change: %+v", f.records.Agents[2].Configs)
	}
	passAt(t, b3, clock, tieredSnap(870))
	cs := f.records.Agents[3].ConfigClaims()
	if v, _ := localRetention(f, "tiered"); v != lowered || len(cs) != 1 || ledger.ShowValue(cs[0].Orig) != "1000" {
		t.Fatalf("the test needs broker 3 lowering the operator's 1000 to broker 2's number %s: %q %+v", lowered, v, cs)
	}
	// The topic is lost with both writes; brokers 2 and 3 restart.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	b2, _ = enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	for range 20 {
		passAfter(t, b1, clock, time.Second, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
		passAt(t, b3, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); !ok || v != lowered {
		t.Fatalf("R8.7/local.retention.bytes of tiered is %q (set %v) after calm, want %s left (a claim lost with the topic; the operator's 1000 was not the copy's to delete): %+v", v, ok, lowered, f.records.Agents[2])
	}
	if cs := f.records.Agents[2].ConfigClaims(); len(cs) != 0 {
		t.Errorf("R8.7/broker 2's record holds a claim its agent gave up on the operator's change: %+v", cs)
	}
}
