package agent

import (
	"io"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// benchDir generates (once per benchmark) a log dir of partitions x
// segments, 100 KiB segments, sparse .log files, preallocated active
// indexes as Kafka leaves them.
func benchDir(b *testing.B, partitions int32, segments int) (string, int) {
	b.Helper()
	dir := b.TempDir()
	spec := logdirgen.Uniform(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 10, partitions/10, segments, 100<<10)
	res, err := logdirgen.Generate(dir, spec)
	if err != nil {
		b.Fatal(err)
	}
	return dir, res.Segments
}

// BenchmarkScanLogDir measures a full scan; it reports the scan's
// allocations and the live heap its result holds, per segment.
func BenchmarkScanLogDir(b *testing.B) {
	dir, segs := benchDir(b, 500, 10)
	s := testScanner(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.ScanLogDir(dir, nil) // warm the page cache
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	var ld LogDir
	for b.Loop() {
		ld = s.ScanLogDir(dir, nil)
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)/float64(segs), "alloc-B/segment")
	runtime.GC()
	var m2 runtime.MemStats
	runtime.ReadMemStats(&m2)
	b.ReportMetric(float64(int64(m2.HeapAlloc)-int64(m0.HeapAlloc))/float64(segs), "live-B/segment")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(segs), "ns/segment")
	if len(ld.Partitions) == 0 || len(s.Errors()) > 0 {
		b.Fatalf("bad scan: %d partitions, errors %v", len(ld.Partitions), s.Errors())
	}
	runtime.KeepAlive(ld)
}

// BenchmarkReadPartition measures the watcher's re-read of one partition.
func BenchmarkReadPartition(b *testing.B) {
	dir, _ := benchDir(b, 10, 10)
	s := testScanner(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cp := s.ReadCheckpoints(dir)
	if _, err := os.Stat(dir + "/topic.0000-0"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.ReadPartition(dir, "topic.0000-0", cp, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	segs := make([]seg, 50)
	for i := range segs {
		segs[i] = seg{int64(i * 100), 1 << 20, time.Duration(50-i) * time.Hour}
	}
	p := mkPartition(-1, 5000, 5000, segs...)
	c := cfg(24*hour, 10<<20, "delete")
	p = Classify(p, c, testNow)
	for b.Loop() {
		p = Classify(p, c, testNow)
	}
}

// BenchmarkRescanLogDir is the agent's periodic full scan: the previous
// result is passed in, unchanged closed segments are not opened.
func BenchmarkRescanLogDir(b *testing.B) {
	dir, segs := benchDir(b, 500, 10)
	s := testScanner(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
	prev := s.ScanLogDir(dir, nil)
	b.ResetTimer()
	for b.Loop() {
		prev = s.ScanLogDir(dir, &prev)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(segs), "ns/segment")
}
