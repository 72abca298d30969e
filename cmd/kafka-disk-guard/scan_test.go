package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

var scanNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// scanFixture is a log dir with one topic per rule of spec R1.
func scanFixture(t *testing.T) string {
	t.Helper()
	h := time.Hour
	seg := func(kb int64, age time.Duration) logdirgen.Segment {
		return logdirgen.Segment{Bytes: kb << 10, Age: age}
	}
	spec := logdirgen.Spec{Now: scanNow, NodeID: 2, ClusterID: "golden-cluster", Extras: true, Topics: []logdirgen.Topic{
		{Name: "orders", Partitions: 2, Segments: []logdirgen.Segment{seg(64, 72*h), seg(64, 50*h), seg(64, 30*h), seg(64, 10*h), seg(40, 10*time.Minute)}},
		{Name: "clicks.v2", Partitions: 1, Segments: []logdirgen.Segment{seg(64, 5*h), seg(64, 4*h), seg(64, 3*h), seg(32, h)}},
		{Name: "audit-log", Partitions: 1, Segments: []logdirgen.Segment{seg(16, 3*h), seg(16, 2*h), seg(16, h), seg(8, time.Minute)}, LogStartOffset: 400},
		{Name: "compacted", Partitions: 1, Segments: []logdirgen.Segment{seg(64, 500*h), seg(64, 400*h), seg(8, 300*h)}},
		{Name: "compact-delete", Partitions: 1, Segments: []logdirgen.Segment{seg(64, 500*h), seg(64, 2*h), seg(8, h)}},
		{Name: "all-expired", Partitions: 1, Segments: []logdirgen.Segment{seg(16, 5*h), seg(16, 4*h), seg(16, 3*h)}},
		{Name: "slow-writes", Partitions: 1, Segments: []logdirgen.Segment{seg(64, 10*time.Minute)}},
		{Name: "held-by-hw", Partitions: 1, Segments: []logdirgen.Segment{seg(16, 50*h), seg(16, 40*h), seg(16, 30*h), seg(16, 2*h)}, HighWatermark: 200},
		// Tiered (R1.7): offline its upload state is unknown.
		{Name: "tiered", Partitions: 2, Segments: []logdirgen.Segment{seg(64, 72*h), seg(64, 50*h), seg(64, 30*h), seg(16, h)}},
	}}
	dir := filepath.Join(t.TempDir(), "kafka-logs")
	if _, err := logdirgen.Generate(dir, spec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fsFields are figures that depend on the filesystem's block allocation
// (directory sizes differ between tmpfs and ext4); the golden files mask them.
var (
	fsJSON  = regexp.MustCompile(`"(disk_bytes|used_bytes|available_bytes|usage_ratio|other_bytes)": [0-9.e+-]+`)
	fsTable = regexp.MustCompile(`(?m)^  (usage|disk): .*$`)
	// The projection keeps the filesystem's other bytes.
	fsProjection = regexp.MustCompile(`projection: [0-9.]+%`)
)

func TestScanGolden(t *testing.T) {
	dir := scanFixture(t)
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"scan", "--log-dirs", dir, "--config", "testdata/scan_configs.yaml", "--now", scanNow.Format(time.RFC3339),
				"--capacity-bytes", "104857600", "--format", format}
			if err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
				t.Fatalf("scan: %v\n%s", err, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			got := strings.ReplaceAll(stdout.String(), dir, "<log-dir>")
			got = fsJSON.ReplaceAllString(got, `"$1": "<fs>"`)
			got = fsProjection.ReplaceAllString(got, "projection: <fs>%")
			got = fsTable.ReplaceAllString(got, "  $1: <fs>")
			golden := filepath.Join("testdata", "scan_"+format+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

// TestScanJSONSegments checks the JSON contract: every segment with its
// state, in terms of spec R1.
func TestScanJSONSegments(t *testing.T) {
	dir := scanFixture(t)
	var stdout, stderr bytes.Buffer
	args := []string{"scan", "--log-dirs", dir, "--config", "testdata/scan_configs.yaml", "--now", scanNow.Format(time.RFC3339), "--format", "json"}
	if err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		LogDirs []struct {
			PendingDeleteBytes int64  `json:"pending_delete_bytes"`
			CapacityBasis      string `json:"capacity_basis"`
		} `json:"log_dirs"`
		Segments []struct {
			Topic      string `json:"topic"`
			Partition  int32  `json:"partition"`
			Kind       string `json:"kind"`
			BaseOffset int64  `json:"base_offset"`
			State      string `json:"state"`
			Reason     string `json:"reason"`
			SizeBytes  int64  `json:"size_bytes"`
		} `json:"segments"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	states := map[string][]string{}
	for _, s := range rep.Segments {
		if s.Partition == 0 && s.Kind == "live" {
			states[s.Topic] = append(states[s.Topic], s.State+"/"+s.Reason)
		}
	}
	want := map[string]string{
		"orders":         "eligible/retention_time eligible/retention_time eligible/retention_time closed/ open/",
		"clicks.v2":      "eligible/retention_size closed/ closed/ open/",
		"audit-log":      "eligible/log_start_offset eligible/log_start_offset closed/ open/",
		"compacted":      "closed/ closed/ open/",
		"compact-delete": "eligible/retention_time closed/ open/",
		"all-expired":    "eligible/retention_time eligible/retention_time eligible/all_expired_active",
		"held-by-hw":     "eligible/retention_time closed/ closed/ open/",
		"slow-writes":    "open/",
		"tiered":         "closed/ closed/ closed/ open/", // R1.7: upload state unknown offline
	}
	for topic, w := range want {
		if got := strings.Join(states[topic], " "); got != w {
			t.Errorf("R1.3 %s: got %s, want %s", topic, got, w)
		}
	}
	if len(rep.LogDirs) != 1 || rep.LogDirs[0].PendingDeleteBytes < 8192+16384 || rep.LogDirs[0].CapacityBasis != "filesystem" {
		t.Errorf("R1.4/R2.1 log dir %+v", rep.LogDirs)
	}
}

func TestScanFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"scan"},
		{"scan", "--log-dirs", "x", "--format", "xml"},
		{"scan", "--log-dirs", "x", "--now", "yesterday"},
		{"scan", "--log-dirs", "x", "--cleanup-policy", "purge"},
		{"scan", "--log-dirs", "x", "--retention-ms", "-7"},
		{"scan", "--log-dirs", "x", "--sasl-user", "u"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
		var ue usageError
		if err == nil || !asUsage(err, &ue) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"scan", "--log-dirs", "x", "--config", "testdata/nope.yaml"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing config file: %v", err)
	}
}

func asUsage(err error, ue *usageError) bool {
	u, ok := err.(usageError)
	if ok {
		*ue = u
	}
	return ok
}

// R1.7: offline, a topic the config file calls tiered has an unknown
// upload state: scan reports it in its own table and JSON, nothing in it
// eligible.
func TestScanTieredOffline(t *testing.T) {
	h := time.Hour
	spec := logdirgen.Spec{Now: scanNow, NodeID: 2, Topics: []logdirgen.Topic{
		{Name: "tiered", Partitions: 1, Segments: []logdirgen.Segment{{Bytes: 64 << 10, Age: 72 * h}, {Bytes: 8 << 10, Age: h}}},
	}}
	dir := filepath.Join(t.TempDir(), "kafka-logs")
	if _, err := logdirgen.Generate(dir, spec); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "configs.yaml")
	if err := os.WriteFile(cfgFile, []byte("topics:\n  tiered:\n    remote.storage.enable: true\n    local.retention.ms: 3600000\n    retention.ms: 86400000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scan := func(format string) []byte {
		var stdout, stderr bytes.Buffer
		args := []string{"scan", "--log-dirs", dir, "--config", cfgFile, "--now", scanNow.Format(time.RFC3339), "--format", format}
		if err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
			t.Fatalf("scan: %v\n%s", err, stderr.String())
		}
		return stdout.Bytes()
	}
	var r struct {
		Partitions []struct {
			Tiered *struct {
				Segments  struct{ Unknown int64 } `json:"segments"`
				DiskBytes struct{ Unknown int64 } `json:"disk_bytes"`
				Unknown   int                     `json:"offsets_unknown_partitions"`
			} `json:"tiered"`
			Segments  struct{ Eligible int64 }               `json:"segments"`
			DiskBytes struct{ Open, Closed, Eligible int64 } `json:"disk_bytes"`
		} `json:"partitions"`
		Segments []struct{ Tier string } `json:"segments"`
	}
	if err := json.Unmarshal(scan("json"), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Partitions) != 1 || r.Partitions[0].Tiered == nil {
		t.Fatalf("R1.7 json partitions: %+v", r.Partitions)
	}
	p := r.Partitions[0]
	// Every segment's tier is unknown: all of the partition's disk bytes.
	disk := p.DiskBytes.Open + p.DiskBytes.Closed + p.DiskBytes.Eligible
	if p.Tiered.Segments.Unknown != 2 || p.Tiered.DiskBytes.Unknown != disk || p.Tiered.Unknown != 1 || p.Segments.Eligible != 0 {
		t.Errorf("R1.7 json partitions: %+v", r.Partitions)
	}
	if len(r.Segments) != 2 || r.Segments[0].Tier != "unknown" {
		t.Errorf("R1.7 json segments: %+v", r.Segments)
	}
	out := string(scan("table"))
	row := regexp.MustCompile(`tiered-0\s+0/0 B\s+0/0 B\s+2/` + regexp.QuoteMeta(human.Bytes(disk)) + `\s+0 B\s+\?\s+\?\s+unknown: nothing eligible`)
	if !strings.Contains(out, "tiered partitions") || !row.MatchString(out) {
		t.Errorf("R1.7 table:\n%s", out)
	}
}
