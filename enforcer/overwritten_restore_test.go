package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.6, R8.7, R8.8: an instance whose record another instance for its
// broker wrote over never writes its own last record back when the
// ownership topic loses the broker's record: that record is out of date
// (what it claimed is kept as set unrecorded, and forgotten once gone).
// pod-a protected topic a; a peer lifted its expired lease; pod-b took
// over, acknowledged the lift and claimed nothing; the operator froze a
// with the same binding. The topic was deleted and created again: pod-b's
// record, claiming nothing, was not written back, and pod-a, acting
// again, wrote its old record (claiming the binding) from memory, took
// the operator's binding for its own and deleted it on calm (found by the
// simulation, seed 7150: {compacted literal User:* * WRITE DENY}
// removed).
func TestR8_8OverwrittenInstanceNeverWritesBackItsOutdatedRecord(t *testing.T) {
	x := takeOverAfterALift(t)
	f, clock, first, second, calm := x.f, x.clock, x.first, x.second, x.calm
	f.acls[denyAll("a")] = true // the operator's freeze: no record claims it
	for range 3 {
		passAfter(t, first, clock, time.Second, calm())
		passAfter(t, second, clock, time.Second, calm())
	}
	if r := f.records.Agents[1]; r.Instance != "pod-b" || r.Claims() || !f.acls[denyAll("a")] {
		t.Fatalf("the test needs pod-b's record, claiming nothing, over pod-a's, and the operator's binding: %+v %v", r, f.acls)
	}
	// pod-b stops; the ownership topic is deleted and created again.
	// pod-a, calm, has nothing to write: its first read finds no record
	// of broker 1 (pod-b's, claiming nothing, is not written back).
	f.ledgerErr = ledger.ErrLedgerLost
	_ = tryPassAfter(t, first, clock, time.Second, calm())
	f.ledgerErr, f.records = nil, ledger.NewRecords()
	for range 3 {
		_ = tryPassAfter(t, first, clock, time.Second, calm())
		names := false
		f.records.Agents[1].Bindings(nil, func(a ACL) { names = names || a == denyAll("a") })
		if names {
			t.Errorf("R8.8/pod-a wrote back its record that pod-b wrote over: it names the operator's binding %v", denyAll("a"))
		}
	}
	for range 15 {
		_ = tryPassAfter(t, first, clock, time.Second, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.6/the operator's binding %v, made after pod-b wrote over pod-a's record, was deleted by pod-a", denyAll("a"))
	}
}
