package enforcer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// recreatingAdmin is a fakeAdmin whose Prepare creates a missing
// ownership topic again, empty: reads succeed from then on (the Sarama
// adapter's Prepare). failWrite, when set, fails the record write it
// counts down to (a timeout; taking effect first when lostReply).
type recreatingAdmin struct {
	*fakeAdmin
	failWrite int
	lostReply bool
}

func (a *recreatingAdmin) Prepare(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if errors.Is(a.ledgerErr, ErrLedgerMissing) {
		a.ledgerErr = nil
	}
	return nil
}

func (a *recreatingAdmin) StoreRecord(ctx context.Context, r Record) error {
	if a.failWrite > 0 {
		if a.failWrite--; a.failWrite == 0 {
			if a.lostReply {
				_ = a.fakeAdmin.StoreRecord(ctx, r)
			}
			return errors.New("StoreRecord: context deadline exceeded")
		}
	}
	return a.fakeAdmin.StoreRecord(ctx, r)
}

// R7.3, R8.8: the pass that finds the ownership topic missing (its read
// before lowering a tiered topic's local retention) creates it again,
// switches protection on with the records read before (R8.4) and writes
// its record into the new topic; its purges are then recorded first, as
// with a ledger: that record is what a second instance for the broker
// takes over from once the lease runs out (found by the simulation, seed
// 33311 of the default mix: agent-1 wrote its record into the topic
// created again, purged 24 MiB unrecorded under its lease, and failed
// every call after; agent-1b took over from the record without them and
// purged 40 MiB more, 64 MiB in the hour against 51). When the write of
// the purges fails, they wait: made, they would be in no record the
// topic holds. A write whose reply was lost counts as written.
func TestR7_3R8_8PurgeAfterARecordWrittenWhileTheLedgerIsLostIsRecordedFirst(t *testing.T) {
	for _, c := range []lostLedgerWrite{
		{name: "recorded", wantA: 400},
		{name: "the purges' write fails", failWrite: 2, wantA: 200},
		{name: "the protection write's reply lost", failWrite: 1, lostReply: true, wantA: 400},
	} {
		t.Run(c.name, func(t *testing.T) { purgeAfterALostLedgerWrite(t, c) })
	}
}

// lostLedgerWrite: the record write of pod-a's pass in the topic created
// again that fails (1: its protection record, 2: the record of its
// purges; 0: none), whether it takes effect, and what pod-a purges in
// all (200 before the loss).
type lostLedgerWrite struct {
	name      string
	failWrite int
	lostReply bool
	wantA     float64
}

// purgeAfterALostLedgerWrite: pod-a and pod-b for broker 1; pod-a purges
// and pod-b stands by; the topic is deleted, pod-a's next pass writes its
// record into the topic created again (with c's failure) and purges, and
// pod-a dies; pod-b takes over. The two purge no more than the hour's
// cap.
func purgeAfterALostLedgerWrite(t *testing.T, c lostLedgerWrite) {
	C, O := agent.StateClosed, agent.StateOpen
	var segs []agent.Segment
	for i := range 30 {
		segs = append(segs, sized(int64(i)*10, i, C, 100))
	}
	segs = append(segs, sized(300, 30, O, 100))
	a0 := func() agent.Partition { return part("a", 0, 0, 310, segs...) }
	calm := snap(5000, 10000, a0())
	purging := snap(8700, 10000, a0()) // the purge band: purges, no protection
	// The protect band, with a tiered topic to lower: the pass reads the
	// ledger again before it lowers (readConfigs).
	full := withTiered(snap(9500, 10000, a0(), tieredPart(0, 5, 4)))
	f := newFakeAdmin(full)
	admin := &recreatingAdmin{fakeAdmin: f}
	clock := &monoClock{wall: t0}
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Interval: 10 * time.Second,
		Protection: ProtectionConfig{LeaseDuration: time.Minute},
		Purge:      PurgeConfig{MaxPercentPerPass: 2, MaxPercentPerHour: 5, MaxPercentPerDay: 10, OtherBytesPercent: 100}}
	srcs := map[*Enforcer]*staticSource{}
	instance := func(name string) (*Enforcer, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		src := &staticSource{snap: calm, ch: make(chan struct{}, 1)}
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src,
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(full), Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		srcs[e] = src
		return e, reg
	}
	pass := func(e *Enforcer, s *agent.Snapshot) {
		clock.at(s)
		srcs[e].set(s)
		_ = e.Reconcile(t.Context())
	}
	purged := func(reg *prometheus.Registry) float64 {
		return gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
	}
	a, regA := instance("pod-a")
	b, regB := instance("pod-b")
	clock.tick(10 * time.Second)
	pass(a, calm)
	pass(b, calm)
	// pod-a purges in the purge band (recorded, its lease renewed);
	// pod-b reads its record and stands by.
	clock.tick(10 * time.Second)
	pass(a, purging)
	pass(b, purging)
	if got := purged(regA); got != 200 || !b.prot.standby {
		t.Fatalf("the test needs pod-a purging (%v, want 200: the pass's cap) and pod-b standing by (%v)", got, b.prot.standby)
	}
	// The topic is deleted. pod-a's next pass switches protection on,
	// finds the topic missing at its read before lowering, creates it
	// again, writes its record into it and purges; then it fails every
	// call (it makes no pass again).
	f.mu.Lock()
	f.records, f.ledgerErr = ledger.NewRecords(), ErrLedgerMissing
	f.mu.Unlock()
	admin.failWrite, admin.lostReply = c.failWrite, c.lostReply
	clock.tick(10 * time.Second)
	pass(a, full)
	r := f.records.Agents[1]
	if !a.prot.ledgerLost || r.Instance != "pod-a" || !r.Updated.Equal(clock.wall) || f.quota+int64(len(f.acls)) == 0 {
		t.Fatalf("the test needs pod-a's pass finding the ledger lost (%v), switching protection on (%d bindings, quota %d) and writing its record into the topic created again (%s at %v, now %v)",
			a.prot.ledgerLost, len(f.acls), f.quota, r.Instance, r.Updated, clock.wall)
	}
	if got := purged(regA); got != c.wantA {
		t.Errorf("R7.3/pod-a purged %v unexpired bytes in all, want %v (200 before the loss, and the pass's 200 unless its record could not be written)", got, c.wantA)
	}
	// pod-b takes the broker over once pod-a's lease runs out, within
	// the hour.
	for range 12 {
		clock.tick(10 * time.Second)
		pass(b, full)
	}
	if b.prot.standby || f.records.Agents[1].Instance != "pod-b" {
		t.Fatalf("the test needs pod-b taking over: standby %v, record of %q", b.prot.standby, f.records.Agents[1].Instance)
	}
	if got := purged(regA) + purged(regB); got > 500 {
		t.Errorf("R7.3/pod-a and pod-b purged %v unexpired bytes in the hour (pod-a %v, pod-b %v), over the hour's cap of 500: pod-a's purges after its write into the topic created again were not in its record", got, purged(regA), purged(regB))
	}
}
