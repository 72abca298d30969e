//go:build integration

package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Issue 4 on a real broker: a segment roll, a retention deletion and a new
// topic each reach the snapshot within a second of happening on disk,
// through file events, without a full rescan.
func TestLiveAgentFollowsRealBroker(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{RetentionCheckMs: 500, FileDeleteDelayMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	const topic = "live-roll"
	b.CreateTopic(t, topic, 1, map[string]string{"internal.segment.bytes": "65536", "retention.ms": "-1"})

	a, err := New(Config{LogDirs: []string{b.LogDir}, ResyncInterval: time.Hour, PollInterval: time.Hour, ReclassifyInterval: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)), staticConfigs{Defaults: DefaultTopicConfig(), Time: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 5*time.Second, a, func(s *Snapshot) error {
		if _, ok := livePartition(s, topic+"-0"); !ok {
			return errors.New("topic not seen")
		}
		return nil
	})

	// diskSegments lists the partition's segment base offsets on disk
	// as the scanner reads them right now: the reference for the snapshot.
	diskSegments := func() []int64 {
		p, err := a.scanner.ReadPartition(b.LogDir, topic+"-0", a.scanner.ReadCheckpoints(b.LogDir))
		if err != nil {
			t.Fatal(err)
		}
		return segmentBases(p)
	}
	latency := func(what string, changed func() bool) time.Duration {
		t.Helper()
		// The moment the change is on disk, by polling the directory.
		kafkatest.Eventually(t, 30*time.Second, func() error {
			if !changed() {
				return fmt.Errorf("%s not on disk yet", what)
			}
			return nil
		})
		onDisk := time.Now()
		want := diskSegments()
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			p, _ := livePartition(s, topic+"-0")
			if got := segmentBases(p); fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("%s: snapshot %v, disk %v", what, got, want)
			}
			return nil
		})
		d := time.Since(onDisk)
		t.Logf("%s visible in the snapshot %s after it was on disk", what, d.Round(time.Millisecond))
		return d
	}

	before := len(diskSegments())
	producer := b.Producer(t)
	value := make([]byte, 16<<10)
	for range 12 {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}); err != nil {
			t.Fatal(err)
		}
	}
	latency("segment roll", func() bool { return len(diskSegments()) > before })

	// Retention deletion: DeleteRecords past the first segments, then the
	// broker's retention check removes them (renamed .deleted, then gone).
	bases := diskSegments()
	if len(bases) < 3 {
		t.Fatalf("want at least 3 segments, have %v", bases)
	}
	admin := b.Admin(t)
	if err := admin.DeleteRecords(topic, map[int32]int64{0: bases[2]}); err != nil {
		t.Fatal(err)
	}
	latency("retention deletion", func() bool { return diskSegments()[0] == bases[2] })

	b.CreateTopic(t, "live-new", 1, nil)
	waitFor(t, time.Second, a, func(s *Snapshot) error {
		if _, ok := livePartition(s, "live-new-0"); !ok {
			return errors.New("new topic not in the snapshot")
		}
		return nil
	})

	s := a.Snapshot()
	rescans := 0
	for trigger, n := range s.Health.Rescans {
		if trigger != "start" {
			rescans += int(n)
		}
	}
	if s.Health.Rescans["start"] != 1 || rescans != 0 {
		t.Fatalf("rescans %v: the changes must come from events", s.Health.Rescans)
	}
	if s.Health.PartitionRereads == 0 {
		t.Fatal("no partition re-reads counted")
	}
	keys := make([]string, 0)
	for k := range s.Health.Rescans {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("rescans %v, partition re-reads %d", keys, s.Health.PartitionRereads)
}
