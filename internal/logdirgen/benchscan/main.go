// Command benchscan generates a large broker log dir and times full scans
// of it, for scripts/bench-scan.sh.
//
//	benchscan gen  DIR PARTITIONS SEGMENTS_PER_PARTITION SEGMENT_BYTES
//	benchscan scan DIR [REPEAT [WORKERS]]   (runs after the first reuse the previous result; BENCHSCAN_NO_PREV=1 disables;
//	                                         BENCHSCAN_CPUPROFILE=FILE writes a CPU profile of the runs)
//	benchscan floor DIR   (Linux: only the system calls a first scan needs; see floor)
//
// scan prints one line per run: segments, wall time, and the live heap the
// scan result holds (after a GC) divided by the number of segments.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscan:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string, out io.Writer) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: benchscan gen DIR PARTITIONS SEGMENTS SEGMENT_BYTES | benchscan scan DIR [REPEAT [WORKERS]] | benchscan floor DIR")
	}
	switch args[0] {
	case "gen":
		return gen(args, out)
	case "scan":
		return scan(args, out)
	case "floor":
		return floor(args, out)
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// gen generates a log dir: benchscan gen DIR PARTITIONS SEGMENTS SEGMENT_BYTES.
func gen(args []string, out io.Writer) error {
	if len(args) != 5 {
		return fmt.Errorf("gen DIR PARTITIONS SEGMENTS SEGMENT_BYTES")
	}
	n := make([]int64, 3)
	for i, a := range args[2:] {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		n[i] = v
	}
	// 100 topics of partitions/100 partitions each (at least one).
	topics := int64(100)
	if n[0] < topics {
		topics = 1
	}
	spec := logdirgen.Uniform(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), int(topics), int32(n[0]/topics), int(n[1]), n[2])
	res, err := logdirgen.Generate(args[1], spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "generated %d partitions, %d segments in %s\n", len(res.Partitions), res.Segments, args[1])
	return nil
}

// scan scans a log dir REPEAT times, each run from the last one's result
// (unless BENCHSCAN_NO_PREV is set), and prints its cost per segment.
func scan(args []string, out io.Writer) error {
	repeat, workers := 1, 0
	if len(args) > 3 {
		v, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		workers = v
	}
	if len(args) > 2 {
		v, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		repeat = v
	}
	s, err := agent.NewScanner(agent.ScannerConfig{Workers: workers}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	if f := os.Getenv("BENCHSCAN_CPUPROFILE"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(w); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); w.Close() }()
	}
	var prev *agent.LogDir
	for i := range repeat {
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		ld := s.ScanLogDir(args[1], prev)
		el := time.Since(start)
		if ld.Err != nil {
			return ld.Err
		}
		segs := 0
		for _, p := range ld.Partitions {
			segs += len(p.Segments)
		}
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		live := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
		mode := "first"
		if prev != nil {
			mode = "rescan"
		}
		fmt.Fprintf(out, "scan run=%d mode=%s segments=%d partitions=%d wall_ms=%.1f live_heap_bytes_per_segment=%.0f alloc_bytes_per_segment=%.0f errors=%v\n",
			i, mode, segs, len(ld.Partitions), float64(el.Microseconds())/1000, float64(live)/float64(max(segs, 1)),
			float64(m1.TotalAlloc-m0.TotalAlloc)/float64(max(segs, 1)), s.Errors())
		if os.Getenv("BENCHSCAN_NO_PREV") == "" {
			prev = &ld
		}
	}
	return nil
}
