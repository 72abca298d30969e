package enforcer

import (
	"testing"
	"time"
)

// R8.8, R7.3 (lease fencing): an instance without a live lease reads the
// ledger before it writes its record, when its pass did not read it (a
// log dir switching protection on uses the records read before, R8.4;
// or the pass's read failed). Another instance for the broker took the
// lease since its last read and purged up to the hour's cap: the record
// it would have written over holds those purges. It stands by, writes
// nothing and purges nothing (found by the simulation, duplicate_agent,
// seed 718: the second instance's protection claim, written from a stale
// read, replaced the first's record and its purges, and the second then
// purged a fresh hour's cap beside them).
func TestR8_8InstanceWithoutLeaseReadsBeforeItsFirstWrite(t *testing.T) {
	// In the protect band: a claim to write, and purges.
	x := newLeaseFixture(t, 9700, 10*time.Second)
	f, clock, pass := x.f, x.clock, x.pass
	// At most one segment past the hour's cap (500 bytes: offset 50).
	const maxLSO = 60
	a, _ := x.instance("pod-a")
	b, regB := x.instance("pod-b")
	// Both read the ledger while the log dir is calm: no record, no lease.
	clock.tick(10 * time.Second)
	pass(a)
	pass(b)
	x.fill()
	// pod-a protects and purges up to the hour's cap; pod-b makes no pass.
	for range 4 {
		clock.tick(10 * time.Second)
		pass(a)
	}
	if r := f.records.Agents[1]; r.Instance != "pod-a" || len(r.Purged) == 0 || x.lso() < 40 {
		t.Fatalf("the test needs pod-a's record with its purges: %+v, log start offset %d", r, x.lso())
	}
	// pod-b's pass: its log dir switches protection on, on the records
	// it read while calm.
	clock.tick(10 * time.Second)
	pass(b)
	if r := f.records.Agents[1]; r.Instance != "pod-a" || len(r.Purged) == 0 {
		t.Errorf("R8.8/pod-b wrote over pod-a's record (lease live, purges recorded) without reading it: %+v", r)
	}
	if v := gather(t, regB, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R8.8/pod-b purged %v unexpired bytes while pod-a held the lease", v)
	}
	if v := gather(t, regB, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-b's standby %v once it read pod-a's lease", v)
	}
	if lso := x.lso(); lso > maxLSO {
		t.Fatalf("R7.3/log start offset %d: two instances purged past the hour's cap (offset %d)", lso, maxLSO)
	}
	// Both go on: pod-a renews, pod-b stands by; the caps hold.
	for range 6 {
		clock.tick(10 * time.Second)
		pass(a)
		pass(b)
	}
	if lso := x.lso(); lso > maxLSO {
		t.Fatalf("R7.3/log start offset %d: two instances purged past the hour's cap (offset %d)", lso, maxLSO)
	}
}
