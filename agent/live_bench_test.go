package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// BenchmarkEventToSnapshot measures the latency from a segment roll on disk
// to the snapshot that shows it, with the default debounce (50ms) and a
// log dir of 200 partitions. It reports p50 and p99 in milliseconds.
//
//	go test -run '^$' -bench EventToSnapshot -benchtime 200x ./agent/
func BenchmarkEventToSnapshot(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "logs")
	if _, err := logdirgen.Generate(dir, logdirgen.Spec{Now: time.Now(), Sparse: true,
		Topics: []logdirgen.Topic{{Name: "bench", Partitions: 200, Segments: []logdirgen.Segment{{Bytes: 1 << 20}, {Bytes: 1 << 20}, {Bytes: 4096}}}}}); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	for a.Snapshot() == nil {
		time.Sleep(time.Millisecond)
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := "bench-" + strconv.Itoa(i%200)
		base := int64(1_000_000 + i)
		start := time.Now()
		for _, suffix := range []string{".log", ".index", ".timeindex"} {
			touchB(b, filepath.Join(dir, name, logdirgen.FileName(base, suffix)))
		}
		for {
			if p, ok := livePartition(a.Snapshot(), name); ok && p.Segments[len(p.Segments)-1].BaseOffset == base {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
}

func touchB(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
}
