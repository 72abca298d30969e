package enforcer

import (
	"testing"
	"time"
)

// R7.3, R8.8, R7.5 (simulation seed 14012 of the default mix): a second
// instance for a broker stands by while the active one purges up to the
// hour's cap; its wall clock jumps two hours ahead; the active instance
// dies and the standby takes over. Aged on its own wall clock, the other
// instance's purges were two hours old, out of the hour's window, and it
// purged a second hour's cap (72 MiB in the hour against 51 MiB). Aged
// on the writer's lease stamp and the time the standby watched it, they
// are minutes old: the hour's cap stays spent.
func TestR7_3R8_8TakingOverAfterAClockJumpKeepsTheOtherInstancesPurgesInTheHour(t *testing.T) {
	x := newLeaseFixture(t, 9700, 10*time.Second)
	clock, pass := x.clock, x.pass
	const maxLSO = 60 // at most one segment past the hour's cap
	_, b, regB := x.purgingWithAStandby(40, maxLSO)
	// pod-a dies; the wall clock jumps two hours ahead.
	clock.jump(2 * time.Hour)
	for range 20 {
		clock.tick(10 * time.Second)
		pass(b)
	}
	if b.prot.standby {
		t.Fatal("the test needs pod-b taking over after pod-a's lease")
	}
	if v := gather(t, regB, "kafka_disk_guard_purged_unexpired_window_bytes", map[string]string{"log_dir": "/data/kafka", "window": "1h"}); v < 400 {
		t.Errorf("R7.3/purged_unexpired_window_bytes{window=1h} %v after taking over: want at least pod-a's 400 bytes", v)
	}
	if lso := x.lso(); lso > maxLSO {
		t.Errorf("R7.3/log start offset %d: the instance taking over after its clock jumped purged past the hour's cap (offset %d)", lso, maxLSO)
	}
}
