//go:build integration

package enforcer_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R1.2, R6 on a real JBOD broker: a log dir the broker took offline gets
// no retention from Kafka and no DeleteRecords from the guard. The second
// log dir is bind-mounted read-only over itself while the broker runs:
// Kafka's next write there that fails with an IOException makes
// LogDirFailureChannel take the dir offline (measured: about 60 s after
// the remount, with the checkpoint intervals at 300 ms and 1 s: which
// write fails first is not pinned down here), and DescribeLogDirs answers
// KAFKA_STORAGE_ERROR for it. The
// enforcer's evidence then reports the dir offline (identity
// broker_log_dir_offline, published by OfflineLogDirs), the agent's model
// holds every partition there (log_dir_offline: nothing eligible), and at
// the top of the purge band the guard plans no deletion there, where the
// same guard, before, planned one. Needs root (mount).
func TestR1_2OfflineLogDirOnRealBroker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount the log dir read-only")
	}
	start := time.Now()
	b, err := kafkatest.Start(kafkatest.Options{ExtraLogDirs: 1, RetentionCheckMs: 1000,
		Props: []string{"replica.high.watermark.checkpoint.interval.ms=300", "log.flush.offset.checkpoint.interval.ms=1000",
			"log.flush.start.offset.checkpoint.interval.ms=1000"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("JBOD broker up in %s", time.Since(start).Round(time.Millisecond))
	off := b.ExtraLogDirs[0]
	// A topic whose partition Kafka placed in the second log dir (the
	// broker places a new partition in the dir holding the fewest).
	var topic string
	for i := range 4 {
		name := fmt.Sprintf("offline-%d", i)
		b.CreateTopic(t, name, 1, map[string]string{"internal.segment.bytes": "16384", "retention.ms": "-1", "retention.bytes": "-1"})
		if _, err := os.Stat(filepath.Join(off, name+"-0")); err == nil {
			topic = name
			break
		}
	}
	if topic == "" {
		t.Fatalf("no partition placed in %s", off)
	}
	produceRounds(t, b, topic, load{partitions: 1, rounds: 4, records: 30, size: 1000})

	capacity := &fixedCapacity{}
	src := &scantest.Source{LogDir: off, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	capacity.set(1 << 40)
	used := usedBytes(src)
	capacity.set(uint64(float64(used) / 0.8995)) // the top of the purge band
	src.ScanOnce()
	cfg := enforcer.Config{Interval: time.Second, Purge: purgeMechanics}

	// The control: while the dir is online, the guard (observe mode)
	// plans a purge of the partition.
	dry := newGuard(t, b, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_offline"})
	if err := dry.e.Reconcile(t.Context()); err != nil {
		t.Logf("observe pass: %v", err)
	}
	if n := len(dry.logs.lines("would delete records")); n == 0 {
		t.Fatal("the control: no deletion planned while the dir is online; the scenario needs one")
	}

	// The dir goes read-only under the running broker.
	mount := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v\n%s", args, err, out)
		}
	}
	mount("--bind", off, off)
	// Lazy: the broker may still hold files open under the bind mount
	// when the test ends (it stops after this cleanup runs).
	t.Cleanup(func() { _ = exec.Command("umount", "-l", off).Run() })
	// The remount read-only fails with EBUSY while the broker has a file
	// open for writing under the new mount (a checkpoint it writes every
	// 300 ms): try again until a moment without one.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if out, err := exec.Command("mount", "-o", "remount,bind,ro", off).CombinedOutput(); err != nil {
			return fmt.Errorf("mount -o remount,bind,ro %s: %v\n%s", off, err, out)
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(off, "probe"), nil, 0o644); err == nil {
		t.Fatal("the log dir is still writable")
	}
	mounted := time.Now()
	// Kafka's word first, read by the observing guard (which deletes
	// nothing): an enforcing guard before it would purge a dir Kafka
	// still has online.
	kafkatest.Eventually(t, 90*time.Second, func() error {
		_ = dry.e.Reconcile(t.Context())
		if _, ok := dry.e.OfflineLogDirs()[off]; !ok {
			return fmt.Errorf("offline log dirs %v, want %s", dry.e.OfflineLogDirs(), off)
		}
		return nil
	})
	t.Logf("offline %s after the remount: %s", time.Since(mounted).Round(time.Millisecond), dry.e.OfflineLogDirs()[off])
	cfg.Enabled = true
	g := newGuard(t, b, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_offline"})
	_ = g.e.Reconcile(t.Context())
	detail := g.e.OfflineLogDirs()[off]
	// KAFKA_STORAGE_ERROR, as Sarama words it.
	if !strings.Contains(detail, "Disk error") {
		t.Errorf("R1.2/the broker's word %q does not name the storage error", detail)
	}
	if v := metric(g.reg, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": off, "reason": string(agent.IdentityBrokerOffline)}); v != 1 {
		t.Errorf("R7.1/log_dir_identity{reason=broker_log_dir_offline} %v, want 1", v)
	}
	for range 5 {
		_ = g.e.Reconcile(t.Context())
	}
	if n := len(g.logs.lines("deleted records", "deleted unexpired records")); n != 0 {
		t.Errorf("R1.2/the guard deleted records in an offline log dir: %d line(s)", n)
	}
	if v := metric(g.reg, "kafka_disk_guard_actions_total", map[string]string{"action": "purge", "result": "ok"}); v != 0 {
		t.Errorf("R1.2/actions_total{purge,ok} %v in an offline log dir, want 0", v)
	}

	// The agent's model of the same scan, with the enforcer's offline
	// dirs (as the live agent's configs carry them): every partition held,
	// nothing eligible.
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	expired := agent.DefaultTopicConfig()
	expired.RetentionMs = 1 // every closed segment past retention.ms
	configs := agent.ConfigSet{Topics: map[string]agent.TopicConfig{topic: expired}, Defaults: agent.DefaultTopicConfig(),
		OfflineLogDirs: g.e.OfflineLogDirs()}
	snap := agent.BuildSnapshot(time.Now(), []agent.LogDir{scanner.ScanLogDir(off, nil)}, configs, agent.Health{})
	var found bool
	for _, p := range snap.LogDirs[0].Partitions {
		if p.Topic != topic {
			continue
		}
		found = true
		if p.Held != agent.HeldLogDirOffline {
			t.Errorf("R1.2/%s held %q, want %s", p.Dir, p.Held, agent.HeldLogDirOffline)
		}
		for _, s := range p.Segments {
			if s.State == agent.StateEligible {
				t.Errorf("R1.2/%s: segment %d eligible in an offline log dir", p.Dir, s.BaseOffset)
			}
		}
		if len(p.Segments) < 3 {
			t.Errorf("%s: %d segments, the scenario needs several", p.Dir, len(p.Segments))
		}
	}
	if !found {
		t.Fatalf("%s not in the scan of %s", topic, off)
	}
}
