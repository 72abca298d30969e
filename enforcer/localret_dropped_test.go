package enforcer

import (
	"errors"
	"testing"
	"time"
)

// R7.4, R8.5 (found by the simulation, seed 34521): an operator changes
// the local.retention.bytes broker 2's agent lowered; its pass drops the
// claim, but the record without it is not written (the ownership topic
// fails the write), so the record it wrote last still holds it. Broker
// 3's agent then lowers the operator's new value. The claim, read back
// from broker 2's record, is dropped again: another claim's value in
// place is not its own, and the operator's value is restored when calm.
// Before the fix the claim counted as the guard's (that other claim's
// value) and stayed in the record, naming the value before the
// operator's change as the one to restore (in the simulation that value,
// 104857600, was restored over the operator's 209715200).
func TestR7_4R8_5ClaimDroppedForAnOperatorsChangeStaysDroppedWhenItsWriteFailed(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(870), f, clock)
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
	f.mu.Lock()
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "1000"}} // the operator's first value
	f.mu.Unlock()
	passAt(t, b2, clock, tieredSnap(870))
	if cs := f.records.Agents[2].ConfigClaims(); len(cs) != 1 {
		t.Fatalf("the test needs broker 2's claim: %+v", f.records.Agents[2].Configs)
	}
	passAt(t, b3, clock, tieredSnap(100))
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = "2000" // the operator's
	f.storeErr = errors.New("injected: record write fails")
	f.mu.Unlock()
	if err := tryPassAfter(t, b2, clock, time.Second, tieredSnap(870)); err == nil {
		t.Fatal("the test needs broker 2's pass failing to write its record")
	}
	if !b2.prot.operatorTopics["tiered"] || len(f.records.Agents[2].ConfigClaims()) != 1 {
		t.Fatalf("the test needs the claim dropped, its record unwritten: %+v", f.records.Agents[2].Configs)
	}
	f.mu.Lock()
	f.storeErr = nil
	f.mu.Unlock()
	passAfter(t, b3, clock, time.Second, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v == "2000" {
		t.Fatal("the test needs broker 3 lowering the operator's value")
	}
	for range 3 {
		passAfter(t, b2, clock, time.Second, tieredSnap(870))
		passAt(t, b3, clock, tieredSnap(870))
	}
	if cs := f.records.Agents[2].ConfigClaims(); len(cs) != 0 {
		t.Errorf("R8.5/broker 2's record still claims the key after the operator's change: %+v", cs)
	}
	for range 5 { // calm
		passAfter(t, b3, clock, time.Second, tieredSnap(100))
		passAt(t, b2, clock, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); !ok || v != "2000" {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q (set %v) after calm, want the operator's 2000", v, ok)
	}
}
