package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.5: a claim lifted while another record's claim on the key,
// made on its value taken for the operator's, holds a lower value in
// place stays in the record (releasing) until that claim takes its
// original over: dropped, it was the only record of that value as the
// guard's, and the other claim restored it for good. Found by the
// simulation, seed 11605: broker 1's second instance lowered a topic
// with no override, the ownership topic was deleted, broker 2's agent
// wrote back an older copy of broker 1's record and lowered the value
// further on it (its original: the second instance's value), and lifted
// broker 1 after its lease; the second instance wrote its claim back,
// lifted, and dropped it (another claim's value in place); broker 2
// restored the second instance's value on calm.
func TestR7_4R8_5LiftedClaimStaysWhileAnotherIsMadeOnItsValue(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Minute}}
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(870), f, clock)
	passAt(t, b1, clock, tieredSnap(870))
	if v, ok := localRetention(f, "tiered"); !ok || v != "400" {
		t.Fatalf("broker 1 did not lower: %q", v)
	}
	// The topic is deleted and created again; broker 2's agent starts,
	// reads it empty, and lowers broker 1's value further on it.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(1020), f, clock)
	passAfter(t, b2, clock, time.Second, tieredSnap(1020))
	if cs := f.records.Agents[2].ConfigClaims(); len(cs) != 1 || !ledger.SameValue(cs[0].Orig, strPtr("400")) {
		t.Fatalf("the test needs broker 2's claim made on broker 1's value: %+v", f.records.Agents[2].Configs)
	}
	// Broker 1 is lifted before it writes its record again.
	if err := f.StoreLift(t.Context(), Lift{ID: ledger.NewLiftID(LiftOperator, clock.t), BrokerID: 1, Kind: LiftOperator,
		By: "alice", At: clock.t}); err != nil {
		t.Fatal(err)
	}
	passAfter(t, b1, clock, time.Second, tieredSnap(870))
	if cs := f.records.Agents[1].Configs; len(cs) != 1 || !cs[0].Releasing {
		t.Fatalf("R8.5/broker 1's record holds %+v, want its claim releasing while broker 2's claim is made on its value", cs)
	}
	passAt(t, b2, clock, tieredSnap(1020))
	if cs := f.records.Agents[2].ConfigClaims(); len(cs) != 1 || cs[0].Orig != nil {
		t.Fatalf("R7.4/broker 2's claim %+v, want broker 1's original (not set)", f.records.Agents[2].Configs)
	}
	for range 5 { // calm
		passAfter(t, b1, clock, time.Second, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); ok {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q after calm, want the operator's (not set)", v)
	}
	for _, id := range []int32{1, 2} {
		if cs := f.records.Agents[id].Configs; len(cs) != 0 {
			t.Errorf("R8.5/broker %d's record still holds %+v", id, cs)
		}
	}
}
