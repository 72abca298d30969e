package simbroker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

const testCapacity = 256 << 20

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// newDemoBroker is the demo's broker; its own retention checks start
// after initialDelay (0: the demo's).
func newDemoBroker(t *testing.T, initialDelay time.Duration) (*Broker, string) {
	t.Helper()
	dir := t.TempDir()
	cfg, _ := Demo(DemoOptions{Dir: dir, Now: t0, Capacity: testCapacity})
	if initialDelay > 0 {
		cfg.InitialDelay = initialDelay
	}
	b, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func newScanner(t *testing.T) *agent.Scanner {
	t.Helper()
	sc, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// scanSnapshot is the agent's view of the broker's log dir at now.
func scanSnapshot(t *testing.T, sc *agent.Scanner, b *Broker, dir string, now time.Time) *agent.Snapshot {
	t.Helper()
	ld := sc.ScanLogDir(dir, nil)
	if errs := sc.Errors(); len(errs) > 0 {
		t.Fatalf("scan errors on the simulated log dir: %v", errs)
	}
	var err error
	if ld.Usage, err = agent.DiskUsage(dir, testCapacity, ld.DiskBytes); err != nil {
		t.Fatal(err)
	}
	s := agent.BuildSnapshot(now, []agent.LogDir{ld}, b.Configs(), agent.Health{})
	return &s
}

// segmentBases lists each live partition's segment base offsets, and the
// eligible ones with their reasons.
func segmentBases(s *agent.Snapshot) (all map[string][]int64, eligible map[string][]int64, reasons map[agent.Reason]bool) {
	all, eligible, reasons = map[string][]int64{}, map[string][]int64{}, map[agent.Reason]bool{}
	for _, p := range s.LogDirs[0].Partitions {
		if p.Kind != agent.KindLive {
			continue
		}
		for _, sg := range p.Segments {
			all[p.Dir] = append(all[p.Dir], sg.BaseOffset)
			if sg.State == agent.StateEligible {
				eligible[p.Dir] = append(eligible[p.Dir], sg.BaseOffset)
				reasons[sg.Reason] = true
			}
		}
	}
	return all, eligible, reasons
}

// TestRetentionAgreesWithClassify: at every retention check the simulated
// broker deletes exactly the segments the agent, scanning the files on
// disk and classifying them with the same configs and clock, reports
// eligible (spec R1.3): by time, by size and below a log start offset
// moved by DeleteRecords. There is one retention rule.
func TestRetentionAgreesWithClassify(t *testing.T) {
	t.Parallel()
	b, dir := newDemoBroker(t, 24*time.Hour) // only the test's checks
	sc := newScanner(t)
	seen := map[agent.Reason]bool{}
	deleted := 0
	now := t0
	for i := range 240 {
		now = now.Add(time.Second)
		if i == 150 {
			res, err := b.Admin().DeleteRecords(t.Context(), "orders", map[int32]int64{1: -1})
			if err != nil || res[1] != nil {
				t.Fatalf("delete records: %v, %v", err, res)
			}
		}
		if err := b.Step(now); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i%10 != 9 {
			continue
		}
		before, want, reasons := segmentBases(scanSnapshot(t, sc, b, dir, now))
		maps.Copy(seen, reasons)
		b.mu.Lock()
		err := b.retentionCheck(now)
		b.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		after, _, _ := segmentBases(scanSnapshot(t, sc, b, dir, now))
		for pdir, bases := range before {
			var gone []int64
			for _, base := range bases {
				if !slices.Contains(after[pdir], base) {
					gone = append(gone, base)
				}
			}
			if !slices.Equal(gone, want[pdir]) {
				t.Errorf("t+%ds %s: the broker deleted %v, the agent says %v are eligible", i+1, pdir, gone, want[pdir])
			}
			deleted += len(gone)
		}
	}
	for _, r := range []agent.Reason{agent.ReasonRetentionTime, agent.ReasonRetentionSize, agent.ReasonLogStartOffset} {
		if !seen[r] {
			t.Errorf("no segment was eligible by %s: the test did not exercise it", r)
		}
	}
	if deleted < 10 {
		t.Errorf("only %d segments deleted", deleted)
	}
}

// TestAdminDeleteRecords: each partition gets its own result, as Kafka
// answers DeleteRecords; the log start offset only moves up and never
// past the high watermark.
func TestAdminDeleteRecords(t *testing.T) {
	t.Parallel()
	b, _ := newDemoBroker(t, 0)
	a := b.Admin()
	ctx := t.Context()
	offs, err := a.Offsets(ctx, []enforcer.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "nope", Partition: 0}})
	if err != nil {
		t.Fatal(err)
	}
	o := offs[enforcer.TopicPartition{Topic: "orders", Partition: 0}]
	if len(offs) != 1 || o.LogStart != 0 || o.HighWatermark <= 0 {
		t.Fatalf("offsets %v", offs)
	}
	tests := []struct {
		name   string
		topic  string
		part   int32
		offset int64
		want   error
		lso    int64
	}{
		{"moves up", "orders", 0, 100, nil, 100},
		{"never down", "orders", 0, 50, nil, 100},
		{"past the high watermark", "orders", 0, o.HighWatermark + 1, ErrOffsetOutOfRange, 100},
		{"-1 is the high watermark", "orders", 0, -1, nil, o.HighWatermark},
		{"unknown partition", "orders", 9, 10, ErrUnknownTopicOrPartition, -1},
		{"compacted topic", "user-profiles", 0, 1, ErrPolicyViolation, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := a.DeleteRecords(ctx, tt.topic, map[int32]int64{tt.part: tt.offset})
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(res[tt.part], tt.want) {
				t.Errorf("result %v, want %v", res[tt.part], tt.want)
			}
			if tt.lso >= 0 {
				if got := b.State().LogStart[enforcer.TopicPartition{Topic: tt.topic, Partition: tt.part}]; got != tt.lso {
					t.Errorf("log start %d, want %d", got, tt.lso)
				}
			}
		})
	}
	// The next retention check removes every segment wholly below the log
	// start offset: all but the active one.
	log := b.partition("orders", 0).log
	active := log.Segments()[len(log.Segments())-1].BaseOffset
	b.mu.Lock()
	err = b.retentionCheck(t0)
	b.mu.Unlock()
	if segs := log.Segments(); err != nil || len(segs) != 1 || segs[0].BaseOffset != active {
		t.Errorf("after the retention check: %v, segments %+v, want only the active one from %d", err, segs, active)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.DeleteRecords(cancelled, "orders", map[int32]int64{0: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestAdminProtection: a DENY WRITE binding for every principal refuses
// the topic's producers until it is deleted; the default producer quota
// caps each topic's producer; ownership records round-trip.
func TestAdminProtection(t *testing.T) {
	t.Parallel()
	b, _ := newDemoBroker(t, 0)
	a := b.Admin()
	ctx := t.Context()
	deny := ledger.ACL{Topic: "orders", Principal: ledger.AnyPrincipal, Host: "*", Operation: ledger.OpWrite, Permission: ledger.PermDeny}
	if err := a.CreateACLs(ctx, []ledger.ACL{deny}); err != nil {
		t.Fatal(err)
	}
	end := func(topic string) int64 { return b.partition(topic, 0).log.LogEndOffset() }
	o0, p0 := end("orders"), end("payments.v1")
	now := t0.Add(10 * time.Second)
	if err := b.Step(now); err != nil {
		t.Fatal(err)
	}
	if end("orders") != o0 || end("payments.v1") == p0 {
		t.Errorf("with DENY WRITE on orders: orders %d -> %d, payments %d -> %d", o0, end("orders"), p0, end("payments.v1"))
	}
	if st := b.State(); !slices.Equal(st.Refused, []string{"orders"}) || len(st.ACLs) != 1 || st.ACLs[0].Pattern != ledger.PatternLiteral {
		t.Errorf("state %+v", st)
	}
	acls, err := a.TopicACLs(ctx)
	if err != nil || len(acls) != 1 {
		t.Fatalf("acls %v, %v", acls, err)
	}
	if err := a.DeleteACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}
	if err := a.SetDefaultProducerQuota(ctx, 3000); err != nil { // 1000 B/s per orders partition
		t.Fatal(err)
	}
	if q, err := a.DefaultProducerQuota(ctx); q != 3000 || err != nil {
		t.Errorf("quota %d, %v", q, err)
	}
	o1 := end("orders")
	if err := b.Step(now.Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := end("orders") - o1; got <= 0 || got > 20*1000/100 {
		t.Errorf("orders-0 took %d records in 20 s under a 1000 B/s quota (100-byte records)", got)
	}
	if err := a.RemoveDefaultProducerQuota(ctx); err != nil || len(b.State().Refused) != 0 || b.State().ProducerByteRate != 0 {
		t.Errorf("after lifting: %v, %+v", err, b.State())
	}
	shape := ledger.Shape{Deny: []string{ledger.AnyPrincipal}}
	own := ledger.Record{BrokerID: 1, LogDirs: []string{"/d"}, Owned: []ledger.Owned{{Kind: ledger.OwnedACL, Shape: &shape, Topics: []string{"orders"}}}}
	if err := a.StoreRecord(ctx, own); err != nil {
		t.Fatal(err)
	}
	own.LogDirs[0] = "/changed"
	if err := a.StoreLift(ctx, ledger.Lift{ID: "l", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := a.LoadRecords(ctx)
	if err != nil || len(got.Agents) != 1 || got.Agents[1].LogDirs[0] != "/d" || len(got.Agents[1].ACLTopics()) != 1 || got.Lifts[1].ID != "l" {
		t.Errorf("records %+v, %v", got, err)
	}
}
