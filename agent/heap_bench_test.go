package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// BenchmarkLiveAgentHeap measures the live Go heap of a running agent
// (the model it keeps: segments, partitions, the loop's state, the
// parsed checkpoints, the inotify watches) on a generated log dir of
// KDG_BENCH_PARTITIONS partitions (default 10,000) of 10 segments, after
// its first full scan and a GC. It reports the live heap per segment and
// per partition directory. KDG_BENCH_DIR names a log dir generated
// already, KDG_BENCH_PARTITIONS partitions of 10 segments (the trees
// scripts/bench-agent.sh keeps in BENCH_DIR). With KDG_HEAP_PROFILE set,
// it writes a heap profile there while the agent runs (what holds the
// heap, by allocation site: go tool pprof -sample_index=inuse_space -top
// agent.test FILE):
//
//	KDG_HEAP_PROFILE=/tmp/heap.pb.gz go test -run '^$' -bench LiveAgentHeap -benchtime 1x ./agent/
//	KDG_BENCH_DIR=/tmp/b/logdir-100000-10 KDG_BENCH_PARTITIONS=100000 go test -run '^$' -bench LiveAgentHeap -benchtime 1x ./agent/
func BenchmarkLiveAgentHeap(b *testing.B) {
	parts := 10_000
	if v := os.Getenv("KDG_BENCH_PARTITIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("KDG_BENCH_PARTITIONS=%q: want a number >= 100", v)
		}
		parts = n
	}
	const perPart = 10
	dir := os.Getenv("KDG_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "logs")
		if _, err := logdirgen.Generate(dir, logdirgen.Uniform(time.Now(), 100, int32(parts/100), perPart, 1<<20)); err != nil {
			b.Fatal(err)
		}
	}
	segs := float64(parts / 100 * 100 * perPart)
	for range b.N {
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { a.Run(ctx); close(done) }()
		for a.Snapshot() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		live := float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
		b.ReportMetric(live/1e6, "live-MB")
		b.ReportMetric(live/segs, "live-B/segment")
		b.ReportMetric(live/segs*perPart, "live-B/partition")
		if path := os.Getenv("KDG_HEAP_PROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		cancel()
		<-done
		runtime.KeepAlive(a)
	}
}
