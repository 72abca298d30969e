package agent

import (
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// staggeredLoop is a loop over a log dir of topics x partitions, started,
// whose retention boundaries pass one topic at a time (each topic's
// segments a minute older than the last's), on the clock it returns.
func staggeredLoop(tb testing.TB, topics int, partitions int32) (*loop, *atomic.Int64) {
	now := time.Now().Truncate(time.Millisecond)
	dir := filepath.Join(tb.TempDir(), "logs")
	spec := logdirgen.Spec{Now: now, NodeID: 1, Sparse: true}
	for t := range topics {
		segs := []logdirgen.Segment{
			{Bytes: 1 << 20, Age: 2*time.Hour + time.Duration(t)*time.Minute},
			{Bytes: 1 << 20, Age: time.Hour + time.Duration(t)*time.Minute},
			{Bytes: 1 << 19, Age: time.Duration(t) * time.Minute},
		}
		spec.Topics = append(spec.Topics, logdirgen.Topic{Name: fmt.Sprintf("topic.%04d", t), Partitions: partitions, Segments: segs})
	}
	if _, err := logdirgen.Generate(dir, spec); err != nil {
		tb.Fatal(err)
	}
	a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		tb.Fatal(err)
	}
	clock := &atomic.Int64{}
	clock.Store(now.UnixMilli())
	a.UseClock(func() time.Time { return time.UnixMilli(clock.Load()) })
	l := &loop{a: a, rescans: map[string]uint64{}, ownErrs: map[ErrorKind]uint64{}, seed: maphash.MakeSeed()}
	l.expand()
	l.fullScan("start")
	l.reclassifyAll()
	return l, clock
}

// BenchmarkReclassifyTick measures the reclassify tick of an idle log dir
// of 500 topics x 10 partitions whose retention boundaries pass one topic
// at a time: each iteration moves the clock to the next boundary and
// ticks. It reports the partitions classified a tick.
//
//	go test -run '^$' -bench ReclassifyTick ./agent/
func BenchmarkReclassifyTick(b *testing.B) {
	l, clock := staggeredLoop(b, 500, 10)
	d := l.dirs[0]
	var classified int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		next := int64(math.MaxInt64)
		before := map[*partState]int64{}
		for _, ps := range d.parts {
			next = min(next, ps.stableUntilMs)
			before[ps] = ps.classifiedMs
		}
		if next == math.MaxInt64 {
			b.Fatal("no boundary ahead")
		}
		clock.Store(next)
		b.StartTimer()
		l.reclassifyAll()
		b.StopTimer()
		for ps, c := range before {
			if ps.classifiedMs != c {
				classified++
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(classified)/float64(b.N), "classified/tick")
}

// TestReclassifyVisitsOnlyDuePartitions: the reclassify tick classifies
// again exactly the partitions whose retention boundary passed (and the
// result shows the segment past it eligible); after the clock went back,
// those classified later than it are classified again.
func TestReclassifyVisitsOnlyDuePartitions(t *testing.T) {
	l, clock := staggeredLoop(t, 20, 2)
	d := l.dirs[0]
	next := int64(math.MaxInt64)
	for _, ps := range d.parts {
		next = min(next, ps.stableUntilMs)
	}
	before := map[*partState]int64{}
	var due []*partState
	for _, ps := range d.parts {
		before[ps] = ps.classifiedMs
		if ps.stableUntilMs <= next {
			due = append(due, ps)
		}
	}
	if len(due) != 2 {
		t.Fatalf("%d partitions due at the first boundary, want one topic's 2", len(due))
	}
	clock.Store(next)
	l.reclassifyAll()
	for ps, c := range before {
		if got := ps.classifiedMs != c; got != slices.Contains(due, ps) {
			t.Errorf("%s: classified again %v, due %v", ps.part.Dir, got, !got)
		}
	}
	for _, ps := range due {
		if s := ps.part.Segments[0]; s.State != StateEligible || s.Reason != ReasonRetentionTime {
			t.Errorf("%s: first segment %v/%v after its boundary", ps.part.Dir, s.State, s.Reason)
		}
		if ps.stableUntilMs <= next || ps.dueAt == 0 {
			t.Errorf("%s: next boundary %d (due at %d), in the heap %v", ps.part.Dir, ps.stableUntilMs, next, ps.dueAt != 0)
		}
	}
	// The clock back before the due ones' classification: they are
	// classified again (time stands where they were classified before).
	clock.Store(next - 60_000)
	l.reclassifyAll()
	for _, ps := range due {
		if ps.classifiedMs != next-60_000 || ps.part.Segments[0].State == StateEligible {
			t.Errorf("%s: not classified again after the clock went back", ps.part.Dir)
		}
	}
}
