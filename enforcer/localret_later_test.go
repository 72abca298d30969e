package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7 (found by the simulation, seed 30286): broker 3's agent
// lowers a tiered topic's local.retention.bytes, then lowers it further;
// broker 1's agent read only the first write, broker 2's the second. The
// ownership topic is lost and broker 3's agent restarts: broker 1 writes
// back its older copy, the new process takes it over and, the value in
// place not the copy's, drops the claim as an operator's change. Broker 2
// then writes the later write in; its claim sets the value in place, so
// the agent takes it over and restores the operator's value (none) when
// calm. Before the fix the agent left the later claim out as one it had
// taken over and released (same topic and key, another value): the
// lowered value stayed for good.
func TestR7_4R8_7LaterClaimOnAKeyTheSuccessorDroppedIsTakenOver(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(870), f, clock)
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(100), f, clock)
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	passAt(t, b3, clock, tieredSnap(870))
	first, _ := localRetention(f, "tiered")
	passAt(t, b1, clock, tieredSnap(100)) // the first write
	passAfter(t, b3, clock, time.Second, tieredSnap(1020))
	later, _ := localRetention(f, "tiered")
	passAt(t, b2, clock, tieredSnap(100)) // the later one
	if first == "" || later == first {
		t.Fatalf("the test needs broker 3 lowering twice: %q then %q", first, later)
	}
	// The topic is lost; broker 3's agent restarts; broker 1 writes back
	// its older copy, which the new process takes over.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	passAt(t, b1, clock, tieredSnap(100))
	passAfter(t, b3, clock, time.Second, tieredSnap(100))
	passAt(t, b3, clock, tieredSnap(100))
	if r := f.records.Agents[3]; len(r.Inherits) != 1 || len(r.Configs) != 0 {
		t.Fatalf("the test needs the new process's record naming the earlier process, its claim dropped: %+v", r)
	}
	if v, _ := localRetention(f, "tiered"); v != later {
		t.Fatalf("the test needs the later value left in place: %q", v)
	}
	passAt(t, b2, clock, tieredSnap(100))
	if cs := f.records.Agents[3].ConfigClaims(); len(cs) != 1 || cs[0].Value != later {
		t.Fatalf("the test needs broker 2 writing the later claim in: %+v", f.records.Agents[3].Configs)
	}
	for range 5 {
		passAfter(t, b3, clock, time.Second, tieredSnap(100))
		passAt(t, b1, clock, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); ok {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q after calm, want the operator's (not set): %+v", v, f.records.Agents[3])
	}
}
