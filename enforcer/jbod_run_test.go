package enforcer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// fakeMoves is the broker's throttle and the moves it was asked for; it
// also keeps the ledger's throttle claims and the order of the calls.
type fakeMoves struct {
	value   string
	set     bool
	moves   []Move
	claims  map[int32]ledger.ThrottleClaim
	calls   []string
	missing bool // the ownership topic does not exist
}

func (f *fakeMoves) Move(_ context.Context, _ int32, ms []Move) (map[string]error, error) {
	f.calls = append(f.calls, "move")
	f.moves = append(f.moves, ms...)
	return map[string]error{}, nil
}
func (f *fakeMoves) Throttle(context.Context, int32) (string, bool, error) {
	return f.value, f.set, nil
}
func (f *fakeMoves) SetThrottle(_ context.Context, _ int32, v string, set bool) error {
	f.calls = append(f.calls, "set:"+v)
	f.value, f.set = v, set
	return nil
}
func (f *fakeMoves) LoadRecords(context.Context) (Records, error) {
	rs := ledger.NewRecords()
	if f.missing {
		return rs, ErrLedgerMissing
	}
	for k, v := range f.claims {
		rs.Throttles[k] = v
	}
	return rs, nil
}
func (f *fakeMoves) StoreThrottle(_ context.Context, c ledger.ThrottleClaim) error {
	f.calls = append(f.calls, "claim")
	f.claims[c.BrokerID] = c
	return nil
}
func (f *fakeMoves) DeleteThrottle(_ context.Context, id int32) error {
	f.calls = append(f.calls, "unclaim")
	delete(f.claims, id)
	return nil
}

// fakeDirs is the cluster's word on broker 1's log dirs: the guard sees
// /a and /b, the broker calls them /kafka/a and /kafka/b.
type fakeDirs struct{ future bool }

func (fakeDirs) ClusterID(context.Context) (string, error) { return "c1", nil }
func (f fakeDirs) IdentityEvidence(context.Context, int32) (agent.IdentityEvidence, error) {
	b := agent.BrokerLogDir{Path: "/kafka/b", TotalBytes: 1000 * mib, UsableBytes: 900 * mib}
	if f.future {
		b.Future = []agent.TopicPartition{{Topic: "big", Partition: 0}}
	}
	return agent.IdentityEvidence{ClusterID: "c1", NodeID: 1, LogDirs: []agent.BrokerLogDir{
		{Path: "/kafka/a", TotalBytes: 1000 * mib, UsableBytes: 200 * mib,
			Partitions: []agent.TopicPartition{{Topic: "big", Partition: 0}, {Topic: "small", Partition: 0}}}, b}}, nil
}

func jbodSnapshot(usedA uint64) *agent.Snapshot {
	live := func(topic string, bytes int64) agent.Partition {
		return agent.Partition{Topic: topic, Kind: agent.KindLive, DiskBytes: bytes}
	}
	return &agent.Snapshot{Time: time.Unix(1e9, 0), Defaults: agent.DefaultTopicConfig(), LogDirs: []agent.LogDir{
		{Path: "/a", BrokerID: 1, ClusterID: "c1", Usage: agent.Usage{CapacityBytes: 1000 * mib, UsedBytes: usedA * mib},
			Partitions: []*agent.Partition{new(live("big", 120*mib)), new(live("small", 10*mib))}},
		{Path: "/b", BrokerID: 1, ClusterID: "c1", Usage: agent.Usage{CapacityBytes: 1000 * mib, UsedBytes: 100 * mib}},
	}}
}

func newTestMover(t *testing.T, enabled bool, f *fakeMoves, ev MoveEvidence, src *staticSource, clock Clock) (*Mover, *prometheus.Registry, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	mv, err := NewMover(Config{Enabled: enabled}, slog.New(slog.NewJSONHandler(&logs, nil)), reg,
		MoverDeps{Snapshots: src, Admin: f, Store: f, Evidence: ev, Clock: clock, Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return mv, reg, &logs
}

// R3.8, R4.4: observe mode says what it would move and changes nothing.
func TestR3_8MoverObserveModeOnlyReports(t *testing.T) {
	f := &fakeMoves{claims: map[int32]ledger.ThrottleClaim{}}
	mv, _, logs := newTestMover(t, false, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(800)}, &clockAt{time.Unix(1e9, 0)})
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("observe mode called %v", f.calls)
	}
	if !strings.Contains(logs.String(), `"msg":"would move partition","component":"mover","topic":"big"`) {
		t.Fatalf("no 'would move' line for big:\n%s", logs)
	}
	if got := testutil.ToFloat64(mv.m.moves.WithLabelValues(MoveResultPlanned)); got != 1 {
		t.Fatalf("planned moves %v, want 1", got)
	}
	if got := testutil.ToFloat64(mv.m.planned.WithLabelValues("/a")); got != 120*mib {
		t.Fatalf("planned bytes of /a %v", got)
	}

	// Observe mode on a cluster where the guard never wrote its ledger
	// reports all the same; enforcing, a missing ledger claims nothing.
	f.missing = true
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(mv.m.moves.WithLabelValues(MoveResultPlanned)); got != 2 {
		t.Fatalf("planned moves %v without a ledger, want 2", got)
	}
	enf, _, _ := newTestMover(t, true, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(800)}, &clockAt{time.Unix(1e9, 0)})
	if err := enf.Pass(t.Context()); !errors.Is(err, ErrLedgerLost) || len(f.calls) != 0 {
		t.Fatalf("enforcing without a ledger: %v, calls %v", err, f.calls)
	}
}

// R3.8, R8.5: enforcing, the claim (with the operator's value) is
// recorded before the throttle is set, the move goes to the broker's path
// of the roomy dir; while it is in flight nothing new starts; once done
// the operator's value is put back, then the claim removed.
func TestR3_8MoverClaimsThrottleMovesAndRestores(t *testing.T) {
	f := &fakeMoves{value: "5000000", set: true, claims: map[int32]ledger.ThrottleClaim{}}
	src := &staticSource{snap: jbodSnapshot(800)}
	clock := &clockAt{time.Unix(1e9, 0)}
	mv, _, _ := newTestMover(t, true, f, fakeDirs{}, src, clock)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantRate := "20971520"
	if strings.Join(f.calls, ",") != "claim,set:"+wantRate+",move" {
		t.Fatalf("calls %v, want the claim first, then the throttle, then the move", f.calls)
	}
	c := f.claims[1]
	if c.Orig == nil || *c.Orig != "5000000" || c.Value != wantRate || c.Key != ThrottleKey {
		t.Fatalf("claim %+v", c)
	}
	if len(f.moves) != 1 || f.moves[0].To != "/kafka/b" || f.moves[0].Topic != "big" {
		t.Fatalf("moves %+v, want big to /kafka/b", f.moves)
	}

	// In flight (a -future log on the broker): nothing new, claim kept.
	f.calls = nil
	mv.d.Evidence = fakeDirs{future: true}
	clock.t = clock.t.Add(time.Second)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("calls while in flight: %v", f.calls)
	}

	// Done: usage fell, no future log.
	mv.d.Evidence = fakeDirs{}
	src.snap = jbodSnapshot(680)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.calls, ",") != "claim,set:5000000,unclaim" {
		t.Fatalf("calls %v, want releasing claim, the operator's value, then the claim removed", f.calls)
	}
	if f.value != "5000000" || !f.set || len(f.claims) != 0 {
		t.Fatalf("throttle %q set %v, claims %v", f.value, f.set, f.claims)
	}
}

// R8.6: a value an operator set while the guard held the throttle stays.
func TestR3_8MoverLeavesAnOperatorsNewThrottle(t *testing.T) {
	orig := "1"
	f := &fakeMoves{value: "777", set: true, claims: map[int32]ledger.ThrottleClaim{
		1: {BrokerID: 1, Key: ThrottleKey, Value: "20971520", Orig: &orig, LeaseMs: 60000}}}
	mv, _, _ := newTestMover(t, true, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(600)}, &clockAt{time.Unix(1e9, 0)})
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.value != "777" || len(f.claims) != 0 {
		t.Fatalf("throttle %q claims %v: want the operator's 777 kept and the claim gone", f.value, f.claims)
	}
}

// R8.1: another broker's claim not renewed for its lease is restored by
// this agent (none of the broker's own value before: deleted).
func TestR3_8MoverPeerRestoresAfterTheLease(t *testing.T) {
	f := &fakeMoves{value: "20971520", set: true, claims: map[int32]ledger.ThrottleClaim{
		2: {BrokerID: 2, Key: ThrottleKey, Value: "20971520", LeaseMs: 60000, Renewed: time.Unix(1e9, 0)}}}
	clock := &clockAt{time.Unix(1e9, 0)}
	mv, _, _ := newTestMover(t, true, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(600)}, clock)
	for _, step := range []time.Duration{0, 30 * time.Second, 31 * time.Second} {
		clock.t = clock.t.Add(step)
		if err := mv.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if step < 31*time.Second && len(f.claims) != 1 {
			t.Fatalf("peer's claim restored %s in, before its lease", step)
		}
	}
	if f.set || len(f.claims) != 0 {
		t.Fatalf("after the lease: throttle %q set %v, claims %v", f.value, f.set, f.claims)
	}
}

// enforcer.relief.move.enabled: false starts nothing, and a claim left from
// before is restored.
func TestR3_8MoverSwitchedOff(t *testing.T) {
	off := false
	f := &fakeMoves{claims: map[int32]ledger.ThrottleClaim{}}
	var logs bytes.Buffer
	mv, err := NewMover(Config{Enabled: true, Relief: ReliefConfig{Move: MoveConfig{Enabled: &off}}}, slog.New(slog.NewJSONHandler(&logs, nil)),
		prometheus.NewRegistry(), MoverDeps{Snapshots: &staticSource{snap: jbodSnapshot(800)}, Admin: f, Store: f,
			Evidence: fakeDirs{}, Clock: &clockAt{time.Unix(1e9, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("calls with moves off: %v", f.calls)
	}
}

// R8.8: a claim of another instance for the same broker, renewed, makes
// this mover stand by; unrenewed for its lease, this one takes it over
// (keeping the operator's value it recorded).
func TestR3_8MoverSecondInstanceStandsBy(t *testing.T) {
	orig := "5000000"
	f := &fakeMoves{value: "20971520", set: true, claims: map[int32]ledger.ThrottleClaim{
		1: {BrokerID: 1, Instance: "other", Key: ThrottleKey, Value: "20971520", Orig: &orig, LeaseMs: 60000, Renewed: time.Unix(1e9, 0)}}}
	clock := &clockAt{time.Unix(1e9, 0)}
	mv, _, _ := newTestMover(t, true, f, fakeDirs{}, &staticSource{snap: jbodSnapshot(800)}, clock)
	for _, step := range []time.Duration{0, 30 * time.Second, 29 * time.Second} {
		clock.t = clock.t.Add(step)
		if err := mv.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(f.calls) != 0 {
			t.Fatalf("standing by, %s in: calls %v", step, f.calls)
		}
	}
	clock.t = clock.t.Add(2 * time.Second)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := f.claims[1]
	if c.Instance != "test" || c.Orig == nil || *c.Orig != orig || len(f.moves) != 1 {
		t.Fatalf("after the lease: claim %+v, moves %v", c, f.moves)
	}
	f.calls = nil
	clock.t = clock.t.Add(time.Second)
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// movedDirs is the broker's word once big/0 has moved to /kafka/b (the
// swap is done), or, moving, while it is copied there; the scan may not
// have seen either yet.
type movedDirs struct {
	fakeDirs
	moving bool
}

func (d movedDirs) IdentityEvidence(context.Context, int32) (agent.IdentityEvidence, error) {
	tps := func(topics ...string) []agent.TopicPartition {
		var out []agent.TopicPartition
		for _, t := range topics {
			out = append(out, agent.TopicPartition{Topic: t})
		}
		return out
	}
	a := agent.BrokerLogDir{Path: "/kafka/a", TotalBytes: 1000 * mib, UsableBytes: 200 * mib, Partitions: tps("small", "a1", "a2", "a3")}
	b := agent.BrokerLogDir{Path: "/kafka/b", TotalBytes: 1000 * mib, UsableBytes: 900 * mib, Partitions: tps("b1", "b2", "b3")}
	if d.moving {
		a.Partitions, b.Future = append(a.Partitions, tps("big")...), tps("big")
	} else {
		b.Partitions = append(b.Partitions, tps("big")...)
	}
	return agent.IdentityEvidence{ClusterID: "c1", NodeID: 1, LogDirs: []agent.BrokerLogDir{a, b}}, nil
}

// swapSnapshot is jbodSnapshot(800) with a few more partitions in each
// dir, so that both dirs are confirmed by their partitions while the
// broker and the scan disagree on big/0.
func swapSnapshot() *agent.Snapshot {
	s := jbodSnapshot(800)
	for i, topics := range [][]string{{"a1", "a2", "a3"}, {"b1", "b2", "b3"}} {
		for _, t := range topics {
			s.LogDirs[i].Partitions = append(s.LogDirs[i].Partitions, &agent.Partition{Topic: t, Kind: agent.KindLive, DiskBytes: mib})
		}
	}
	return s
}

// R3.8, R7.1: a scan taken while a move swapped (the moved partition
// still live in its old dir, no -future log anywhere) starts no move: not
// of the partition the broker keeps elsewhere now, nor of another one
// for the excess its old log still shows; the claim of the move that
// ended is released. Found by the real-cluster test, which saw the same
// partition moved twice.
func TestR3_8R7_1MoverStartsNothingOnAScanTheSwapOutran(t *testing.T) {
	orig := "5000000"
	f := &fakeMoves{value: "20971520", set: true, claims: map[int32]ledger.ThrottleClaim{
		1: {BrokerID: 1, Instance: "test", Key: ThrottleKey, Value: "20971520", Orig: &orig, LeaseMs: 60000, Renewed: time.Unix(1e9, 0)}}}
	mv, _, logs := newTestMover(t, true, f, movedDirs{}, &staticSource{snap: swapSnapshot()}, &clockAt{time.Unix(1e9, 0)})
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.moves) != 0 || strings.Join(f.calls, ",") != "claim,set:5000000,unclaim" {
		t.Fatalf("moves %+v, calls %v: want none started and the claim released", f.moves, f.calls)
	}
	if !strings.Contains(logs.String(), `"reason":"in_flight"`) {
		t.Fatalf("no in_flight skip logged:\n%s", logs)
	}

	// The broker's move seen only by the broker (the scan shows no
	// -future log yet): nothing starts either.
	f.calls = nil
	mv.d.Evidence = movedDirs{moving: true}
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.moves) != 0 || len(f.calls) != 0 {
		t.Fatalf("moves %+v, calls %v while the broker moves big/0", f.moves, f.calls)
	}
}
