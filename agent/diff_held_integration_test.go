//go:build integration

package agent_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// TestDifferentialHeldMoving is the broker-as-oracle test of the moving
// hold (spec R1.2): on a JBOD broker with the log cleaner on, a partition
// moved to its other log dir with kafka-reassign-partitions
// --reassignment-json-file, throttled so the move lasts. While its
// -future replica copies, Kafka's retention skips the partition (live and
// -future logs): the guard calls nothing in it eligible, with reason
// moving, while a control topic with the same records and configs is
// deleted as predicted. A DeleteRecords on the moving partition moves its
// log start offset (and times out waiting for the -future replica) and
// frees no disk. Once the throttle is lifted and the move
// ends, the hold is gone and Kafka's retention runs again.
func TestDifferentialHeldMoving(t *testing.T) {
	start := time.Now()
	b, err := kafkatest.Start(kafkatest.Options{
		ExtraLogDirs:      1,
		RetentionCheckMs:  1000,
		FileDeleteDelayMs: 60000,
		Props: []string{
			"replica.high.watermark.checkpoint.interval.ms=300",
			"log.flush.start.offset.checkpoint.interval.ms=300",
			// The future replica fetches little at a time, so the
			// throttle holds it back from the second fetch on.
			"replica.fetch.max.bytes=1024",
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
	t.Logf("JBOD broker up in %s", time.Since(start).Round(time.Millisecond))
	const mv, ctl = "held-move", "held-control"
	create := map[string]string{"internal.segment.bytes": "16384", "retention.ms": "-1", "retention.bytes": "-1"}
	records := ages(70, 3*time.Hour)
	producer := b.Producer(t)
	for _, name := range []string{mv, ctl} {
		b.CreateTopic(t, name, 1, create)
		now := time.Now()
		for i, age := range records {
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: name, Partition: 0,
				Value: sarama.ByteEncoder(value(i)), Timestamp: now.Add(-age)}); err != nil {
				t.Fatalf("produce %s record %d: %v", name, i, err)
			}
		}
	}
	dirs := append([]string{b.LogDir}, b.ExtraLogDirs...)
	// The moving partition goes to the log dir it is not in.
	from, to := dirs[0], dirs[1]
	if _, err := os.Stat(filepath.Join(from, mv+"-0")); err != nil {
		from, to = to, from
	}
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d],"log_dirs":[%q]}]}`, mv, b.NodeID, to)
	planFile := filepath.Join(t.TempDir(), "reassign.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "kafka.sh"), "tool", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
		"--bootstrap-server", b.Addr, "--reassignment-json-file", planFile, "--execute", "--replica-alter-log-dirs-throttle", "100")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kafka-reassign-partitions: %v\n%s", err, out)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// Scan during the move, before the configs flip.
	var lds []agent.LogDir
	var scanTime time.Time
	kafkatest.Eventually(t, 60*time.Second, func() error {
		scanTime, lds = time.Now(), nil
		for _, d := range dirs {
			lds = append(lds, scanner.ScanLogDir(d, nil))
		}
		s := agent.BuildSnapshot(scanTime, lds, agent.ConfigSet{Defaults: agent.DefaultTopicConfig()}, agent.Health{})
		if _, ok := findPartition(s, to, mv, agent.KindFuture); !ok {
			return fmt.Errorf("no -future replica of %s in %s yet", mv, to)
		}
		for _, name := range []string{mv, ctl} {
			p, ok := findPartition(s, "", name, agent.KindLive)
			if want := int64(len(records)); !ok || p.HighWatermark != want || p.LogEndOffset != want {
				return fmt.Errorf("%s: high watermark %d, log end offset %d, want %d", name, p.HighWatermark, p.LogEndOffset, want)
			}
		}
		return nil
	})
	admin := b.Admin(t)
	flip := map[string]string{"retention.ms": "3600000"}
	for _, name := range []string{mv, ctl} {
		alter(t, admin, name, flip)
	}
	fetcher := kafkaadmin.NewConfigFetcher(client, b.NodeID)
	var configs agent.ConfigSet
	kafkatest.Eventually(t, 60*time.Second, func() error {
		configs, err = fetcher.FetchConfigs(t.Context(), []string{mv, ctl})
		if err != nil {
			return err
		}
		for _, name := range []string{mv, ctl} {
			if got := configs.Topics[name].RetentionMs; got != 3600000 {
				return fmt.Errorf("%s: retention.ms %d", name, got)
			}
		}
		return nil
	})
	if configs.Defaults.CleanerDisabled {
		t.Fatalf("the cleaner reads as disabled: the moving hold needs it on")
	}
	snap := agent.BuildSnapshot(scanTime, lds, configs, agent.Health{})
	// The guard's prediction, from the snapshot taken during the move.
	live, _ := findPartition(snap, from, mv, agent.KindLive)
	future, _ := findPartition(snap, to, mv, agent.KindFuture)
	control, ok := findPartition(snap, "", ctl, agent.KindLive)
	if !ok {
		t.Fatalf("no %s partition in the scan", ctl)
	}
	for _, p := range []*agent.Partition{&live, &future} {
		if p.Held != agent.HeldMoving {
			t.Errorf("R1.2 %s: held %q, want moving", p.Dir, p.Held)
		}
		if el := eligibleBases(*p); len(el) > 0 {
			t.Errorf("R1.2 %s: eligible %v while moving, want nothing", p.Dir, el)
		}
	}
	if control.Held != agent.ReasonNone || len(eligibleBases(control)) < 3 {
		t.Fatalf("R1.2 control: held %q, eligible %v: the scenario needs deletions", control.Held, eligibleBases(control))
	}
	if len(live.Segments) < 3 {
		t.Fatalf("%s: %d segments, the scenario needs several", mv, len(live.Segments))
	}
	ctlDir := b.LogDir
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, ctl+"-0")); err == nil {
			ctlDir = d
		}
	}
	// The broker: the control topic's predicted segments go at the next
	// retention checks...
	kafkatest.Eventually(t, 60*time.Second, func() error {
		gone := vanished(t, ctlDir, ctl, bases(control.Segments))
		for _, o := range eligibleBases(control) {
			if !slices.Contains(gone, o) {
				return fmt.Errorf("%s: %d not deleted yet (gone %v)", ctl, o, gone)
			}
		}
		return nil
	})
	// ... a DeleteRecords on the moving partition is accepted ...
	newStart := live.Segments[2].BaseOffset
	t.Logf("moving %s: segments %v, DeleteRecords to %d", mv, bases(live.Segments), newStart)
	// The leader moves the log start offset at once (the records are
	// unreadable), but the request waits for the low watermark, which
	// includes the -future log's log start offset: it times out.
	err = admin.DeleteRecords(mv, map[int32]int64{0: newStart})
	t.Logf("DeleteRecords on the moving partition: %v", err)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		lso, err := client.GetOffset(mv, 0, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		if lso != newStart {
			return fmt.Errorf("log start offset %d, want %d", lso, newStart)
		}
		return nil
	})
	// ... and after several more retention checks nothing of the moving
	// partition is gone: not its expired segments, not those below the
	// new log start offset.
	time.Sleep(5 * time.Second)
	if _, err := os.Stat(filepath.Join(to, filepath.Base(future.Dir))); err != nil {
		t.Fatalf("the move ended before the check (throttle too weak): %v", err)
	}
	if gone := vanished(t, from, mv, bases(live.Segments)); len(gone) > 0 {
		t.Errorf("R1.2 %s: broker deleted %v while moving; the guard predicted nothing", mv, gone)
	}

	// Lift the throttle: the move ends, the hold with it.
	del := sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
	if err := admin.IncrementalAlterConfig(sarama.BrokerResource, fmt.Sprint(b.NodeID),
		map[string]sarama.IncrementalAlterConfigsEntry{"replica.alter.log.dirs.io.max.bytes.per.second": del}, false); err != nil {
		t.Fatalf("lift the throttle: %v", err)
	}
	kafkatest.Eventually(t, 120*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(to, mv+"-0")); err != nil {
			return fmt.Errorf("move not done: %v", err)
		}
		return nil
	})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		configs, err := fetcher.FetchConfigs(t.Context(), []string{mv})
		if err != nil {
			return err
		}
		var lds []agent.LogDir
		for _, d := range dirs {
			lds = append(lds, scanner.ScanLogDir(d, nil))
		}
		s := agent.BuildSnapshot(time.Now(), lds, configs, agent.Health{})
		p, ok := findPartition(s, to, mv, agent.KindLive)
		switch {
		case !ok:
			return fmt.Errorf("%s not in %s", mv, to)
		case p.Held != agent.ReasonNone:
			return fmt.Errorf("R1.2 %s: still held %q after the move", mv, p.Held)
		}
		// Kafka's retention runs again: every record is past retention.ms,
		// so only an empty active segment stays.
		if len(p.Segments) != 1 || p.Segments[0].LogBytes != 0 {
			return fmt.Errorf("%s: segments %v (%s) after the move: retention has not run", mv, bases(p.Segments), reasons(p.Segments))
		}
		return nil
	})
	t.Logf("TestDifferentialHeldMoving took %s", time.Since(start).Round(time.Millisecond))
}

// findPartition returns partition 0 of topic of the given kind in the log
// dir (any log dir for "").
func findPartition(s agent.Snapshot, logDir, topic string, kind agent.PartitionKind) (agent.Partition, bool) {
	for _, ld := range s.LogDirs {
		if logDir != "" && ld.Path != logDir {
			continue
		}
		for _, p := range ld.Partitions {
			if p.Topic == topic && p.Partition == 0 && p.Kind == kind && strings.HasPrefix(p.Dir, topic) {
				return *p, true
			}
		}
	}
	return agent.Partition{}, false
}
