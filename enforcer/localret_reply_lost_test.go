package enforcer

import (
	"testing"
	"time"
)

// R7.4, R8.7 (found by the simulation, seed 79475 of the default mix):
// broker 1's agent claims a lowered local retention; its wall clock goes
// back 10 minutes, and its next record, claiming a lower value, takes
// effect with its reply lost (the value is not set). An operator's lift
// of a peer then hands the key back to the lowest live claim: that
// record's. The record in the ownership topic names an earlier time than
// the agent's last confirmed write, but it is a later write of the same
// process: it is kept, and the agent restores the operator's value (none)
// once calm. Before, the agent wrote its last confirmed record over it
// (taken for a peer's older copy), the value in place was in no record,
// was taken for an operator's change, and stayed lowered for good.
func TestR7_4R8_7WriteWhoseReplyWasLostAfterTheClockWentBackIsKept(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	admin := &storeReplyLost{fakeAdmin: f}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	e, _ := enforcerAs(t, 1, cfg, tieredSnap(870), admin, clock)
	passAt(t, e, clock, tieredSnap(870))
	first, ok := localRetention(f, "tiered")
	if !ok {
		t.Fatal("the test needs the agent lowering tiered's local retention")
	}
	clock.t = clock.t.Add(-10 * time.Minute)
	admin.lose = true
	if err := tryPassAfter(t, e, clock, time.Second, tieredSnap(1020)); err == nil {
		t.Fatal("the test needs the record write failing")
	}
	admin.lose = false
	cs := f.records.Agents[1].ConfigClaims()
	if len(cs) != 1 || cs[0].Value == first {
		t.Fatalf("the test needs the record claiming a lower value than %s in place: %+v", first, f.records.Agents[1].Configs)
	}
	// The lift of a peer hands the key back to that claim's value.
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = cs[0].Value
	f.mu.Unlock()
	for range 5 { // calm
		passAfter(t, e, clock, time.Second, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); ok {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q after calm, want the operator's (not set): %+v", v, f.records.Agents[1])
	}
}
