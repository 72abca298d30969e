package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7: an agent that starts while the ownership topic is lost
// (its first read creates it, empty) takes a lowered local.retention.bytes
// of a peer's for the operator's value and lowers it further with that
// value as its original. Once a peer writes the lost record back, the
// claim inherits that record's original: restored, the peer's value would
// otherwise be put back for good when the peer's claim is given up over
// it (found by the simulation, ledger_delete, seed 232 and 517, 1455,
// 1533, 1825: broker 3 lowered, the topic was deleted, broker 1's agent
// restarted and lowered further, broker 3's lease ran out in a storm of
// call faults, a peer lifted it, broker 3's agent acknowledged the lift
// (its claim left its record), and broker 1 restored broker 3's value on
// calm: lowered for good).
func TestR7_4R8_7ClaimOnALostRecordsValueInheritsItsOriginal(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(870), f, clock)
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	passAt(t, b3, clock, tieredSnap(870))
	if v, ok := localRetention(f, "tiered"); !ok || v != "400" {
		t.Fatalf("broker 3 did not lower: %q", v)
	}
	passAt(t, b2, clock, tieredSnap(100)) // it reads broker 3's record
	// The topic is deleted and created again; broker 1's agent starts,
	// reads it empty, and lowers broker 3's value further.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(1020), f, clock)
	passAfter(t, b1, clock, time.Second, tieredSnap(1020))
	if cs := f.records.Agents[1].ConfigClaims(); len(cs) != 1 || cs[0].Orig == nil || *cs[0].Orig != "400" {
		t.Fatalf("the test needs broker 1's claim made on broker 3's value: %+v", f.records.Agents[1].Configs)
	}
	// Broker 2 writes broker 3's record back; broker 3's agent is dead
	// from now on: its lease runs out and broker 2 lifts it.
	passAt(t, b2, clock, tieredSnap(100))
	if _, ok := f.records.Agents[3]; !ok {
		t.Fatal("the test needs broker 3's record written back")
	}
	for range 15 {
		passAfter(t, b1, clock, time.Second, tieredSnap(1020))
		passAt(t, b2, clock, tieredSnap(100))
	}
	if r := f.records.Agents[3]; f.records.Live(3, "tiered") {
		t.Fatalf("the test needs broker 3's claim lifted: %+v", r)
	}
	// Broker 3's agent comes back and acknowledges the lift.
	b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	for range 5 {
		passAfter(t, b3, clock, time.Second, tieredSnap(100))
		passAt(t, b1, clock, tieredSnap(1020))
		passAt(t, b2, clock, tieredSnap(100))
	}
	for range 5 { // calm
		passAfter(t, b1, clock, time.Second, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
		passAt(t, b3, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); ok {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q after calm, want the operator's (not set)", v)
	}
}
