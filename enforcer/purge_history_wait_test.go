package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/prometheus/client_golang/prometheus"
)

// unknownHistoryFixture: broker 1's agent (instance pod-a) purged 200
// bytes (the pass's cap; the hour's is 500), the ownership topic was
// lost (broker 2's agent saw it), the agent died, and the topic was
// created again, empty: no live process remembers broker 1's record, and
// broker 2's record says the topic was lost within the day.
type unknownHistoryFixture struct {
	t     *testing.T
	clock *monoClock
	s     *agent.Snapshot
	f     *fakeAdmin
	cfg   Config
	peer  *Enforcer
}

func newUnknownHistoryFixture(t *testing.T, used uint64) *unknownHistoryFixture {
	clock, s, f, cfg := purgeCapSetup()
	s.LogDirs[0].Usage.UsedBytes, s.LogDirs[0].Usage.AvailableBytes = used, 10000-used
	x := &unknownHistoryFixture{t: t, clock: clock, s: s, f: f, cfg: cfg}
	a, reg := x.process("pod-a", true)
	x.pass(a)
	if first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); first != 200 {
		t.Fatalf("first pass purged %v, want 200 (the pass's cap)", first)
	}
	f.mu.Lock()
	f.ledgerErr = ledger.ErrLedgerLost
	f.mu.Unlock()
	_, calm := protectSnaps()
	x.peer, _ = enforcerAs(t, 2, cfg, calm(), f, clock)
	x.pass(x.peer)
	f.mu.Lock()
	f.ledgerErr = nil
	f.records = ledger.NewRecords()
	clear(f.acls)
	f.mu.Unlock()
	x.pass(x.peer)
	if r, ok := f.records.Agents[2]; !ok || r.LedgerLost.IsZero() {
		t.Fatalf("the peer that found the topic lost did not say so in its record: %+v", r)
	}
	return x
}

// process starts a new process of broker 1's agent, instance name;
// enforcing or in observe mode.
func (x *unknownHistoryFixture) process(name string, enforcing bool) (*Enforcer, *prometheus.Registry) {
	x.t.Helper()
	reg := prometheus.NewRegistry()
	cfg := x.cfg
	cfg.Enabled = enforcing
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: x.s, ch: make(chan struct{}, 1)},
		Admin: x.f, Clock: x.clock, Evidence: newFakeEvidence(x.s), Instance: name})
	if err != nil {
		x.t.Fatal(err)
	}
	return e, reg
}

// pass runs a pass of e an interval after the last.
func (x *unknownHistoryFixture) pass(e *Enforcer) {
	x.clock.tick(DefaultInterval)
	x.clock.at(x.s)
	_ = e.Reconcile(x.t.Context())
}

// R7.3, R8.7: a process that found no record of its own waits a lease and
// a pass for its purge history; killed before the wait's end, it leaves
// the record it wrote meanwhile, which holds none of its earlier
// processes' purges. Its successor reads that record as its own: it
// counts its purges, and waits as if it had found no record (then, the
// topic lost within the day, counts the caps spent) instead of taking
// the empty history as known (found by the simulation, seed 4296 of the
// default mix: broker 1's agent purged 56 MiB, the topic was deleted
// twice, the process between lived less than its wait, and the next one
// purged 24 MiB at once: 80 MiB in an hour against 51 MiB).
func TestR7_3R8_7RecordWrittenDuringTheHistoryWaitIsNoHistory(t *testing.T) {
	x := newUnknownHistoryFixture(t, 9500)
	b, regB := x.process("pod-a", true)
	for range 2 { // 20 s: within the wait (a lease and a pass)
		x.pass(b)
		x.pass(x.peer)
	}
	if got := gather(t, regB, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the process waiting for its history purged %v unexpired bytes, want 0", got)
	}
	r, ok := x.f.records.Agents[1]
	if !ok || r.Instance != "pod-a" {
		t.Fatalf("the test needs the waiting process's record written (%v): %+v", ok, r)
	}
	if !r.PurgesUnknown {
		t.Errorf("R7.3/the waiting process's record is not marked purges_unknown: %+v", r)
	}
	// Killed before its wait's end; the next process reads its record.
	c, regC := x.process("pod-a", true)
	x.pass(c)
	if b := gather(t, regC, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_history} is %v at the successor's first pass, want 1 (it waits too)", b)
	}
	for range 16 { // 160 s: past the wait
		x.pass(c)
		x.pass(x.peer)
	}
	if got := gather(t, regC, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the successor purged %v unexpired bytes (200 before the loss; hour cap 500), want 0 (the caps spent: its history unknown, the topic lost within the day)", got)
	}
	if b := gather(t, regC, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); b != 1 {
		t.Fatalf("R7.3/enforcer_blocked{reason=purge_cap} is %v, want 1", b)
	}
	if r := x.f.records.Agents[1]; r.PurgesUnknown {
		t.Fatalf("R7.3/the record written after the wait's end still says purges_unknown: %+v", r)
	}
}

// R7.3, R8.8: an observe-mode instance for the broker never waits for
// its purge history (it purges nothing): a record it writes over its
// broker's, lifting what that record claims once no process renewed it
// for a lease, holds no history of the enforcing instance's processes,
// and ends no wait. The enforcing process waiting for its history,
// stalled meanwhile, finds that record under its broker's key and waits
// on (found by the simulation, seed 5728 of the default mix: the
// observe-mode duplicate wrote its record in the waiting process's first
// pass, the next pass took it as the history of an instance taken over
// from, and purged 24 MiB on top of the 56 MiB purged before the topic
// was lost: 80 MiB in an hour against 51 MiB).
func TestR7_3R8_8ObserveModeRecordEndsNoHistoryWait(t *testing.T) {
	x := newUnknownHistoryFixture(t, 9500)
	a, regA := x.process("pod-a", true)
	obs, _ := x.process("pod-b", false)
	x.pass(a) // no record of its own: it waits; it protects, and writes its record
	x.clock.at(x.s)
	_ = obs.Reconcile(t.Context())
	if !obs.prot.standby {
		t.Fatal("the test needs the observe-mode instance standing by beside pod-a's lease")
	}
	// pod-a stalls for a lease; the observe-mode instance takes over and
	// lifts what pod-a's record claims, writing its own record.
	for range 6 {
		x.pass(obs)
	}
	if r := x.f.records.Agents[1]; r.Instance != "pod-b" {
		t.Fatalf("the test needs the observe-mode instance's record under broker 1: %+v", r)
	}
	if r := x.f.records.Agents[1]; !r.PurgesUnknown {
		t.Errorf("R7.3/the observe-mode instance's record is not marked purges_unknown: %+v", r)
	}
	x.clock.at(x.s)
	_ = a.Reconcile(t.Context()) // within its wait (a lease and a pass)
	if b := gather(t, regA, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
		t.Fatalf("R7.3/enforcer_blocked{reason=purge_history} is %v after the observe-mode instance's write, want 1 (the wait goes on)", b)
	}
	for range 16 { // 160 s: past the wait
		x.pass(a)
		x.pass(x.peer)
	}
	if got := gather(t, regA, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the enforcing process purged %v unexpired bytes (200 before the loss; hour cap 500), want 0 (the caps spent: no history, the topic lost within the day)", got)
	}
}

// R7.3, R8.8 (lease fencing): the read that fences a pass which did not
// read the ledger (readLeaseHolder) counts the purges of another
// instance's record under this broker's key like restoreHistory does:
// one whose writer had not established its history (purges_unknown; here
// another instance that waited for its own, claiming nothing, so without
// a lease) ends no wait there either. The process waiting for its
// history goes on waiting, and, the topic lost within the day, counts
// the caps spent.
func TestR7_3R8_8FencingReadOfAnUnknownHistoryEndsNoWait(t *testing.T) {
	x := newUnknownHistoryFixture(t, 8800) // the purge band: nothing claimed, no lease
	a, reg := x.process("pod-a", true)
	x.pass(a)
	if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
		t.Fatalf("the test needs pod-a waiting for its history: enforcer_blocked{reason=purge_history} is %v", b)
	}
	x.f.mu.Lock()
	x.f.records.Agents[1] = Record{Version: 2, BrokerID: 1, Instance: "pod-b", LeaseMs: 60000, Updated: x.clock.wall, Fresh: true,
		Started: x.clock.wall.Add(-time.Second), PurgesUnknown: true}
	x.f.mu.Unlock()
	// Within the interval: the pass reads the ledger only to fence its
	// purges.
	loads := x.f.loads
	x.clock.tick(DefaultInterval / 2)
	x.clock.at(x.s)
	_ = a.Reconcile(t.Context())
	if x.f.loads != loads+1 || !a.prot.fenceRead.Equal(x.clock.wall) {
		t.Fatalf("the test needs the pass's only ledger read to be the fencing read (%d reads)", x.f.loads-loads)
	}
	for range 16 { // 160 s: past the wait
		x.pass(a)
		x.pass(x.peer)
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/pod-a purged %v unexpired bytes (200 before the loss; hour cap 500), want 0 (the caps spent: no history, the topic lost within the day)", got)
	}
}

// R7.3, R8.8: a process that established its purge history, then stood
// by beside another instance that had not established its own (it found
// no record of its own after the topic was deleted and created again, and
// waits), takes over with the history in its memory: that instance
// purged no unexpired data, so its record (purges_unknown) lacks nothing,
// and the process purges at once, up to the caps, without a second wait.
func TestR7_3R8_8TakingOverFromAnUnknownHistoryKeepsItsOwn(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	x := &unknownHistoryFixture{t: t, clock: clock, s: s, f: f, cfg: cfg}
	f.live = []int32{1} // no other broker: no wait at the first start
	a, regA := x.process("pod-a", true)
	x.pass(a)
	if got := gather(t, regA, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 200 {
		t.Fatalf("pod-a purged %v, want 200 (the pass's cap)", got)
	}
	f.mu.Lock()
	f.live = []int32{1, 2, 3}
	f.records = ledger.NewRecords() // deleted, created again
	clear(f.acls)                   // (pod-b sets its own)
	f.mu.Unlock()
	b, _ := x.process("pod-b", true)
	x.pass(b) // no record of its own: it waits, protects and writes its record
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !r.PurgesUnknown {
		t.Fatalf("the test needs pod-b's record, marked purges_unknown: %+v", r)
	}
	x.clock.at(x.s)
	_ = a.Reconcile(t.Context())
	if !a.prot.standby {
		t.Fatal("the test needs pod-a standing by beside pod-b's lease")
	}
	// pod-b dies; pod-a takes over after a lease.
	for range 7 {
		x.pass(a)
	}
	if a.prot.standby {
		t.Fatal("pod-a did not take over after pod-b's lease")
	}
	if b := gather(t, regA, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 0 {
		t.Errorf("R7.3/pod-a waits for a purge history it holds: enforcer_blocked{reason=purge_history} is %v", b)
	}
	if got := gather(t, regA, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 500 {
		t.Fatalf("R7.3/pod-a purged %v unexpired bytes in all, want 500 (the hour's cap: its own 200 counted, no second wait)", got)
	}
}
