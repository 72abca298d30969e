//go:build integration

package enforcer_test

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
)

// R8.8, R7.3 (lease fencing) on a real broker: of two enforcing instances
// for one broker, the one that purges writes its record first, with its
// instance and a lease, and reads it back from the ownership topic; the
// other reads that lease and stands by, purging nothing, while no claim
// (no write protection) is in place.
func TestR8_8SecondInstancePurgesNothingWhileTheFirstHoldsTheLease(t *testing.T) {
	const (
		topic = "fence-purge"
		own   = "__kdg_test_fence"
	)
	shared.CreateTopic(t, topic, 2, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 2, rounds: 6, records: 30, size: 1000})

	capacity := &fixedCapacity{}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	capacity.set(1 << 40)
	used := src.ScanOnce().LogDirs[0].Usage.UsedBytes
	capacity.set(uint64(float64(used) / 0.8995)) // the top of the purge band, under the protect band
	src.ScanOnce()

	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	before := offsets(t, a.admin, topic, 2)
	if err := a.e.Reconcile(t.Context()); err != nil {
		t.Logf("pod-a's first pass: %v", err)
	}
	if v := metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v == 0 {
		t.Fatal("pod-a purged nothing")
	}
	recs, err := a.admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := recs.Agents[shared.NodeID]
	if r.Instance != "pod-a" || r.Renewed.IsZero() || len(r.Purged) == 0 || r.Claims() {
		t.Fatalf("R8.8/the record read back: instance %q renewed %v purged %v claims %v: want pod-a's lease over its purges, no claim",
			r.Instance, r.Renewed, r.Purged, r.Claims())
	}
	mid := offsets(t, a.admin, topic, 2)
	// More unexpired data to purge: pod-b must still leave it.
	capacity.set(uint64(float64(src.ScanOnce().LogDirs[0].Usage.UsedBytes) / 0.8995))
	src.ScanOnce()
	for range 3 {
		if err := b.e.Reconcile(t.Context()); err != nil {
			t.Logf("pod-b's pass: %v", err)
		}
	}
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-b's protection_standby %v, want 1 while pod-a's lease is live", v)
	}
	if v := metric(b.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R8.8/pod-b purged %v unexpired bytes beside pod-a", v)
	}
	after := offsets(t, a.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R8.8/partition %d's log start moved from %d to %d during pod-b's passes", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	t.Logf("log start offsets %v -> %v (pod-a) -> %v (pod-b standing by)", before, mid, after)
}
