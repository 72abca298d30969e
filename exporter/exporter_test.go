package exporter

import (
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTestRegistry registers the exporter over src on a pedantic registry,
// which also checks that every collected metric matches a described Desc.
func newTestRegistry(t testing.TB, cfg Config, src SnapshotSource) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if cfg.Now == nil {
		cfg.Now = fixtureNow
	}
	if cfg.Version == "" {
		cfg.Version = "1.2.3"
		cfg.Revision = "abc123"
	}
	if _, err := New(cfg, discard(), reg, src); err != nil {
		t.Fatalf("New: %v", err)
	}
	return reg
}

// scrape serves /metrics over reg through the real handler and returns
// the body with the Go version normalised.
func scrape(t testing.TB, reg *prometheus.Registry, src SnapshotSource) string {
	t.Helper()
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0", Now: fixtureNow}, discard(), reg, src)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d: %s", rec.Code, rec.Body)
	}
	return goVersion().ReplaceAllString(rec.Body.String(), `goversion="GOVERSION"`)
}

func goVersion() *regexp.Regexp { return regexp.MustCompile(`goversion="[^"]*"`) }

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update): %v", err)
	}
	if got != string(want) {
		t.Errorf("/metrics differs from %s (go test ./exporter -run %s -update to rewrite):\n%s", path, t.Name(), diff(string(want), got))
	}
}

// diff lists the lines only in want (-) or only in got (+).
func diff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

func TestMetricsGolden(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		snap *agent.Snapshot
	}{
		{"fixture", Config{}, fixtureSnapshot()},
		{"fixture_per_partition", Config{PerPartition: true}, fixtureSnapshot()},
		{"no_snapshot", Config{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := staticSource{tt.snap}
			reg := newTestRegistry(t, tt.cfg, src)
			checkGolden(t, tt.name, scrape(t, reg, src))
		})
	}
}

func TestMetricsLint(t *testing.T) {
	for _, perPartition := range []bool{false, true} {
		src := staticSource{fixtureSnapshot()}
		reg := newTestRegistry(t, Config{PerPartition: perPartition}, src)
		problems, err := testutil.GatherAndLint(reg)
		if err != nil {
			t.Fatalf("GatherAndLint: %v", err)
		}
		for _, p := range problems {
			t.Errorf("per_partition=%v: %s: %s", perPartition, p.Metric, p.Text)
		}
	}
}

// value returns the value of the one series of name whose labels include
// every pair of want, failing when there is not exactly one.
func value(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var found []float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			switch {
			case m.GetGauge() != nil:
				found = append(found, m.GetGauge().GetValue())
			case m.GetCounter() != nil:
				found = append(found, m.GetCounter().GetValue())
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

func TestMetricValues(t *testing.T) {
	src := staticSource{fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	ld := "/var/lib/kafka/data-0"
	seg512 := float64(512*mib + 12*1024)
	day := 24 * 3600.0
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"R2.1 usage ratio", "kafka_disk_guard_log_dir_usage_ratio", map[string]string{"log_dir": ld}, 0.62},
		{"R2.1 configured capacity basis", "kafka_disk_guard_log_dir_capacity_bytes", map[string]string{"log_dir": "/var/lib/kafka/data-1", "basis": "configured"}, float64(50 * gib)},
		{"R6 unreadable log dir is data", "kafka_disk_guard_log_dir_error", map[string]string{"log_dir": "/var/lib/kafka/data-1"}, 1},
		{"R6 readable log dir", "kafka_disk_guard_log_dir_error", map[string]string{"log_dir": ld}, 0},
		{"R1.2 eligible segments summed over partitions", "kafka_disk_guard_segments", map[string]string{"topic": "orders", "state": "eligible"}, 2},
		{"R1.2 closed segments summed over partitions", "kafka_disk_guard_segments", map[string]string{"topic": "orders", "state": "closed"}, 2},
		{"R1.2 open segments, future replica not counted", "kafka_disk_guard_segments", map[string]string{"topic": "orders", "state": "open"}, 2},
		{"R1.2 eligible bytes", "kafka_disk_guard_segment_bytes", map[string]string{"topic": "orders", "state": "eligible"}, 2 * seg512},
		{"R1.2 all-expired active segment is eligible", "kafka_disk_guard_segments", map[string]string{"topic": "stale", "state": "eligible"}, 2},
		{"R1.6 open_segment", "kafka_disk_guard_expired_retained_bytes", map[string]string{"topic": "user.events-v2", "reason": "open_segment"}, float64(150 * mib)},
		{"R1.6 awaiting_deletion: disk bytes of the eligible segments", "kafka_disk_guard_expired_retained_bytes", map[string]string{"topic": "orders", "reason": "awaiting_deletion"}, 2 * seg512},
		{"R1.6 pending_delete of .deleted files", "kafka_disk_guard_expired_retained_bytes", map[string]string{"topic": "orders", "reason": "pending_delete"}, float64(300 * mib)},
		{"R1.4 pending_delete of a -delete dir", "kafka_disk_guard_expired_retained_bytes", map[string]string{"topic": "old-topic", "reason": "pending_delete"}, float64(64 * mib)},
		{"R1.4 log dir pending delete", "kafka_disk_guard_log_dir_pending_delete_bytes", map[string]string{"log_dir": ld}, float64(364 * mib)},
		{"oldest eligible age", "kafka_disk_guard_oldest_eligible_segment_age_seconds", map[string]string{"topic": "orders"}, 9 * day},
		{"appended bytes", "kafka_disk_guard_topic_appended_bytes_total", map[string]string{"topic": "orders"}, float64(740 * mib)},
		{"R5.1 retention.bytes formula, two partitions", "kafka_disk_guard_reserved_bytes", map[string]string{"topic": "orders", "basis": "retention_bytes"},
			2 * float64(1*gib+512*mib+2*10*mib*3)},
		{"R5.1 compact flat", "kafka_disk_guard_reserved_bytes", map[string]string{"topic": "__consumer_offsets", "basis": "compact_flat"}, float64(gib)},
		{"R5.2 write-rate estimate", "kafka_disk_guard_reserved_bytes", map[string]string{"topic": "clicks", "basis": "write_rate_estimate"},
			// 2048 B/s x 86400 s = 168.75 MiB; one 1 GiB segment; n = 1
			float64(2048*86400 + gib + 2*10*mib)},
		{"R5.2 unbounded without a rate", "kafka_disk_guard_reserved_bytes", map[string]string{"topic": "audit", "basis": "unbounded"}, float64(gib + 2*10*mib)},
		{"health: last scan", "kafka_disk_guard_last_scan_timestamp_seconds", nil, float64(fixtureNow().Unix() - 30)},
		{"health: errors by kind", "kafka_disk_guard_scan_errors_total", map[string]string{"kind": "permission"}, 3},
		{"health: zero kinds present", "kafka_disk_guard_scan_errors_total", map[string]string{"kind": "corrupt_index"}, 0},
		{"health: watch mode", "kafka_disk_guard_watch_mode", map[string]string{"mode": "inotify"}, 1},
		{"health: configs age", "kafka_disk_guard_topic_configs_age_seconds", nil, 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := value(t, reg, tt.metric, tt.labels); got != tt.want {
				t.Errorf("%s%v = %v, want %v", tt.metric, tt.labels, got, tt.want)
			}
		})
	}
}

// TestReservedPercent checks R5.3: total reserved of the broker's live
// partitions / its configured storage x 100.
func TestReservedPercent(t *testing.T) {
	snap := fixtureSnapshot()
	reg := newTestRegistry(t, Config{}, staticSource{snap})
	var reserved float64
	for _, topic := range []string{"orders", "clicks", "audit", "__consumer_offsets", "user.events-v2", "stale", "tiered"} {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "kafka_disk_guard_reserved_bytes" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "topic" && lp.GetValue() == topic {
						reserved += m.GetGauge().GetValue()
					}
				}
			}
		}
	}
	want := reserved / float64(150*gib) * 100 // both log dirs' capacities
	if got := value(t, reg, "kafka_disk_guard_reserved_disk_space_percent", map[string]string{"broker_id": "1"}); got != want {
		t.Errorf("reserved_disk_space_percent = %v, want %v", got, want)
	}
}

// TestUnreadableLogDirDoesNotFailScrape: R6, a log dir error is data.
func TestUnreadableLogDirDoesNotFailScrape(t *testing.T) {
	snap := &agent.Snapshot{
		Time:    fixtureNow(),
		LogDirs: []agent.LogDir{{Path: "/gone", BrokerID: -1, Err: errors.New("stat /gone: no such file or directory")}},
	}
	src := staticSource{snap}
	reg := newTestRegistry(t, Config{}, src)
	body := scrape(t, reg, src)
	if !strings.Contains(body, `kafka_disk_guard_log_dir_error{log_dir="/gone"} 1`) {
		t.Errorf("no error series in:\n%s", body)
	}
	if strings.Contains(body, "kafka_disk_guard_log_dir_capacity_bytes") {
		t.Errorf("capacity reported for a log dir never read:\n%s", body)
	}
}

// changingSource hands out a new snapshot on demand.
type changingSource struct{ snap *agent.Snapshot }

func (s *changingSource) Snapshot() *agent.Snapshot { return s.snap }

// TestScrapeFollowsSnapshot: a new snapshot is reflected at the next scrape
// (the per-snapshot cache is keyed by the snapshot itself).
func TestScrapeFollowsSnapshot(t *testing.T) {
	src := &changingSource{snap: fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	lbl := map[string]string{"topic": "orders", "state": "eligible"}
	if got := value(t, reg, "kafka_disk_guard_segments", lbl); got != 2 {
		t.Fatalf("before: %v eligible, want 2", got)
	}
	next := fixtureSnapshot()
	parts := next.LogDirs[0].Partitions
	for i := range parts {
		if parts[i].Topic == "orders" && parts[i].Partition == 0 {
			parts[i].Segments = parts[i].Segments[2:] // the broker deleted the two eligible segments
		}
	}
	src.snap = next
	if got := value(t, reg, "kafka_disk_guard_segments", lbl); got != 0 {
		t.Errorf("after: %v eligible, want 0", got)
	}
}

// TestScrapeKeepsNoOldPartitions: between two scrapes the agent publishes
// many snapshots; the scrape cache must not keep the partitions of the one
// it last aggregated alive beside the current one's (at a million
// segments, one Partitions slice is 18 MB of the running agent's heap).
func TestScrapeKeepsNoOldPartitions(t *testing.T) {
	src := &changingSource{snap: fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	value(t, reg, "kafka_disk_guard_segments", map[string]string{"topic": "orders", "state": "eligible"})
	// A weak pointer to the old snapshot's partitions array: nil once
	// nothing holds it.
	old := weak.Make(src.snap.LogDirs[0].Partitions[0])
	src.snap = fixtureSnapshot() // published, not scraped yet
	runtime.GC()
	if old.Value() != nil {
		t.Fatal("the scrape cache keeps the partitions of a snapshot the agent replaced")
	}
	if got := value(t, reg, "kafka_disk_guard_segments", map[string]string{"topic": "orders", "state": "eligible"}); got != 2 {
		t.Errorf("after the new snapshot: %v eligible, want 2", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{}, ""},
		{"negative compact flat", Config{CompactFlatBytes: -1}, "admission.compactFlatBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if c := tt.cfg.WithDefaults(); c.CompactFlatBytes != gib || c.Now == nil {
					t.Errorf("defaults not filled: %+v", tt.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}
