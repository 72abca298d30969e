package exporter

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// syntheticSnapshot is one log dir with topics x partitions x segments:
// every partition has one eligible, segments-2 closed and one open segment.
func syntheticSnapshot(topics, partitions, segments int) *agent.Snapshot {
	now := fixtureNow()
	ld := agent.LogDir{
		Path: "/var/lib/kafka/data", BrokerID: 1,
		Usage: agent.Usage{CapacityBytes: 1 << 40, UsedBytes: 1 << 39, AvailableBytes: 1 << 39, Basis: agent.CapacityFilesystem},
	}
	cfgs := map[string]agent.TopicConfig{}
	for t := range topics {
		name := fmt.Sprintf("topic.%04d", t)
		c := agent.DefaultTopicConfig()
		c.RetentionBytes = int64(t+1) << 30
		cfgs[name] = c
		for p := range partitions {
			segs := make([]agent.Segment, segments)
			for s := range segs {
				state := agent.StateClosed
				switch {
				case s == segments-1:
					state = agent.StateOpen
				case s == 0:
					state = agent.StateEligible
				}
				segs[s] = agent.Segment{
					BaseOffset: int64(s) * 1000, LogBytes: 1 << 30, DiskBytes: 1<<30 + 4096,
					LargestTimestampMs: now.Add(-time.Duration(segments-s) * time.Hour).UnixMilli(), State: state,
				}
			}
			ld.Partitions = append(ld.Partitions, &agent.Partition{
				Topic: name, Partition: int32(p), Dir: fmt.Sprintf("%s-%d", name, p), Kind: agent.KindLive,
				Segments: segs, AppendedBytes: 1 << 20, WriteRateBytesPerSecond: 100,
			})
		}
	}
	return &agent.Snapshot{
		Time: now, LogDirs: []agent.LogDir{ld}, Configs: cfgs, Defaults: agent.DefaultTopicConfig(),
		ConfigsTime: now, Health: agent.Health{LastFullScan: now, WatchMode: "inotify"},
	}
}

func seriesCount(t *testing.T, cfg Config, snap *agent.Snapshot) int {
	t.Helper()
	reg := newTestRegistry(t, cfg, staticSource{snap})
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSeriesGrowWithTopicsNotSegments: the number of series depends on the
// number of topics only (per-partition mode: on partitions), never on the
// number of segments.
func TestSeriesGrowWithTopicsNotSegments(t *testing.T) {
	base := seriesCount(t, Config{}, syntheticSnapshot(10, 4, 3))
	tests := []struct {
		name                        string
		cfg                         Config
		topics, partitions, segment int
		want                        func(n int) bool
		wantText                    string
	}{
		{"20x more segments", Config{}, 10, 4, 60, func(n int) bool { return n == base }, "unchanged"},
		{"25x more partitions", Config{}, 10, 100, 3, func(n int) bool { return n == base }, "unchanged"},
		{"twice the topics", Config{}, 20, 4, 3, func(n int) bool { return n > base && n < 2*base+1 }, "grown, at most doubled"},
		{"per-partition: partitions count", Config{PerPartition: true}, 10, 8, 3, func(n int) bool { return n > 4*base/2 }, "grown with partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := seriesCount(t, tt.cfg, syntheticSnapshot(tt.topics, tt.partitions, tt.segment))
			if !tt.want(n) {
				t.Errorf("%d series (base %d), want %s", n, base, tt.wantText)
			}
		})
	}
	perPartSegs := seriesCount(t, Config{PerPartition: true}, syntheticSnapshot(10, 8, 60))
	perPart := seriesCount(t, Config{PerPartition: true}, syntheticSnapshot(10, 8, 3))
	if perPartSegs != perPart {
		t.Errorf("per-partition: %d series with 60 segments, %d with 3; want equal", perPartSegs, perPart)
	}
}

// twoSnapshots alternates between two equal snapshots so every scrape
// misses the per-snapshot cache, as when the agent publishes between scrapes.
type twoSnapshots struct {
	a, b *agent.Snapshot
	n    int
}

func (s *twoSnapshots) Snapshot() *agent.Snapshot {
	s.n++
	if s.n%2 == 0 {
		return s.a
	}
	return s.b
}

// BenchmarkScrape measures GET /metrics through the real handler over a
// snapshot of 10k partitions / 100k segments (100 topics x 100 partitions x
// 10 segments). Goal: <= 50 ms per scrape per topic, <= 250 ms per
// partition (120k series). cpu-ns/op is the CPU a scrape used, GC
// included: on a loaded machine compare it, not ns/op.
//
//	go test ./exporter -run '^$' -bench Scrape -benchmem
func BenchmarkScrape(b *testing.B) {
	a := syntheticSnapshot(100, 100, 10)
	c := syntheticSnapshot(100, 100, 10)
	tests := []struct {
		name string
		cfg  Config
		src  SnapshotSource
		gzip bool
	}{
		{"new_snapshot_each_scrape", Config{}, &twoSnapshots{a: a, b: c}, false},
		{"new_snapshot_each_scrape_gzip", Config{}, &twoSnapshots{a: a, b: c}, true},
		{"same_snapshot", Config{}, staticSource{a}, false},
		{"per_partition_new_snapshot_each_scrape", Config{PerPartition: true}, &twoSnapshots{a: a, b: c}, false},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			tt.cfg.Now = fixtureNow
			if _, err := New(tt.cfg, discard(), reg, tt.src); err != nil {
				b.Fatal(err)
			}
			srv, err := NewServer(ServerConfig{}, discard(), reg, staticSource{a})
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			var size int
			cpu0 := processCPU(b)
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				if tt.gzip {
					req.Header.Set("Accept-Encoding", "gzip") // as Prometheus scrapes
				}
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			cpu := processCPU(b) - cpu0
			n, _ := testutil.GatherAndCount(reg)
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(size), "bytes/scrape")
			b.ReportMetric(float64(n), "series")
		})
	}
}

// processCPU is the CPU time the process has used (user and system, GC
// included). On a loaded machine a scrape's wall time (ns/op) counts the
// time it waited for a core; cpu-ns/op is the work it did.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBuildView measures the per-snapshot aggregation alone (100
// topics x 100 partitions x 10 segments): what a scrape of a new snapshot
// pays before encoding.
func BenchmarkBuildView(b *testing.B) {
	snap := syntheticSnapshot(100, 100, 10)
	for _, per := range []bool{false, true} {
		name := "per_topic"
		if per {
			name = "per_partition"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buildView(snap, Config{PerPartition: per})
			}
		})
	}
}

// replay is a collector that sends metrics collected before.
type replay []prometheus.Metric

func (r replay) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(r, ch) }
func (r replay) Collect(ch chan<- prometheus.Metric) {
	for _, m := range r {
		ch <- m
	}
}

// BenchmarkScrapeFloor measures what a per-partition scrape of 10k
// partitions costs in client_golang alone: the same 120k series, made
// before the loop, gathered (a metric object per series, a duplicate check
// by hash, the sort) and encoded as text by the real handler. What
// BenchmarkScrape's per_partition case costs beyond it is the view and
// the collector's own work.
//
//	go test ./exporter -run '^$' -bench ScrapeFloor -benchmem
func BenchmarkScrapeFloor(b *testing.B) {
	snap := syntheticSnapshot(100, 100, 10)
	c := newCollector(Config{PerPartition: true}.WithDefaults(), discard(), staticSource{snap})
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	var metrics replay
	for m := range ch {
		metrics = append(metrics, m)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	srv, err := NewServer(ServerConfig{}, discard(), reg, staticSource{snap})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	cpu0 := processCPU(b)
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(metrics)), "series")
}
