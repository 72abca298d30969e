//go:build integration

package kafkaadmin

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.7, R8.5 on the real cluster: the ownership topic is deleted while
// the mover holds its throttle claim (the operator's value in it) and is
// created again empty (the guard's Prepare, as an agent's next write
// does): the mover writes its claim again from memory, and once the move
// is done the operator's value comes back and the claim goes. Before, it
// read "no claim" from the new topic and left its own throttle in place
// for good (TestR8_7MoverWritesBackTheThrottleClaimTheLedgerLost).
func TestR8_7MoverWritesBackItsThrottleClaimAfterTheLedgerIsDeleted(t *testing.T) {
	node := cluster.Node(3)
	cl := client(t, kafkatest.GuardUser, kafkatest.GuardPassword)
	m, err := NewLogDirMoves(cl)
	if err != nil {
		t.Fatal(err)
	}
	const topic, ledgerTopic = "jbod.lost", "__kdg_jbod_lost_ledger"
	cluster.CreateTopicAssigned(t, topic, [][]int32{{3}, {3}, {3}}, map[string]string{"segment.bytes": "4194304"})
	adm := cluster.Admin(t)
	t.Cleanup(func() { adm.DeleteTopic(topic); adm.DeleteTopic(ledgerTopic) })
	src, dst := node.LogDir, node.ExtraLogDirs[0]
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
	const n, size = 28, 512 << 10 // 14 MiB a partition: src over 60%
	for p := range int32(3) {
		produceTo(t, node, topic, p, n, size)
	}

	const operators = "999999999"
	if err := m.SetThrottle(t.Context(), 3, operators, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.SetThrottle(t.Context(), 3, "", false) })
	waitThrottle(t, m, operators, true)

	store, err := NewEnforce(cluster.SASLAddrs(), node.GuardConfig(), ledgerTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	broker := int32(3)
	const rate = 1 << 20 // 14 s for a partition: the ledger is lost mid-move
	mv, err := enforcer.NewMover(enforcer.Config{Enabled: true, BrokerID: &broker, Interval: time.Second,
		Relief: enforcer.ReliefConfig{Move: enforcer.MoveConfig{FromPercent: 60, TargetPercent: 50, BytesPerSecond: rate}}},
		slog.New(slog.NewJSONHandler(&logs, nil)), prometheus.NewRegistry(),
		enforcer.MoverDeps{Snapshots: &scanSource{t: t, scanner: scanner, paths: []string{src, dst}}, Admin: m, Store: store,
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
	if c, ok := recs.Throttles[3]; !ok || c.Orig == nil || *c.Orig != operators {
		t.Fatalf("claim after the first pass: %+v (ok %v)\n%s", c, ok, logs.String())
	}
	waitThrottle(t, m, fmt.Sprint(rate), true)

	// The ledger is lost, and created again empty.
	if err := adm.DeleteTopic(ledgerTopic); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		_, err := store.LoadRecords(t.Context())
		if err == nil {
			return fmt.Errorf("the ownership topic still reads")
		}
		return nil
	})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		// Created again (a Prepare that ran while the deletion was still
		// under way found the old topic, so it is tried until a read
		// succeeds).
		if err := store.Prepare(t.Context()); err != nil {
			return err
		}
		recs, err := store.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if len(recs.Throttles) != 0 {
			return fmt.Errorf("the new topic holds %v", recs.Throttles)
		}
		return nil
	})

	// Passes until the move is done and the operator's value is back.
	wroteBack := false
	kafkatest.Eventually(t, 120*time.Second, func() error {
		if err := mv.Pass(t.Context()); err != nil {
			return err
		}
		wroteBack = wroteBack || bytes.Contains(logs.Bytes(), []byte("written again from memory"))
		recs, err := store.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if c, ok := recs.Throttles[3]; ok {
			return fmt.Errorf("claim still held (releasing %v)", c.Releasing)
		}
		if !wroteBack {
			return fmt.Errorf("the claim was not written back:\n%s", logs.String())
		}
		return nil
	})
	waitThrottle(t, m, operators, true)
}
