package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// fakeAdmin is an in-memory cluster: log start offsets, ACLs, quota,
// protection records. Tests assert its final state.
type fakeAdmin struct {
	mu       sync.Mutex
	down     bool
	lso      map[TopicPartition]int64
	hw       map[TopicPartition]int64
	acls     map[ACL]bool
	quota    int64
	records  Records
	live     []int32
	everyone AllowEveryone
	noAuthz  bool
	// storeErr fails every record and lift write (an ownership topic under
	// min.insync.replicas).
	storeErr error
	writes   int
	// configs: topic config overrides (topic -> key -> value); gone:
	// topics the cluster no longer has.
	configs map[string]map[string]string
	gone    map[string]bool
	// refuse, when set, makes AlterTopicConfig answer ErrConfigRefused for
	// the values it returns true for (Kafka's LogConfig validation).
	refuse func(topic string, value *string) bool
	// failDeletes, failQuotaRemovals, failAlters, failCreates: the next
	// n calls fail (a right revoked for a minute, a controller move).
	failDeletes, failQuotaRemovals, failAlters, failCreates int
	// offsetsErr fails every offsets read (a partition leader unreachable).
	offsetsErr error
	// ledgerErr fails every records read (ErrLedgerLost: the ownership
	// topic deleted or reshaped).
	ledgerErr error
	// Reads, for tests of what a pass reads.
	loads       int
	offsetCalls [][]TopicPartition
}

func newFakeAdmin(s *agent.Snapshot) *fakeAdmin {
	f := &fakeAdmin{lso: map[TopicPartition]int64{}, hw: map[TopicPartition]int64{}, acls: map[ACL]bool{}, records: ledger.NewRecords(),
		live: []int32{1, 2, 3}, everyone: AllowEveryoneFalse}
	for tp, o := range brokerOffsets(s) {
		f.lso[tp], f.hw[tp] = o.LogStart, o.HighWatermark
	}
	// An agent that ran before: its record is in the ledger (a process
	// that finds none waits a lease and a pass before it purges
	// unexpired data: restoreHistory; tests of that set records).
	f.records.Agents[1] = Record{BrokerID: 1}
	return f
}

var errDown = errors.New("connection refused")

func (f *fakeAdmin) check() error {
	if f.down {
		return errDown
	}
	return nil
}

func (f *fakeAdmin) Offsets(_ context.Context, parts []TopicPartition) (map[TopicPartition]Offsets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.offsetsErr != nil {
		return nil, f.offsetsErr
	}
	f.offsetCalls = append(f.offsetCalls, slices.Clone(parts))
	out := map[TopicPartition]Offsets{}
	for _, tp := range parts {
		out[tp] = Offsets{LogStart: f.lso[tp], HighWatermark: f.hw[tp]}
	}
	return out, nil
}

func (f *fakeAdmin) DeleteRecords(_ context.Context, topic string, offs map[int32]int64) (map[int32]error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	f.writes++
	out := map[int32]error{}
	for p, o := range offs {
		tp := TopicPartition{topic, p}
		if o > f.hw[tp] {
			out[p] = errors.New("OFFSET_OUT_OF_RANGE")
			continue
		}
		f.lso[tp] = max(f.lso[tp], o)
		out[p] = nil
	}
	return out, nil
}

func (f *fakeAdmin) TopicACLs(context.Context) ([]ACL, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.noAuthz {
		return nil, ErrNoAuthorizer
	}
	return slices.Collect(maps.Keys(f.acls)), nil
}

func (f *fakeAdmin) CreateACLs(_ context.Context, acls []ACL) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noAuthz {
		return ErrNoAuthorizer
	}
	if f.failCreates > 0 {
		f.failCreates--
		return errors.New("NOT_CONTROLLER")
	}
	f.writes++
	for _, a := range acls {
		f.acls[ledger.NormACL(a)] = true
	}
	return nil
}

func (f *fakeAdmin) DeleteACLs(_ context.Context, acls []ACL) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDeletes > 0 {
		f.failDeletes--
		return errors.New("CLUSTER_AUTHORIZATION_FAILED")
	}
	f.writes++
	for _, a := range acls {
		delete(f.acls, ledger.NormACL(a))
	}
	return nil
}

func (f *fakeAdmin) DefaultProducerQuota(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.quota, f.check()
}

func (f *fakeAdmin) SetDefaultProducerQuota(_ context.Context, r int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.quota = r
	return nil
}

func (f *fakeAdmin) RemoveDefaultProducerQuota(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failQuotaRemovals > 0 {
		f.failQuotaRemovals--
		return errors.New("REQUEST_TIMED_OUT")
	}
	f.writes++
	f.quota = 0
	return nil
}

func (f *fakeAdmin) LoadRecords(context.Context) (Records, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return Records{}, err
	}
	f.loads++
	if f.ledgerErr != nil {
		return ledger.NewRecords(), f.ledgerErr
	}
	return f.records.Clone(), nil
}

func (f *fakeAdmin) StoreRecord(_ context.Context, r Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.storeErr != nil {
		return f.storeErr
	}
	f.writes++
	// Through the encoding, as the topic holds it.
	data, err := ledger.EncodeRecord(r)
	if err != nil {
		return err
	}
	if f.records.Agents[r.BrokerID], err = ledger.DecodeRecord(data); err != nil {
		return err
	}
	// A decodable value replaces the broker's undecodable ones, as
	// ledger.ApplyRecord reads the topic.
	delete(f.records.Undecodable, r.BrokerID)
	delete(f.records.UndecodableLift, r.BrokerID)
	return nil
}

func (f *fakeAdmin) StoreLift(_ context.Context, l Lift) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.storeErr != nil {
		return f.storeErr
	}
	f.writes++
	f.records.Lifts[l.BrokerID] = l
	return nil
}

func (f *fakeAdmin) LiveBrokers(context.Context) ([]int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.live), f.check()
}

func (f *fakeAdmin) TopicConfigOverrides(_ context.Context, topics []string, key string) (map[string]*string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	out := map[string]*string{}
	for _, t := range topics {
		if f.gone[t] {
			continue
		}
		out[t] = nil
		if v, ok := f.configs[t][key]; ok {
			out[t] = &v
		}
	}
	return out, nil
}

func (f *fakeAdmin) AlterTopicConfig(_ context.Context, topic, key string, value *string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	if f.failAlters > 0 {
		f.failAlters--
		return errors.New("NOT_CONTROLLER")
	}
	f.writes++
	if f.refuse != nil && f.refuse(topic, value) {
		return fmt.Errorf("incremental alter configs of topic %s: %w: INVALID_CONFIG: %s", topic, ErrConfigRefused, ledger.ShowValue(value))
	}
	if f.configs == nil {
		f.configs = map[string]map[string]string{}
	}
	if value == nil {
		delete(f.configs[topic], key)
		return nil
	}
	if f.configs[topic] == nil {
		f.configs[topic] = map[string]string{}
	}
	f.configs[topic][key] = *value
	return nil
}

func (f *fakeAdmin) AllowEveryoneIfNoACLFound(context.Context) (AllowEveryone, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.everyone, f.check()
}

// fakeEvidence is a cluster that confirms the log dirs of node 1 of
// clusterID by path and grants every right.
type fakeEvidence struct {
	mu     sync.Mutex
	down   bool
	dirs   []agent.BrokerLogDir
	report rights.Report
	reads  int
}

func newFakeEvidence(s *agent.Snapshot) *fakeEvidence {
	f := &fakeEvidence{report: rights.Report{Features: rights.Features()}}
	for _, ld := range s.LogDirs {
		f.dirs = append(f.dirs, agent.BrokerLogDir{Path: ld.Path, TotalBytes: -1, UsableBytes: -1})
	}
	return f
}

func (f *fakeEvidence) ClusterID(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.down {
		return "", errDown
	}
	return clusterID, nil
}

func (f *fakeEvidence) BrokerLogDirs(_ context.Context, node int32) ([]agent.BrokerLogDir, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errDown
	}
	if node != 1 {
		return nil, nil
	}
	return slices.Clone(f.dirs), nil
}

func (f *fakeEvidence) Rights(context.Context, rights.Query) (rights.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return rights.Report{}, errDown
	}
	return f.report, nil
}

type staticSource struct {
	mu   sync.Mutex
	snap *agent.Snapshot
	ch   chan struct{}
}

func (s *staticSource) Snapshot() *agent.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}
func (s *staticSource) Updated() <-chan struct{} { return s.ch }

type clockAt struct{ t time.Time }

func (c *clockAt) Now() time.Time { return c.t }

func gather(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m, labels) {
				continue
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// lenientPurge lifts the purge caps and the allowance for other bytes
// (the fixtures' usage is not their partitions' bytes); the floor stays.
var lenientPurge = PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100, OtherBytesPercent: 100}

func newTestEnforcer(t *testing.T, cfg Config, s *agent.Snapshot, admin Admin, clock Clock) (*Enforcer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.BrokerID = new(int32(1))
	if cfg.Purge == (PurgeConfig{}) {
		cfg.Purge = lenientPurge
	}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
		Admin: admin, Clock: clock, Evidence: newFakeEvidence(s)})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg
}

func fullSnapshot() *agent.Snapshot {
	C, O := agent.StateClosed, agent.StateOpen
	return snap(950, 1000,
		part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)),
		part("b", 0, 0, 40, seg(0, 5, C), seg(10, 6, C), seg(20, 7, C), seg(30, 8, O)))
}

func TestReconcileEnforcing(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0})
	for range 3 {
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// 950 of 1000 in the protect band: purge to < 85% = 101 bytes = 2 segments, oldest a-0, a-10.
	if f.lso[TopicPartition{"a", 0}] != 20 || f.lso[TopicPartition{"b", 0}] != 0 {
		t.Errorf("R3.1/log start offsets %v, want a-0 at 20 only", f.lso)
	}
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Errorf("R4.3/acls %v", f.acls)
	}
	if own := f.records.Agents[1]; !slices.Equal(own.ACLTopics(), []string{"a", "b"}) || !slices.Equal(own.LogDirs, []string{dir}) {
		t.Errorf("R4.3/ownership %+v", own)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", map[string]string{"log_dir": dir}); v != 1 {
		t.Errorf("R8.2/write_protection_active %v after the ACLs were read back", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "purge", "result": "ok"}); v != 1 {
		t.Errorf("R3.6/purge actions %v, want 1 (one partition, once: later passes count the bytes as freed)", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 200 {
		t.Errorf("R3.6/unexpired bytes %v, want 200", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_band", map[string]string{"band": "protect"}); v != 1 {
		t.Errorf("band gauge %v", v)
	}
}

func TestReconcileDryRunWritesNothing(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	e, reg := newTestEnforcer(t, Config{}, s, f, &clockAt{t0})
	for range 3 {
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if f.writes != 0 || len(f.acls) != 0 || f.lso[TopicPartition{"a", 0}] != 0 {
		t.Fatalf("R4.4/observe mode wrote: %d writes, acls %v, lso %v", f.writes, f.acls, f.lso)
	}
	// The same plan as enforcement, reported once: 1 purge + 2 protected topics.
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"result": "dry_run"}); v != 3 {
		t.Errorf("R4.4/dry_run actions %v, want 3", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_action_bytes_total", map[string]string{"action": "purge"}); v != 200 {
		t.Errorf("R4.4/would-free bytes %v, want 200", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R3.6/observe mode counted %v unexpired deleted bytes", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
		t.Errorf("observe mode reports protection active")
	}
}

func TestReconcileBlocked(t *testing.T) {
	t.Run("R6/broker unreachable: nothing deleted, blocked metric", func(t *testing.T) {
		s := fullSnapshot()
		f := newFakeAdmin(s)
		f.down = true
		e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0})
		if err := e.Reconcile(t.Context()); err == nil {
			t.Fatal("no error with the broker down")
		}
		if f.lso[TopicPartition{"a", 0}] != 0 {
			t.Fatal("deleted with the broker down")
		}
		if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "broker_unreachable"}); v != 1 {
			t.Errorf("blocked{broker_unreachable} %v", v)
		}
		f.mu.Lock()
		f.down = false
		f.mu.Unlock()
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "broker_unreachable"}); v != 0 {
			t.Errorf("blocked{broker_unreachable} %v after recovery", v)
		}
		if f.lso[TopicPartition{"a", 0}] != 20 {
			t.Errorf("no purge after recovery: %v", f.lso)
		}
	})
	t.Run("R6/stale snapshot: nothing deleted nor protected", func(t *testing.T) {
		s := fullSnapshot()
		f := newFakeAdmin(s)
		e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0.Add(time.Hour)})
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		if f.lso[TopicPartition{"a", 0}] != 0 || len(f.acls) != 0 {
			t.Fatalf("acted on a stale snapshot: %v %v", f.lso, f.acls)
		}
		if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "snapshot_stale"}); v != 1 {
			t.Errorf("blocked{snapshot_stale} %v", v)
		}
		if v := gather(t, reg, "kafka_disk_guard_reconciles_total", map[string]string{"result": "blocked"}); v != 1 {
			t.Errorf("reconciles{blocked} %v", v)
		}
	})
}

func TestReconcileActionBudget(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	var parts []agent.Partition
	for i := range 5 {
		// The newest closed segment is the floor (R7.3): never purged.
		p := part(string(rune('a'+i)), 0, 0, 30, seg(0, i, C), seg(10, 5+i, C), seg(20, 10+i, O))
		p.Segments[0].DiskBytes = 30 // need 150 bytes: all five
		parts = append(parts, p)
	}
	s := snap(999, 1000, parts...)
	f := newFakeAdmin(s)
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, MaxActionsPerInterval: 7, Protection: ProtectionConfig{Strategy: StrategyQuota}}, s, f, clock)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Quota protection (no per-topic ACL action) and 5 purges wanted: all fit in 7.
	moved := 0
	for _, v := range f.lso {
		if v > 0 {
			moved++
		}
	}
	if moved != 5 || f.quota != 1024 {
		t.Fatalf("moved %d, quota %d", moved, f.quota)
	}

	s2 := snap(999, 1000, parts...)
	f2 := newFakeAdmin(s2)
	e2, _ := newTestEnforcer(t, Config{Enabled: true, MaxActionsPerInterval: 2, Protection: ProtectionConfig{Strategy: StrategyQuota}}, s2, f2, clock)
	if err := e2.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	moved = 0
	for tp, v := range f2.lso {
		if v > 0 {
			moved++
			if tp.Topic != "a" && tp.Topic != "b" {
				t.Errorf("budget spent on %s, not on the oldest", tp.Topic)
			}
		}
	}
	if moved != 2 {
		t.Fatalf("R4.4/%d deletions with a budget of 2", moved)
	}
}

func TestScheduleDue(t *testing.T) {
	madrid, _ := time.LoadLocation("Europe/Madrid")
	e, _ := newTestEnforcer(t, Config{Schedule: ScheduleConfig{Time: "04:00", Timezone: "Europe/Madrid"}}, fullSnapshot(), newFakeAdmin(fullSnapshot()),
		&clockAt{time.Date(2026, 11, 29, 3, 0, 0, 0, madrid)})
	cases := []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 11, 29, 3, 59, 59, 0, madrid), false},
		{time.Date(2026, 11, 29, 4, 0, 0, 0, madrid), true},
		{time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC), true}, // 05:00 Madrid
		{time.Date(2026, 11, 29, 2, 59, 0, 0, time.UTC), false},
	}
	for _, c := range cases {
		if got := e.scheduleDue(c.at); got != c.want {
			t.Errorf("R3.1/due at %s: %v, want %v", c.at, got, c.want)
		}
	}
	e.lastScheduled = time.Date(2026, 11, 29, 4, 0, 1, 0, madrid)
	if e.scheduleDue(time.Date(2026, 11, 29, 23, 0, 0, 0, madrid)) {
		t.Error("R3.1/due twice the same day")
	}
	if !e.scheduleDue(time.Date(2026, 11, 30, 4, 0, 0, 0, madrid)) {
		t.Error("R3.1/not due the next day")
	}
}

func TestRunReconcilesOnUpdatesUntilCancelled(t *testing.T) {
	s := fullSnapshot()
	src := &staticSource{snap: s, ch: make(chan struct{}, 1)}
	reg := prometheus.NewRegistry()
	e, err := New(Config{Interval: time.Hour, BrokerID: new(int32(1))}, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src, Admin: newFakeAdmin(s), Clock: &clockAt{t0}, Evidence: newFakeEvidence(s)})
	if err != nil {
		t.Fatal(err)
	}
	// Ten publications before the worker starts coalesce into one pending
	// signal (capacity one, non-blocking sends): whatever the scheduling,
	// they cost one pass besides the pass at start.
	for range 10 {
		select {
		case src.ch <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	passes := func() float64 { return gather(t, reg, "kafka_disk_guard_reconciles_total", nil) }
	waitFor := func(n float64) {
		deadline := time.Now().Add(10 * time.Second)
		for passes() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%v passes, want %v", passes(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(2)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := passes(); n > 3 {
		t.Errorf("%v passes for 10 coalesced signals, want at most 3", n)
	}
}
