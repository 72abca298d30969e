package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.8 (simulation class ledger_delete, seed 1208): a second
// instance for a broker, standing by, remembers the active instance's
// record and its purges. The ownership topic lost that record (deleted
// and created again) just before the standby took over: its read found
// no record of this broker, its own wait for a purge history had ended
// long before, and it purged as a fresh install, a second hour's cap
// (64 MiB in an hour against 51 MiB). The record it remembers, written
// by the instance it takes over from, now counts as a record a peer
// wrote back: its purges are restored and the caps count as spent.
func TestR7_3R8_8StandbyTakingOverFromALostRecordCountsTheCapsSpent(t *testing.T) {
	x := newLeaseFixture(t, 8800, 10*time.Second)
	clock, pass := x.clock, x.pass
	const maxLSO = 60 // at most one segment past the hour's cap
	_, b, regB := x.purgingWithAStandby(1, maxLSO)
	// pod-a dies; the topic loses every record before each of pod-b's
	// reads while it stands by (deleted and created again, as often as
	// that), the one that lets it take over included.
	for range 20 {
		clock.tick(10 * time.Second)
		if b.prot.standby {
			x.f.mu.Lock()
			x.f.records = ledger.NewRecords()
			x.f.mu.Unlock()
		}
		pass(b)
	}
	if b.prot.standby {
		t.Fatal("the test needs pod-b taking over after pod-a's lease")
	}
	// Nothing purged past the wait counts against a fresh hour: the
	// caps count as spent, pod-a's purges among them.
	if v := gather(t, regB, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_cap} %v after taking over from a record the topic lost: want 1 (the caps count as spent)", v)
	}
	if v := gather(t, regB, "kafka_disk_guard_purged_unexpired_window_bytes", map[string]string{"log_dir": "/data/kafka", "window": "1h"}); v < 400 {
		t.Errorf("R7.3/purged_unexpired_window_bytes{window=1h} %v after taking over: want at least pod-a's 400 bytes", v)
	}
	if lso := x.lso(); lso > maxLSO {
		t.Errorf("R7.3/log start offset %d: the instance taking over from a record the topic lost purged past the hour's cap (offset %d)", lso, maxLSO)
	}
}
