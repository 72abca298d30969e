package enforcer

import (
	"errors"
	"fmt"
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

// R7.4, R8.7: an operator changes a lowered local.retention.bytes while
// the ownership topic is lost, and an agent restarted meanwhile lowers
// the operator's value, once the topic is back (empty), to the number
// the stale claim held (the same plan, and it knew no record). A claim
// remembered from the lost record (the agent's own, or a peer's copy of
// it) that shares its value with that claim, made on another original,
// is dropped, never written back: written back, it restored its original
// over the operator's value once the other claim was lifted (found by the
// simulation, ledger_delete, seed 1589: broker 2's own claim, written
// again from memory; seed 658: broker 2's claim, written back by a peer
// and adopted by its restarted agent; seed 1881).
func TestR7_4R8_7ClaimAnOperatorChangedWhileTheLedgerWasLostIsDropped(t *testing.T) {
	for _, peer := range []bool{false, true} {
		t.Run(map[bool]string{false: "own", true: "peer"}[peer], func(t *testing.T) {
			staleClaim(t, peer)
		})
	}
}

// staleClaim: broker 3's agent (peer: broker 2's, whose record broker 3
// reads) lowers tiered's local.retention.bytes (no override); the
// ownership topic is lost, an operator sets the value to 100000 (peer:
// broker 2's agent dies), and the topic comes back empty. Broker 1's
// agent starts and lowers the operator's value to the stale claim's
// number, then broker 3 reads the topic back. No record written back may
// hold the stale claim; once broker 1's claim is lifted (its agent dies)
// and the log dirs calm down, the operator's value is in place.
func staleClaim(t *testing.T, peer bool) {
	t.Helper()
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	owner, b3use := int32(3), tieredSnap(870)
	if peer {
		owner, b3use = 2, tieredSnap(100)
	}
	bo, _ := enforcerAs(t, owner, cfg, tieredSnap(870), f, clock)
	passAt(t, bo, clock, tieredSnap(870))
	lowered, ok := localRetention(f, "tiered")
	if !ok {
		t.Fatalf("broker %d did not lower", owner)
	}
	b3 := bo
	if peer {
		b3, _ = enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
		passAt(t, b3, clock, tieredSnap(100)) // it reads broker 2's record
	}
	f.mu.Lock()
	f.records, f.ledgerErr = ledger.NewRecords(), fmt.Errorf("%w: topic has 3 partitions, want 1", ErrLedgerLost)
	f.configs["tiered"][LocalRetentionBytesKey] = "100000"
	f.mu.Unlock()
	for range 2 {
		if err := tryPassAfter(t, b3, clock, time.Second, b3use); !errors.Is(err, ErrLedgerLost) {
			t.Fatalf("the test needs the ledger lost: %v", err)
		}
	}
	f.mu.Lock()
	f.ledgerErr = nil
	f.mu.Unlock()
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(870), f, clock)
	passAfter(t, b1, clock, time.Second, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != lowered {
		t.Fatalf("the test needs broker 1's value %q equal to broker %d's stale one %q", v, owner, lowered)
	}
	passAfter(t, b3, clock, time.Second, b3use)
	if cs := f.records.Agents[owner].Configs; len(cs) > 0 {
		t.Errorf("R8.7/broker %d's claim on a value an operator changed while the ledger was lost written back: %+v", owner, cs)
	}
	// Broker 1's agent (and a peer's broker 3's) dies: its lease runs
	// out and the owner's agent (restarted, for a peer's) lifts it; then
	// the owner's log dirs calm down.
	if peer {
		bo, _ = enforcerAs(t, owner, cfg, tieredSnap(870), f, clock)
	}
	for range 15 {
		passAfter(t, bo, clock, time.Second, tieredSnap(870))
	}
	if f.records.Live(1, "tiered") {
		t.Fatalf("the test needs broker 1's claim lifted: %+v", f.records.Agents[1])
	}
	for range 5 {
		passAfter(t, bo, clock, time.Second, tieredSnap(100))
	}
	if v, ok := localRetention(f, "tiered"); !ok || v != "100000" {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q (set %v) after calm, want the operator's 100000", v, ok)
	}
}

// R7.4, R8.7: a peer writes an agent's lost record back without the claim
// an operator's change made stale (Records.Shadowed), as the agent last
// wrote it otherwise (the same Updated). The agent, alive, reads that
// copy: it does not hold what the agent wrote (the claim is missing), so
// the agent's memory is filtered as well before its record is written
// again over the copy. Taken for its own last write, the copy left the
// memory unfiltered, the stale claim was written back into the record,
// and an operator's lift restored its original ("not set") over the
// operator's value (found by the simulation, seed 5994).
func TestR7_4R8_7OwnClaimAPeerDroppedFromItsCopyIsNotWrittenAgain(t *testing.T) {
	f := newFakeAdmin(tieredSnap(970))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(970), f, clock)
	passAt(t, b3, clock, tieredSnap(970))
	lowered, ok := localRetention(f, "tiered")
	if !ok {
		t.Fatal("broker 3 did not lower")
	}
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(100), f, clock)
	passAt(t, b2, clock, tieredSnap(100)) // it reads broker 3's record
	f.mu.Lock()
	f.records, f.ledgerErr = ledger.NewRecords(), fmt.Errorf("%w: topic has 3 partitions, want 1", ErrLedgerLost)
	f.configs["tiered"][LocalRetentionBytesKey] = "100000"
	f.mu.Unlock()
	if err := tryPassAfter(t, b3, clock, time.Second, tieredSnap(970)); !errors.Is(err, ErrLedgerLost) {
		t.Fatalf("the test needs the ledger lost: %v", err)
	}
	f.mu.Lock()
	f.ledgerErr = nil
	f.mu.Unlock()
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(970), f, clock)
	passAfter(t, b1, clock, time.Second, tieredSnap(970))
	if v, _ := localRetention(f, "tiered"); v != lowered {
		t.Fatalf("the test needs broker 1's value %q equal to broker 3's stale one %q", v, lowered)
	}
	passAt(t, b2, clock, tieredSnap(100)) // writes broker 3's record back, without the claim
	if r, ok := f.records.Agents[3]; !ok || !r.Restored || len(r.Configs) > 0 {
		t.Fatalf("the test needs broker 3's record written back by broker 2 without the claim: %+v", r)
	}
	passAt(t, b3, clock, tieredSnap(970))
	if cs := f.records.Agents[3].Configs; len(cs) > 0 {
		t.Errorf("R8.7/broker 3's claim on a value an operator changed while the ledger was lost written again: %+v", cs)
	}
}
