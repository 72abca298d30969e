//go:build integration

package kafkaadmin

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// scanSource rescans the log dirs at every Snapshot (the mover asks
// once a pass), or gives fixed when it is set (an agent's snapshot that
// lags the broker).
type scanSource struct {
	t       *testing.T
	scanner *agent.Scanner
	paths   []string
	fixed   *agent.Snapshot
}

func (s scanSource) Snapshot() *agent.Snapshot {
	if s.fixed != nil {
		return s.fixed
	}
	dirs, h := s.scanner.ScanLogDirs(s.paths, 0)
	snap := agent.BuildSnapshot(time.Now(), dirs, agent.ConfigSet{Defaults: agent.DefaultTopicConfig(), Time: time.Now()}, h)
	return &snap
}
func (s scanSource) Updated() <-chan struct{} { return nil }

// R3.8, the done-when, on the real cluster: node 3 has two tmpfs
// log dirs of 64 MiB; a flood into one (3 partitions of 14 MiB, 66%) is
// relieved by the enforcing mover: it records its throttle claim with the
// operator's value, sets the throttle, moves one partition (the largest
// cold one) to the other dir, and once the swap is done restores the
// operator's value and removes the claim. No record is lost, nothing is
// purged (every partition reads back from offset 0), the source's usage
// falls under the move target and the destination's rises by the copy.
func TestR3_8MoverRelievesAFloodedDirOnRealCluster(t *testing.T) {
	node := cluster.Node(3)
	cl := client(t, kafkatest.GuardUser, kafkatest.GuardPassword)
	m, err := NewLogDirMoves(cl)
	if err != nil {
		t.Fatal(err)
	}
	const topic = "jbod.relief"
	cluster.CreateTopicAssigned(t, topic, [][]int32{{3}, {3}, {3}}, map[string]string{"segment.bytes": "4194304"})
	adm := cluster.Admin(t)
	t.Cleanup(func() { adm.DeleteTopic(topic) })
	src, dst := node.LogDir, node.ExtraLogDirs[0]

	// Kafka spreads new partitions over the dirs: gather them in src
	// (empty, so at once).
	moves := []enforcer.Move{{Topic: topic, Partition: 0, To: src}, {Topic: topic, Partition: 1, To: src}, {Topic: topic, Partition: 2, To: src}}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		rs, err := m.Replicas(t.Context(), 3)
		if err != nil {
			return err
		}
		in := 0
		for _, r := range rs {
			if r.Topic == topic && r.Dir == src && !r.Future {
				in++
			}
		}
		if in == 3 {
			return nil
		}
		if _, err := m.Move(t.Context(), 3, moves); err != nil {
			return err
		}
		return fmt.Errorf("%d of 3 partitions in %s", in, src)
	})

	const n, size = 28, 512 << 10 // 14 MiB a partition
	for p := range int32(3) {
		produceTo(t, node, topic, p, n, size)
	}
	usage := func(path string) (used, capacity uint64) {
		fs, err := agent.ReadFilesystem(path)
		if err != nil {
			t.Fatal(err)
		}
		return fs.UsedBytes, fs.TotalBytes
	}
	srcBefore, capacity := usage(src)
	dstBefore, _ := usage(dst)
	t.Logf("before: %s %.1f%% (%d MiB), %s %.1f%% (%d MiB)", src, pct(srcBefore, capacity), srcBefore>>20, dst, pct(dstBefore, capacity), dstBefore>>20)
	if pct(srcBefore, capacity) < 60 {
		t.Fatalf("the flood filled %s to %.1f%% only", src, pct(srcBefore, capacity))
	}

	// The operator's throttle, which must come back.
	const operators = "999999999"
	if err := m.SetThrottle(t.Context(), 3, operators, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.SetThrottle(t.Context(), 3, "", false) })
	waitThrottle(t, m, operators, true)

	store, err := NewEnforce(cluster.SASLAddrs(), node.GuardConfig(), "__kdg_jbod_ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Prepare(t.Context()); err != nil { // as Mover.Run does
		t.Fatal(err)
	}
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	snaps := &scanSource{t: t, scanner: scanner, paths: []string{src, dst}}
	stale := snaps.Snapshot() // every partition in src
	var logs bytes.Buffer
	broker := int32(3)
	const rate = 8 << 20
	mv, err := enforcer.NewMover(enforcer.Config{Enabled: true, BrokerID: &broker, Interval: time.Second,
		Relief: enforcer.ReliefConfig{Move: enforcer.MoveConfig{FromPercent: 60, TargetPercent: 50, BytesPerSecond: rate}}},
		slog.New(slog.NewJSONHandler(&logs, nil)), prometheus.NewRegistry(),
		enforcer.MoverDeps{Snapshots: snaps, Admin: m, Store: store,
			Evidence: NewEvidence(cl), Clock: enforcer.SystemClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatalf("first pass: %v\n%s", err, logs.String())
	}
	recs, err := store.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	claim, ok := recs.Throttles[3]
	if !ok || claim.Orig == nil || *claim.Orig != operators || claim.Value != fmt.Sprint(rate) || len(claim.Moves) != 1 {
		t.Fatalf("claim after the first pass: %+v (ok %v)\n%s", claim, ok, logs.String())
	}
	t.Logf("claim: %s=%s (operator's %s), moves %v", claim.Key, claim.Value, *claim.Orig, claim.Moves)
	waitThrottle(t, m, fmt.Sprint(rate), true)

	// Passes until the move is done and the operator's value is back.
	start := time.Now()
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if err := mv.Pass(t.Context()); err != nil {
			return err
		}
		recs, err := store.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if c, ok := recs.Throttles[3]; ok {
			return fmt.Errorf("claim still held (releasing %v)", c.Releasing)
		}
		return nil
	})
	t.Logf("moved and restored in %s", time.Since(start).Round(100*time.Millisecond))
	waitThrottle(t, m, operators, true)

	// R7.1: a snapshot from before the move (the agent's lags the broker)
	// shows the moved partition still in src and src still full; the
	// broker keeps it in dst now, and the mover starts nothing on it.
	snaps.fixed = stale
	if err := mv.Pass(t.Context()); err != nil {
		t.Fatalf("pass on a stale snapshot: %v\n%s", err, logs.String())
	}
	snaps.fixed = nil

	// The old log goes after log.segment.delete.delay.ms (1 s here).
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if u, _ := usage(src); pct(u, capacity) >= 50 {
			return fmt.Errorf("%s still %.1f%%", src, pct(u, capacity))
		}
		return nil
	})
	srcAfter, _ := usage(src)
	dstAfter, _ := usage(dst)
	t.Logf("after: %s %.1f%% (%d MiB), %s %.1f%% (%d MiB)", src, pct(srcAfter, capacity), srcAfter>>20, dst, pct(dstAfter, capacity), dstAfter>>20)
	if dstAfter < dstBefore+12<<20 {
		t.Errorf("%s grew by %d MiB, want the 14 MiB partition", dst, (dstAfter-dstBefore)>>20)
	}
	if n := bytes.Count(logs.Bytes(), []byte(`"msg":"move started"`)); n != 1 {
		t.Errorf("%d moves started, want 1:\n%s", n, logs.String())
	}
	for p := range int32(3) {
		got := consumeFrom(t, node, topic, p, n)
		for i, v := range got {
			if len(v) != size || !bytes.Equal(v[:26], want26(i)) {
				t.Fatalf("partition %d record %d differs", p, i)
			}
		}
	}
}

func pct(used, capacity uint64) float64 { return 100 * float64(used) / float64(capacity) }

// produceTo writes n records of size bytes to one partition as admin.
func produceTo(t *testing.T, b *kafkatest.Broker, topic string, partition int32, n, size int) {
	t.Helper()
	cfg := b.UserConfig(kafkatest.AdminUser, kafkatest.AdminPassword)
	cfg.Producer.MaxMessageBytes = 2 * size
	cfg.Producer.Partitioner = sarama.NewManualPartitioner // the default hash partitioner ignores Partition
	p, err := sarama.NewSyncProducer([]string{b.SASLAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		v := bytes.Repeat(want26(i), size/26+1)[:size]
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce %s-%d record %d: %v", topic, partition, i, err)
		}
	}
}

// consumeFrom reads n records of one partition from offset 0 as admin;
// a log that does not start at 0 was purged.
func consumeFrom(t *testing.T, b *kafkatest.Broker, topic string, partition int32, n int) [][]byte {
	t.Helper()
	cfg := b.UserConfig(kafkatest.AdminUser, kafkatest.AdminPassword)
	cfg.Consumer.Return.Errors = true
	c, err := sarama.NewConsumer([]string{b.SASLAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got [][]byte
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	for len(got) < n {
		select {
		case msg := <-pc.Messages():
			if len(got) == 0 && msg.Offset != 0 {
				t.Fatalf("%s-%d starts at offset %d: records were purged", topic, partition, msg.Offset)
			}
			got = append(got, msg.Value)
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-timer.C:
			t.Fatalf("%s-%d: read back %d of %d records before the deadline", topic, partition, len(got), n)
		}
	}
	return got
}
