//go:build integration

package agent_test

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// diffTopic is one scenario of the differential test.
type diffTopic struct {
	name    string
	create  map[string]string // configs at creation: nothing is deletable
	flip    map[string]string // configs that make the broker delete
	records []time.Duration   // one record per entry: its age at produce time
	lso     int64             // DeleteRecords up to this offset (0: none)
}

func ages(n int, age time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = age
	}
	return out
}

// TestDifferentialRetention is spec R1.3's oracle test: the broker itself
// decides. Topics start with configs under which nothing is deletable;
// the guard scans the log dir and classifies it with the configs about to
// be set (read back from the broker), then the configs are changed (and
// DeleteRecords issued) and the broker deletes at its next retention check.
// The set of base offsets the broker removed must equal the set the guard
// called eligible. Time cases use record timestamps hours away from
// retention.ms, so the two clocks need not agree to the millisecond.
func TestDifferentialRetention(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{
		RetentionCheckMs:  1000,
		FileDeleteDelayMs: 60000,
		Props: []string{
			"replica.high.watermark.checkpoint.interval.ms=300",
			"log.flush.start.offset.checkpoint.interval.ms=300",
			"log.cleaner.backoff.ms=300",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	const seg = "16384" // ~15 records of 1000 bytes per segment
	h := time.Hour
	old, recent := 3*h, 10*time.Minute
	base := map[string]string{"internal.segment.bytes": seg, "retention.ms": "-1", "retention.bytes": "-1", "min.cleanable.dirty.ratio": "1.0"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	mixed := append(append(ages(45, old), ages(25, recent)...), ages(10, 0)...)
	topics := []diffTopic{
		{name: "diff-time", create: base, flip: map[string]string{"retention.ms": "3600000"}, records: mixed},
		{name: "diff-all-expired", create: base, flip: map[string]string{"retention.ms": "3600000"}, records: ages(70, old)},
		{name: "diff-size", create: base, flip: map[string]string{"retention.bytes": "40000"}, records: ages(80, 0)},
		{name: "diff-lso", create: base, records: ages(80, 0), lso: 40},
		{name: "diff-compact", create: with(base, "cleanup.policy", "compact"), flip: map[string]string{"retention.ms": "3600000", "retention.bytes": "0"}, records: ages(70, old)},
		{name: "diff-compact-delete", create: with(base, "cleanup.policy", "compact,delete"), flip: map[string]string{"retention.ms": "3600000"}, records: mixed},
		{name: "diff-compact-delete-size", create: with(base, "cleanup.policy", "compact,delete"), flip: map[string]string{"retention.bytes": "30000"}, records: ages(60, 0)},
	}
	canaries := []diffTopic{
		{name: "diff-canary", create: base, records: ages(40, 0)},
		{name: "diff-canary-cd", create: with(base, "cleanup.policy", "compact,delete"), records: ages(40, 0)},
	}
	producer := b.Producer(t)
	for _, tp := range append(slices.Clone(topics), canaries...) {
		b.CreateTopic(t, tp.name, 1, tp.create)
		now := time.Now()
		for i, age := range tp.records {
			value := make([]byte, 1000)
			for j := range value {
				value[j] = byte('a' + (i+j)%26)
			}
			_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: tp.name, Partition: 0,
				Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.ByteEncoder(value), Timestamp: now.Add(-age)})
			if err != nil {
				t.Fatalf("produce %s record %d: %v", tp.name, i, err)
			}
		}
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the checkpointed high watermark covers every record: the
	// broker's in-memory value is there already.
	var ld agent.LogDir
	var scanTime time.Time
	kafkatest.Eventually(t, 30*time.Second, func() error {
		scanTime = time.Now()
		ld = scanner.ScanLogDir(b.LogDir, nil)
		if ld.Err != nil {
			return ld.Err
		}
		for _, tp := range topics {
			p, ok := partition(ld, tp.name)
			if !ok || p.HighWatermark != int64(len(tp.records)) || p.LogEndOffset != int64(len(tp.records)) {
				return fmt.Errorf("%s: high watermark %d, log end offset %d, want %d", tp.name, p.HighWatermark, p.LogEndOffset, len(tp.records))
			}
		}
		return nil
	})
	if errs := scanner.Errors(); len(errs) > 0 {
		t.Errorf("R6: scan errors on a healthy broker: %v", errs)
	}
	before := map[string][]int64{}
	for _, tp := range append(slices.Clone(topics), canaries...) {
		p, _ := partition(ld, tp.name)
		before[tp.name] = bases(p.Segments)
		if len(p.Segments) < 3 && tp.name != "diff-canary" && tp.name != "diff-canary-cd" {
			t.Fatalf("%s: only %d segments: the scenario needs several", tp.name, len(p.Segments))
		}
	}

	// Flip the configs and move the log start offset.
	admin := b.Admin(t)
	for _, tp := range topics {
		if tp.flip != nil {
			alter(t, admin, tp.name, tp.flip)
		}
		if tp.lso > 0 {
			if err := admin.DeleteRecords(tp.name, map[int32]int64{0: tp.lso}); err != nil {
				t.Fatalf("delete records %s: %v", tp.name, err)
			}
		}
	}
	// Read the new configs back from the broker, as the agent does.
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	fetcher := kafkaadmin.NewConfigFetcher(client, ld.BrokerID)
	names := make([]string, 0, len(topics))
	for _, tp := range topics {
		names = append(names, tp.name)
	}
	var configs agent.ConfigSet
	kafkatest.Eventually(t, 30*time.Second, func() error {
		configs, err = fetcher.FetchConfigs(t.Context(), names)
		if err != nil {
			return err
		}
		for _, tp := range topics {
			c, ok := configs.Topics[tp.name]
			if !ok {
				return fmt.Errorf("%s: no config", tp.name)
			}
			for k, v := range tp.flip {
				if got := configValue(c, k); got != v {
					return fmt.Errorf("%s: %s=%s, want %s", tp.name, k, got, v)
				}
			}
		}
		return nil
	})

	// The guard's prediction: the pre-flip scan classified with the new
	// configs at the scan's clock (and, for DeleteRecords, the new log
	// start offset, which the broker checkpoints only later).
	predicted := map[string][]int64{}
	for _, tp := range topics {
		p, _ := partition(ld, tp.name)
		if tp.lso > 0 {
			p.LogStartOffset = tp.lso
		}
		c := agent.Classify(p, configs.For(tp.name), scanTime)
		var el []int64
		for _, s := range c.Segments {
			if s.State == agent.StateEligible {
				el = append(el, s.BaseOffset)
			}
		}
		predicted[tp.name] = el
		t.Logf("%s: segments %v, predicted eligible %v (%s)", tp.name, before[tp.name], el, reasons(c.Segments))
	}
	wantSome := map[string]bool{"diff-time": true, "diff-all-expired": true, "diff-size": true, "diff-lso": true, "diff-compact-delete": true, "diff-compact-delete-size": true}
	for name := range wantSome {
		if len(predicted[name]) == 0 {
			t.Errorf("%s: the scenario predicts no deletion; it must exercise one", name)
		}
	}
	if n := len(predicted["diff-all-expired"]); n != len(before["diff-all-expired"]) {
		t.Errorf("R1.3 all-expired: predicted %d of %d segments", n, len(before["diff-all-expired"]))
	}

	// Wait until the broker removed at least the predicted segments.
	kafkatest.Eventually(t, 60*time.Second, func() error {
		for _, tp := range topics {
			gone := vanished(t, b.LogDir, tp.name, before[tp.name])
			for _, o := range predicted[tp.name] {
				if !slices.Contains(gone, o) {
					return fmt.Errorf("%s: broker has not deleted %d yet (gone %v, predicted %v)", tp.name, o, gone, predicted[tp.name])
				}
			}
		}
		return nil
	})
	// Then let a full retention check and a full cleaner pass run after it
	// (canary topics flipped now are deleted by them), and compare exactly.
	alter(t, admin, "diff-canary", map[string]string{"retention.bytes": "0"})
	alter(t, admin, "diff-canary-cd", map[string]string{"retention.bytes": "0"})
	for _, c := range canaries {
		kafkatest.Eventually(t, 60*time.Second, func() error {
			if gone := vanished(t, b.LogDir, c.name, before[c.name]); !slices.Contains(gone, 0) {
				return fmt.Errorf("%s: not deleted yet", c.name)
			}
			return nil
		})
	}
	for _, tp := range topics {
		gone := vanished(t, b.LogDir, tp.name, before[tp.name])
		if !slices.Equal(gone, predicted[tp.name]) {
			t.Errorf("R1.3 %s: broker deleted %v, guard predicted %v", tp.name, gone, predicted[tp.name])
		}
	}

	// R1.3: the scanner reads the log start offset the broker checkpoints.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		p, _ := partition(scanner.ScanLogDir(b.LogDir, nil), "diff-lso")
		if p.LogStartOffset != 40 {
			return fmt.Errorf("log start offset %d, want 40", p.LogStartOffset)
		}
		return nil
	})
	// R1.4/R1.6: deleted segments wait as .deleted files, counted as pending.
	if ld := scanner.ScanLogDir(b.LogDir, nil); ld.PendingDeleteBytes == 0 {
		t.Errorf("R1.4: no pending-delete bytes after deletions (file.delete.delay.ms is 60s)")
	}
}

func alter(t *testing.T, admin sarama.ClusterAdmin, topic string, kv map[string]string) {
	t.Helper()
	entries := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range kv {
		entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false); err != nil {
		t.Fatalf("alter configs of %s: %v", topic, err)
	}
}

func configValue(c agent.TopicConfig, key string) string {
	switch key {
	case "retention.ms":
		return fmt.Sprint(c.RetentionMs)
	case "retention.bytes":
		return fmt.Sprint(c.RetentionBytes)
	case "cleanup.policy":
		return c.CleanupPolicy.String()
	}
	return "?"
}

func partition(ld agent.LogDir, topic string) (agent.Partition, bool) {
	for _, p := range ld.Partitions {
		if p.Topic == topic && p.Partition == 0 && p.Kind == agent.KindLive {
			return *p, true
		}
	}
	return agent.Partition{}, false
}

func bases(segs []agent.Segment) []int64 {
	out := make([]int64, 0, len(segs))
	for _, s := range segs {
		out = append(out, s.BaseOffset)
	}
	return out
}

func reasons(segs []agent.Segment) string {
	var b strings.Builder
	for _, s := range segs {
		fmt.Fprintf(&b, "%d:%s/%s ", s.BaseOffset, s.State, s.Reason)
	}
	return strings.TrimSpace(b.String())
}

// vanished returns which of the base offsets no longer have a live .log
// file (deleted, or renamed .deleted) in the topic's partition 0.
func vanished(t *testing.T, logDir, topic string, was []int64) []int64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(logDir, topic+"-0"))
	if err != nil {
		t.Fatal(err)
	}
	live := map[int64]bool{}
	for _, e := range entries {
		var o int64
		if n, _ := fmt.Sscanf(e.Name(), "%020d.log", &o); n == 1 && strings.HasSuffix(e.Name(), ".log") {
			live[o] = true
		}
	}
	var gone []int64
	for _, o := range was {
		if !live[o] {
			gone = append(gone, o)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i] < gone[j] })
	return gone
}
