package exporter

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// fsDependent are the families whose values depend on how the filesystem
// allocates blocks; the log-dir golden file leaves them out.
func fsDependent() []string {
	return []string{
		"kafka_disk_guard_segment_bytes", "kafka_disk_guard_log_dir_used_bytes",
		"kafka_disk_guard_log_dir_available_bytes", "kafka_disk_guard_log_dir_usage_ratio",
		"kafka_disk_guard_log_dir_pending_delete_bytes", "kafka_disk_guard_expired_retained_bytes{log_dir=\"LOGDIR\",reason=\"pending_delete\"",
		"kafka_disk_guard_expired_retained_bytes{log_dir=\"LOGDIR\",reason=\"awaiting_deletion\"",
		"kafka_disk_guard_scan_duration_seconds", "kafka_disk_guard_last_scan_timestamp_seconds",
	}
}

// TestMetricsGoldenLogDir: a log dir generated the way a broker writes it,
// scanned and classified by the agent, then scraped (spec R1, R1.6, R5).
func TestMetricsGoldenLogDir(t *testing.T) {
	now := fixtureNow()
	dir := filepath.Join(t.TempDir(), "kafka-logs")
	day := 24 * time.Hour
	seg := func(kib int64, age time.Duration) logdirgen.Segment {
		return logdirgen.Segment{Bytes: kib << 10, Age: age}
	}
	spec := logdirgen.Spec{Now: now, NodeID: 2, ClusterID: "golden", Extras: true, Topics: []logdirgen.Topic{
		// Time retention 7 days: the two oldest segments are eligible.
		{Name: "orders", Partitions: 2, Segments: []logdirgen.Segment{seg(256, 9*day), seg(256, 8*day), seg(256, 2*day), seg(64, time.Minute)}},
		// retention.bytes 512 KiB: the oldest segment goes by size.
		{Name: "payments.v1", Partitions: 1, Segments: []logdirgen.Segment{seg(256, 3*day), seg(256, 2*day), seg(256, day), seg(32, time.Minute)}},
		// retention.ms 12 h: the closed segment is eligible; the open one holds
		// records from 3 days ago until now, most of them expired (seed 000).
		{Name: "audit_log", Partitions: 1, Segments: []logdirgen.Segment{seg(256, 3*day), seg(512, 0)}},
		{Name: "user-profiles", Partitions: 1, Segments: []logdirgen.Segment{seg(256, 30*day), seg(16, time.Hour)}},
	}}
	if _, err := logdirgen.Generate(dir, spec); err != nil {
		t.Fatal(err)
	}
	payments := agent.DefaultTopicConfig()
	payments.RetentionBytes = 512 << 10
	profiles := agent.DefaultTopicConfig()
	profiles.CleanupPolicy = agent.CleanupPolicy{Compact: true}
	audit := agent.DefaultTopicConfig()
	audit.RetentionMs = (12 * time.Hour).Milliseconds()
	configs := agent.ConfigSet{
		Topics:   map[string]agent.TopicConfig{"payments.v1": payments, "user-profiles": profiles, "audit_log": audit},
		Defaults: agent.DefaultTopicConfig(), Time: now.Add(-time.Minute),
	}

	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ld := scanner.ScanLogDir(dir, nil)
	if ld.Err != nil {
		t.Fatal(ld.Err)
	}
	u, err := agent.DiskUsage(dir, 1<<30, ld.DiskBytes)
	if err != nil {
		t.Fatal(err)
	}
	ld.Usage = u
	snap := agent.BuildSnapshot(now, []agent.LogDir{ld}, configs, agent.Health{
		LastFullScan: now, ScanErrors: scanner.Errors(), Rescans: map[string]uint64{"start": 1},
	})
	src := staticSource{&snap}
	body := scrape(t, newTestRegistry(t, Config{}, src), src)
	body = strings.ReplaceAll(body, dir, "LOGDIR")
	var kept []string
lines:
	for _, line := range strings.Split(body, "\n") {
		for _, f := range fsDependent() {
			if strings.HasPrefix(line, f) || strings.HasPrefix(line, "# HELP "+f+" ") || strings.HasPrefix(line, "# TYPE "+f+" ") {
				continue lines
			}
		}
		kept = append(kept, line)
	}
	checkGolden(t, "logdir", strings.Join(kept, "\n"))
}
