package agent

import (
	"hash/maphash"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// TestPartStateSize: the live loop keeps one partState a partition
// directory (100,000 on a broker of a million segments); the appended
// bytes and the write rate live in its Partition only, so that it fits
// the 64-byte size class, not the 80-byte one.
func TestPartStateSize(t *testing.T) {
	if got := unsafe.Sizeof(partState{}); got > 64 {
		t.Errorf("partState is %d bytes, want at most 64", got)
	}
}

// The appended bytes and the write rate, kept in the partition only,
// follow the appends as they did when partState held a copy: the sum of
// the growth, and a rate that starts at the first interval's and then
// averages each interval's with the previous rate, half and half.
func TestLiveAppendedBytesAndRateFromThePartition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	now := time.Now()
	if _, err := logdirgen.Generate(dir, logdirgen.Uniform(now, 2, 2, 2, 4<<10)); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	a.UseClock(func() time.Time { return clock })
	l := &loop{a: a, rescans: map[string]uint64{}, ownErrs: map[ErrorKind]uint64{}, seed: maphash.MakeSeed()}
	l.expand()
	l.fullScan("start")
	d := l.dirs[0]
	ps, other := d.parts["topic.0000-1"], d.parts["topic.0001-0"]
	if ps == nil || other == nil {
		t.Fatal("no topic.0000-1 or topic.0001-0")
	}
	grow := func(n int64) {
		p := *ps.part
		p.Segments = slices.Clone(p.Segments)
		p.Segments[len(p.Segments)-1].LogBytes += n
		l.set(d, ps, p)
	}
	l.reclassifyAll()
	steps := []struct {
		grow     int64
		after    time.Duration
		appended uint64
		rate     float64
	}{
		{1000, 2 * time.Second, 1000, 500},
		{3000, time.Second, 4000, 0.5*500 + 0.5*3000},
		{0, 4 * time.Second, 4000, 0.5 * (0.5*500 + 0.5*3000)},
		{800, time.Second, 4800, 0.5*0.5*(0.5*500+0.5*3000) + 0.5*800},
	}
	for i, st := range steps {
		if st.grow > 0 {
			grow(st.grow)
		}
		clock = clock.Add(st.after)
		l.reclassifyAll()
		if ps.part.AppendedBytes != st.appended || ps.part.WriteRateBytesPerSecond != st.rate {
			t.Errorf("step %d: appended %d, rate %v; want %d, %v", i, ps.part.AppendedBytes, ps.part.WriteRateBytesPerSecond, st.appended, st.rate)
		}
		if other.part.AppendedBytes != 0 || other.part.WriteRateBytesPerSecond != 0 {
			t.Errorf("step %d: a partition not written to: appended %d, rate %v", i, other.part.AppendedBytes, other.part.WriteRateBytesPerSecond)
		}
	}
}
