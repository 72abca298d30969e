package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
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
	C, O := agent.StateClosed, agent.StateOpen
	var segs []agent.Segment
	for i := range 30 {
		segs = append(segs, sized(int64(i)*10, i, C, 100))
	}
	segs = append(segs, sized(300, 30, O, 100))
	// In the protect band: a claim to write, and purges.
	full := snap(9700, 10000, part("a", 0, 0, 310, segs...))
	calm := snap(5000, 10000, part("a", 0, 0, 310, segs...))
	f := newFakeAdmin(full)
	clock := &monoClock{wall: t0}
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Interval: 10 * time.Second,
		Protection: ProtectionConfig{LeaseDuration: time.Minute},
		Purge:      PurgeConfig{MaxPercentPerPass: 2, MaxPercentPerHour: 5, MaxPercentPerDay: 10, OtherBytesPercent: 100}}
	srcs := map[*Enforcer]*staticSource{}
	newAs := func(instance string) (*Enforcer, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		src := &staticSource{snap: calm, ch: make(chan struct{}, 1)}
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src,
			Admin: f, Clock: clock, Evidence: newFakeEvidence(full), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		srcs[e] = src
		return e, reg
	}
	pass := func(e *Enforcer) {
		clock.at(full)
		clock.at(calm)
		_ = e.Reconcile(t.Context())
	}
	// At most one segment past the hour's cap (500 bytes: offset 50).
	const maxLSO = 60
	a, _ := newAs("pod-a")
	b, regB := newAs("pod-b")
	// Both read the ledger while the log dir is calm: no record, no lease.
	clock.tick(10 * time.Second)
	pass(a)
	pass(b)
	srcs[a].set(full)
	srcs[b].set(full)
	// pod-a protects and purges up to the hour's cap; pod-b makes no pass.
	for range 4 {
		clock.tick(10 * time.Second)
		pass(a)
	}
	if r := f.records.Agents[1]; r.Instance != "pod-a" || len(r.Purged) == 0 || f.lso[TopicPartition{"a", 0}] < 40 {
		t.Fatalf("the test needs pod-a's record with its purges: %+v, log start offset %d", r, f.lso[TopicPartition{"a", 0}])
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
	if lso := f.lso[TopicPartition{"a", 0}]; lso > maxLSO {
		t.Fatalf("R7.3/log start offset %d: two instances purged past the hour's cap (offset %d)", lso, maxLSO)
	}
	// Both go on: pod-a renews, pod-b stands by; the caps hold.
	for range 6 {
		clock.tick(10 * time.Second)
		pass(a)
		pass(b)
	}
	if lso := f.lso[TopicPartition{"a", 0}]; lso > maxLSO {
		t.Fatalf("R7.3/log start offset %d: two instances purged past the hour's cap (offset %d)", lso, maxLSO)
	}
}
