package forecast

import (
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// source hands out a snapshot the test changes.
type source struct{ snap *agent.Snapshot }

func (s *source) Snapshot() *agent.Snapshot { return s.snap }

func newTestCollector(t *testing.T, src SnapshotSource) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	_, err := New(Config{Bands: []Band{{"retention", 0}, {"purge_fraction", 0.83}, {"protect", 0.88}},
		Rate: RateConfig{BucketWidth: time.Minute, Buckets: 3}}, slog.New(slog.DiscardHandler), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// filling is a log dir at 40% of 10000 MiB with one topic of an hour's
// retention; appended is its counter.
func filling(at time.Time, appended uint64) *agent.Snapshot {
	cfg := agent.DefaultTopicConfig()
	cfg.RetentionMs, cfg.SegmentBytes, cfg.IndexIntervalBytes = time.Hour.Milliseconds(), 100*mib, 0
	return &agent.Snapshot{Time: at, Defaults: cfg, LogDirs: []agent.LogDir{
		{Path: "/d", Usage: agent.Usage{CapacityBytes: 10000 * mib, UsedBytes: 4000 * mib}, Partitions: []*agent.Partition{new(part("a", 0, 500*mib, appended))}},
		{Path: "/unknown", Err: os.ErrNotExist},
	}}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string][]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	return out
}

// R3.8: the collector learns the ingress over scrapes and exports the
// projection, the time to each band above 0 it reaches, and the ingress.
func TestCollectorR38(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := &source{}
	reg := newTestCollector(t, src)
	if got := gather(t, reg); len(got) != 0 {
		t.Fatalf("series before the first snapshot: %v", got)
	}
	src.snap = filling(start, 0)
	got := gather(t, reg)
	if v := got["kafka_disk_guard_log_dir_projected_usage_ratio"][0].GetGauge().GetValue(); v != 0.4 {
		t.Errorf("warming up: projected %v, want the current 0.4", v)
	}
	src.snap = filling(start.Add(time.Minute), 60*mib) // 1 MiB/s
	got = gather(t, reg)
	// 4000 - 500 + 3600 + 100 MiB of 10000.
	if v := got["kafka_disk_guard_log_dir_projected_usage_ratio"][0].GetGauge().GetValue(); v != 0.72 {
		t.Errorf("projected %v, want 0.72", v)
	}
	if v := got["kafka_disk_guard_log_dir_ingress_bytes_per_second"][0].GetGauge().GetValue(); v != mib {
		t.Errorf("ingress %v, want 1 MiB/s", v)
	}
	if n := len(got["kafka_disk_guard_log_dir_time_to_band_seconds"]); n != 0 {
		t.Errorf("%d time-to-band series for bands never reached", n)
	}
	// Retention raised to 10 hours: the disk fills past both bands.
	src.snap = filling(start.Add(2*time.Minute), 120*mib)
	src.snap.Defaults.RetentionMs = 10 * time.Hour.Milliseconds()
	got = gather(t, reg)
	bands := map[string]float64{}
	for _, m := range got["kafka_disk_guard_log_dir_time_to_band_seconds"] {
		for _, l := range m.GetLabel() {
			if l.GetName() == "band" {
				bands[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	// From 4000 MiB at 1 MiB/s: 8300 MiB in 4300 s, 8800 MiB in 4800 s.
	want := map[string]float64{"purge_fraction": 4300, "protect": 4800}
	if len(bands) != len(want) || bands["purge_fraction"] != want["purge_fraction"] || bands["protect"] != want["protect"] {
		t.Errorf("time to band %v, want %v", bands, want)
	}
}

// TestMetricsDocumented: every metric this package registers is in the
// Foresight section of docs/metrics.md with its type and labels, and every
// metric listed there is registered.
func TestMetricsDocumented(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := &source{snap: filling(start, 0)}
	reg := newTestCollector(t, src)
	gather(t, reg)
	src.snap = filling(start.Add(time.Minute), 60*mib)
	src.snap.Defaults.RetentionMs = 10 * time.Hour.Milliseconds()
	code := map[string]string{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		sort.Strings(labels)
		code[mf.GetName()] = strings.ToLower(mf.GetType().String()) + " " + strings.Join(labels, ",")
	}
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if section != "Foresight (spec R3.8)" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		var labels []string
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		docs[name] = strings.TrimSpace(cells[1]) + " " + strings.Join(labels, ",")
		if ex := strings.Trim(strings.TrimSpace(cells[4]), "`"); !strings.HasPrefix(ex, name+"{") {
			t.Errorf("%s: example %q is not of this metric", name, ex)
		}
	}
	if len(docs) == 0 {
		t.Fatal("no Foresight section in docs/metrics.md")
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range code {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if docs[n] != code[n] {
			t.Errorf("%s: code %q, docs %q", n, code[n], docs[n])
		}
	}
	for n := range docs {
		if _, ok := code[n]; !ok {
			t.Errorf("%s documented but not registered", n)
		}
	}
}
