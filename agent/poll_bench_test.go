package agent

import (
	"hash/maphash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// BenchmarkPollWatchLimit measures one poll of the directories inotify
// could not watch: a log dir whose partitions outnumber the watch limit
// (fs.inotify.max_user_watches; 8192 on older kernels), nothing changing.
// KDG_BENCH_LOGDIR names a generated log dir to use (scripts/bench-agent.sh
// leaves them in its BENCH_DIR), else 2,000 partitions are generated;
// KDG_BENCH_WATCHES is the limit (default 8192, or a quarter of the
// generated partitions).
//
//	KDG_BENCH_LOGDIR=/tmp/b/logdir-100000-10 go test -run '^$' -bench PollWatchLimit -benchtime 5x ./agent/
func BenchmarkPollWatchLimit(b *testing.B) {
	dir, limit := os.Getenv("KDG_BENCH_LOGDIR"), 8192
	if dir == "" {
		dir, limit = filepath.Join(b.TempDir(), "logs"), 500
		if _, err := logdirgen.Generate(dir, logdirgen.Uniform(time.Now(), 20, 100, 10, 1<<20)); err != nil {
			b.Fatal(err)
		}
	}
	if v := os.Getenv("KDG_BENCH_WATCHES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		limit = n
	}
	a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		b.Fatal(err)
	}
	a.newWatcher = func() (fileWatcher, error) {
		w, err := newFSWatcher()
		return &limitedWatcher{fileWatcher: w, limit: limit}, err
	}
	l := &loop{a: a, rescans: map[string]uint64{}, ownErrs: map[ErrorKind]uint64{}, seed: maphash.MakeSeed()}
	defer l.close()
	w, err := a.newWatcher()
	if err != nil {
		b.Fatal(err)
	}
	l.w = w
	l.expand()
	l.fullScan("start")
	polled := a.Snapshot().Health.PolledDirs
	l.poll() // the first poll reads every polled directory once
	b.ResetTimer()
	for range b.N {
		l.poll()
	}
	b.StopTimer()
	b.ReportMetric(float64(polled), "polled-dirs")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/poll")
}
