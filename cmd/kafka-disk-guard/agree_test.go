package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/exporter"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
)

// topicFigures are the figures of one topic of one log dir, as one of the
// three readers shows them.
type topicFigures struct {
	partitions                           int64
	segments, bytes                      [3]int64 // open, closed, eligible
	expired                              [3]int64 // open_segment, awaiting_deletion, pending_delete
	oldestAgeS                           float64  // -1: none eligible
	reserved                             int64
	bytesText, expiredText, reservedText string // as the demo prints them
	tiered                               tieredFigures
}

// tieredFigures are a tiered topic's figures (spec R1.7); zero for the
// others.
type tieredFigures struct {
	segments, bytes [3]int64 // local_only, uploaded, unknown
	eligibleLocally int64
	offsetsUnknown  int64
}

// TestScanDemoAndMetricsAgree: `scan`, the demo's table and /metrics read
// the same log dir (generated as a broker writes it, with the special
// entries of spec R1.4 and a tiered topic, R1.7) and must show the same
// figures for every topic. Offline the tiered topic's upload state is
// unknown; with remote offsets as a leader reports them (one partition
// partly uploaded, the other unreadable) scan's report and /metrics must
// still agree on every tier.
func TestScanDemoAndMetricsAgree(t *testing.T) {
	dir := scanFixture(t)
	const capacity = 100 << 20
	const configs = "testdata/scan_configs.yaml"

	// scan, through the command.
	var stdout, stderr bytes.Buffer
	args := []string{"scan", "--log-dirs", dir, "--config", configs, "--now", scanNow.Format(time.RFC3339),
		"--capacity-bytes", fmt.Sprint(capacity), "--format", "json"}
	if err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("scan: %v\n%s", err, stderr.String())
	}
	var report scanReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	scan := scanFigures(report)

	// The same log dir as the guard reads it, for the demo's table and
	// the exporter.
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ld := scanner.ScanLogDir(dir, nil)
	if ld.Usage, err = agent.DiskUsage(dir, capacity, ld.DiskBytes); err != nil {
		t.Fatal(err)
	}
	cs, err := agent.LoadConfigFile(configs, agent.DefaultTopicConfig())
	if err != nil {
		t.Fatal(err)
	}
	snap := agent.BuildSnapshot(scanNow, []agent.LogDir{ld}, cs, agent.Health{})

	var table bytes.Buffer
	printScanTable(&table, &snap, 0)
	demo := demoRows(t, table.String())

	reg := prometheus.NewRegistry()
	if _, err := exporter.New(exporter.Config{Now: func() time.Time { return scanNow }}, slog.New(slog.DiscardHandler), reg, snapshotOf{&snap}); err != nil {
		t.Fatal(err)
	}
	metrics := metricFigures(t, reg)

	if got, want := slices.Sorted(maps.Keys(scan)), slices.Sorted(maps.Keys(metrics)); !slices.Equal(got, want) {
		t.Fatalf("topics: scan %v, metrics %v", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(demo)), slices.Sorted(maps.Keys(metrics)); !slices.Equal(got, want) {
		t.Fatalf("topics: demo %v, metrics %v", got, want)
	}
	for topic, m := range metrics {
		s, d := scan[topic], demo[topic]
		if s.segments != m.segments || s.bytes != m.bytes || s.expired != m.expired || s.oldestAgeS != m.oldestAgeS || s.tiered != m.tiered {
			t.Errorf("R1.6/%s: scan %+v, metrics %+v", topic, s, m)
		}
		if s.partitions != d.partitions || d.segments != m.segments {
			t.Errorf("%s: demo partitions %d segments %v, scan partitions %d, metrics segments %v", topic, d.partitions, d.segments, s.partitions, m.segments)
		}
		if want := human.Bytes(m.bytes[0] + m.bytes[1] + m.bytes[2]); d.bytesText != want {
			t.Errorf("%s: demo disk bytes %q, metrics %q", topic, d.bytesText, want)
		}
		if want := human.Bytes(m.expired[0] + m.expired[1] + m.expired[2]); d.expiredText != want {
			t.Errorf("%s: demo expired %q, metrics %q", topic, d.expiredText, want)
		}
		if want := human.Bytes(m.reserved); d.reservedText != want {
			t.Errorf("R5.1/%s: demo reserved %q, metrics %q", topic, d.reservedText, want)
		}
	}
	// The fixture covers what the figures must tell apart.
	if m := metrics["orders"]; m.expired[2] == 0 || m.bytes[2] == 0 || m.expired[1] != m.bytes[2] {
		t.Errorf("orders: %+v: want pending-delete bytes and awaiting_deletion = eligible disk bytes", m)
	}
	if m := metrics["slow-writes"]; m.expired[0] == 0 {
		t.Errorf("slow-writes: %+v: want expired bytes in the open segment", m)
	}
	if m, ok := metrics["deleted-topic"]; !ok || m.expired[2] == 0 || scan["deleted-topic"].partitions != 0 {
		t.Errorf("deleted-topic: %+v: want its -delete directory as pending delete", m)
	}
	if m := metrics["tiered"].tiered; m.segments != [3]int64{0, 0, 8} || m.bytes[2] != metrics["tiered"].bytes[0]+metrics["tiered"].bytes[1] || m.offsetsUnknown != 2 {
		t.Errorf("R1.7/tiered offline: %+v: want every segment's tier unknown, both partitions' offsets unknown", m)
	}

	// The remote tier as the leaders report it: partition 0 has its first
	// two segments uploaded, partition 1's leader could not be read.
	var segs []agent.Segment
	for _, p := range ld.Partitions {
		if p.Topic == "tiered" && p.Partition == 0 && p.Kind == agent.KindLive {
			segs = p.Segments
		}
	}
	if len(segs) != 4 {
		t.Fatalf("tiered-0: %d segments", len(segs))
	}
	cs.Remote = map[agent.TopicPartition]agent.RemoteOffsets{
		{Topic: "tiered", Partition: 0}: {HighestUploaded: segs[2].BaseOffset - 1, LocalLogStart: 0, LogStart: 0},
		{Topic: "tiered", Partition: 1}: {Err: "NOT_LEADER_OR_FOLLOWER"},
	}
	snap = agent.BuildSnapshot(scanNow, []agent.LogDir{ld}, cs, agent.Health{})
	stdout.Reset()
	if err := writeScanJSON(&stdout, snap, nil); err != nil {
		t.Fatal(err)
	}
	report = scanReport{}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	if _, err := exporter.New(exporter.Config{Now: func() time.Time { return scanNow }}, slog.New(slog.DiscardHandler), reg, snapshotOf{&snap}); err != nil {
		t.Fatal(err)
	}
	s, m := scanFigures(report)["tiered"], metricFigures(t, reg)["tiered"]
	if s.segments != m.segments || s.bytes != m.bytes || s.expired != m.expired || s.oldestAgeS != m.oldestAgeS || s.tiered != m.tiered {
		t.Errorf("R1.7/tiered with remote offsets: scan %+v, metrics %+v", s, m)
	}
	// Uploaded and past local.retention.ms: eligible locally; the third
	// segment is past it too but local only; partition 1 unknown.
	if mt := m.tiered; mt.segments != [3]int64{2, 2, 4} || mt.eligibleLocally == 0 || mt.eligibleLocally != m.bytes[2] || mt.bytes[1] != m.bytes[2] || mt.offsetsUnknown != 1 {
		t.Errorf("R1.7/tiered with remote offsets: %+v: want 2 local-only, 2 uploaded (eligible locally), 4 unknown segments", m)
	}
}

// scanFigures reads the per-topic figures of scan's JSON report.
func scanFigures(report scanReport) map[string]topicFigures {
	out := map[string]topicFigures{}
	for _, tr := range report.Topics {
		f := topicFigures{partitions: int64(tr.Partitions), oldestAgeS: -1,
			segments: [3]int64{tr.Segments.Open, tr.Segments.Closed, tr.Segments.Eligible},
			bytes:    [3]int64{tr.DiskBytes.Open, tr.DiskBytes.Closed, tr.DiskBytes.Eligible},
			expired:  [3]int64{tr.ExpiredRetained.OpenSegment, tr.ExpiredRetained.AwaitingDeletion, tr.ExpiredRetained.PendingDelete}}
		if tr.OldestEligibleAgeS != nil {
			f.oldestAgeS = *tr.OldestEligibleAgeS
		}
		if ts := tr.Tiered; ts != nil {
			f.tiered = tieredFigures{
				segments:        [3]int64{ts.Segments.LocalOnly, ts.Segments.Uploaded, ts.Segments.Unknown},
				bytes:           [3]int64{ts.DiskBytes.LocalOnly, ts.DiskBytes.Uploaded, ts.DiskBytes.Unknown},
				eligibleLocally: ts.EligibleLocallyBytes, offsetsUnknown: int64(ts.OffsetsUnknownPartitions)}
		}
		out[tr.Topic] = f
	}
	return out
}

type snapshotOf struct{ s *agent.Snapshot }

func (s snapshotOf) Snapshot() *agent.Snapshot { return s.s }

// demoRows parses the demo's topic table.
func demoRows(t *testing.T, out string) map[string]topicFigures {
	t.Helper()
	rows := map[string]topicFigures{}
	in := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "TOPIC") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "  ") || strings.TrimSpace(line) == "" {
			in = in && strings.TrimSpace(line) != ""
			continue
		}
		// TOPIC PARTS OPEN CLOSED ELIGIBLE "n unit" "n unit" "n unit" BASIS
		var f topicFigures
		var topic, b1, b2, e1, e2, r1, r2 string
		if _, err := fmt.Sscan(line, &topic, &f.partitions, &f.segments[0], &f.segments[1], &f.segments[2], &b1, &b2, &e1, &e2, &r1, &r2); err != nil {
			t.Fatalf("demo row %q: %v", line, err)
		}
		f.bytesText, f.expiredText, f.reservedText = b1+" "+b2, e1+" "+e2, r1+" "+r2
		rows[topic] = f
	}
	if len(rows) == 0 {
		t.Fatalf("no topic rows in the demo's table:\n%s", out)
	}
	return rows
}

// metricFigures reads the per-topic series of a scrape.
func metricFigures(t *testing.T, reg *prometheus.Registry) map[string]topicFigures {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{"open": 0, "closed": 1, "eligible": 2}
	tiers := map[string]int{"local_only": 0, "uploaded": 1, "unknown": 2}
	reasons := map[string]int{"open_segment": 0, "awaiting_deletion": 1, "pending_delete": 2}
	out := map[string]topicFigures{}
	get := func(topic string) topicFigures {
		if f, ok := out[topic]; ok {
			return f
		}
		return topicFigures{oldestAgeS: -1}
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			topic, ok := l["topic"]
			if !ok {
				continue
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			f := get(topic)
			switch mf.GetName() {
			case "kafka_disk_guard_segments":
				f.segments[states[l["state"]]] = int64(v)
			case "kafka_disk_guard_segment_bytes":
				f.bytes[states[l["state"]]] = int64(v)
			case "kafka_disk_guard_expired_retained_bytes":
				f.expired[reasons[l["reason"]]] = int64(v)
			case "kafka_disk_guard_oldest_eligible_segment_age_seconds":
				f.oldestAgeS = v
			case "kafka_disk_guard_reserved_bytes":
				f.reserved += int64(v)
			case "kafka_disk_guard_tiered_segments":
				f.tiered.segments[tiers[l["tier"]]] = int64(v)
			case "kafka_disk_guard_tiered_segment_bytes":
				f.tiered.bytes[tiers[l["tier"]]] = int64(v)
			case "kafka_disk_guard_tiered_eligible_locally_bytes":
				f.tiered.eligibleLocally = int64(v)
			case "kafka_disk_guard_tiered_offsets_unknown_partitions":
				f.tiered.offsetsUnknown = int64(v)
			default:
				continue
			}
			out[topic] = f
		}
	}
	return out // the metrics carry no partition count: scan and demo must agree on it
}
