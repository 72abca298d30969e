package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.5, R8.7 (found by the simulation, seed 47558): broker 3's
// agent lowers a tiered topic's local.retention.bytes (no override of
// the operator's: original "not set"); broker 1's agent reads that
// write. The operator then sets 1000, broker 2's agent lowers it, and
// broker 3's claim takes the newer original over (its value in place
// again once broker 2 hands back and gives its claim up); broker 2's
// agent reads that later write, broker 1's does not. The ownership topic
// is lost and broker 3's agent restarts: broker 1 writes back its older
// copy (original "not set"), the new process, calm, takes it over, and
// broker 2 writes the later write in. The new process keeps the claim
// for a lease instead of restoring it at once, takes the later write's
// original, and restores the operator's 1000. Before the fix it deleted
// the override in its first pass (the copy's original), and the
// operator's 1000 was gone for good.
func TestR7_4R8_5ClaimTakenOverFromAnOlderCopyRestoresTheLaterWritesOriginal(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(870), f, clock)
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(100), f, clock)
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	passAt(t, b3, clock, tieredSnap(870))
	lowered, ok := localRetention(f, "tiered")
	if !ok {
		t.Fatal("the test needs broker 3 lowering")
	}
	passAt(t, b1, clock, tieredSnap(100)) // the older write
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = "1000" // the operator's
	f.mu.Unlock()
	passAfter(t, b2, clock, time.Second, tieredSnap(870))
	passAt(t, b3, clock, tieredSnap(870))
	for range 3 { // broker 2 calm: hands back to broker 3's value
		passAfter(t, b2, clock, time.Second, tieredSnap(100))
		passAt(t, b3, clock, tieredSnap(870))
	}
	passAt(t, b2, clock, tieredSnap(100)) // the later write
	cs := f.records.Agents[3].ConfigClaims()
	if v, _ := localRetention(f, "tiered"); v != lowered || len(cs) != 1 || cs[0].Value != lowered || ledger.ShowValue(cs[0].Orig) != "1000" ||
		len(f.records.Agents[2].Configs) != 0 {
		t.Fatalf("the test needs broker 3's claim at %s on the operator's 1000 in place, broker 2's given up: %q %+v %+v", lowered, v, cs, f.records.Agents[2].Configs)
	}
	// The topic is lost; broker 3's agent restarts; broker 1 writes back
	// its older copy, the new process takes it over, then broker 2
	// writes the later write in.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	passAfter(t, b1, clock, time.Second, tieredSnap(100))
	if r := f.records.Agents[3]; !r.Restored || len(r.Configs) != 1 || r.Configs[0].Orig != nil {
		t.Fatalf("the test needs broker 1 writing back its older copy of broker 3's record: %+v", r)
	}
	passAt(t, b3, clock, tieredSnap(100))
	if r := f.records.Agents[3]; len(r.Inherits) != 1 {
		t.Fatalf("the test needs the new process taking the copy over: %+v", r)
	}
	if v, ok := localRetention(f, "tiered"); v != lowered {
		t.Errorf("R8.5/the claim taken over from a peer's copy restored at once: %q (set %v), want %s kept", v, ok, lowered)
	}
	passAt(t, b2, clock, tieredSnap(100))
	for range 15 {
		passAfter(t, b3, clock, time.Second, tieredSnap(100))
		passAt(t, b1, clock, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); !ok || v != "1000" {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q (set %v) after calm, want the operator's 1000: %+v", v, ok, f.records.Agents[3])
	}
}
