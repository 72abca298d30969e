//go:build integration

package kafkaadmin

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R3.8 on a real broker with two tmpfs log dirs (node 3): a flood into
// one dir is moved to the other by AlterReplicaLogDirs (over the guard's
// SASL connection) under the throttle the guard sets, with no record lost
// and nothing purged; the operator's throttle comes back afterwards. The
// source dir's usage falls by the partition's size, the destination's
// rises by it.
func TestR3_8MoveWithinBrokerOnRealCluster(t *testing.T) {
	node := cluster.Node(3)
	if len(node.ExtraLogDirs) != 1 {
		t.Fatalf("node 3 has log dirs %s and %v, want two", node.LogDir, node.ExtraLogDirs)
	}
	m, err := NewLogDirMoves(client(t, kafkatest.GuardUser, kafkatest.GuardPassword))
	if err != nil {
		t.Fatal(err)
	}
	const topic = "jbod.flood"
	cluster.CreateTopicAssigned(t, topic, [][]int32{{3}}, map[string]string{"segment.bytes": "4194304"})
	adm := cluster.Admin(t)
	t.Cleanup(func() { adm.DeleteTopic(topic) })

	where := func() (live, future string) {
		t.Helper()
		rs, err := m.Replicas(t.Context(), 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Topic == topic && r.Partition == 0 {
				if r.Future {
					future = r.Dir
				} else {
					live = r.Dir
				}
			}
		}
		return live, future
	}
	var from string
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if from, _ = where(); from == "" {
			return errors.New("node 3 does not list the partition yet")
		}
		return nil
	})
	to := node.LogDir
	if from == node.LogDir {
		to = node.ExtraLogDirs[0]
	}

	// The flood: 32 MiB of 512 KiB records into the one dir.
	const n, size = 64, 512 << 10
	produceTo(t, node, topic, 0, n, size)
	usage := func(path string) uint64 {
		fs, err := agent.ReadFilesystem(path)
		if err != nil {
			t.Fatal(err)
		}
		return fs.UsedBytes
	}
	fromBefore, toBefore := usage(from), usage(to)
	t.Logf("before: %s %d MiB used, %s %d MiB used", from, fromBefore>>20, to, toBefore>>20)
	if fromBefore < 32<<20 {
		t.Fatalf("the flood put only %d bytes in %s", fromBefore, from)
	}

	// An operator's throttle is in place; the guard sets its own for the
	// move and restores the operator's after.
	if err := m.SetThrottle(t.Context(), 3, "999999999", true); err != nil {
		t.Fatal(err)
	}
	waitThrottle(t, m, "999999999", true)
	prev, prevSet, err := m.Throttle(t.Context(), 3)
	if err != nil || !prevSet || prev != "999999999" {
		t.Fatalf("throttle before = %q %v %v, want the operator's", prev, prevSet, err)
	}
	const rate = 8 << 20
	if err := m.SetThrottle(t.Context(), 3, fmt.Sprint(rate), true); err != nil {
		t.Fatal(err)
	}
	waitThrottle(t, m, fmt.Sprint(rate), true)

	start := time.Now()
	res, err := m.Move(t.Context(), 3, []enforcer.Move{{Topic: topic, Partition: 0, From: from, To: to}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res[topic+"/0"]; err != nil {
		t.Fatalf("move refused: %v", err)
	}
	sawFuture := false
	kafkatest.Eventually(t, 60*time.Second, func() error {
		live, future := where()
		sawFuture = sawFuture || future == to
		if live != to || future != "" {
			return fmt.Errorf("partition in %q, future in %q", live, future)
		}
		return nil
	})
	took := time.Since(start)
	t.Logf("moved %d MiB in %s at a throttle of %d MiB/s (saw the -future log: %v)", fromBefore>>20, took.Round(100*time.Millisecond), rate>>20, sawFuture)
	// A throttle of 8 MiB/s makes 32 MiB take about 4 s; unthrottled
	// a tmpfs copy takes well under one.
	if took < 2*time.Second {
		t.Errorf("the move took %s: the throttle did not hold it", took)
	}

	// The operator's value is back.
	if err := m.SetThrottle(t.Context(), 3, prev, prevSet); err != nil {
		t.Fatal(err)
	}
	waitThrottle(t, m, prev, prevSet)
	// ... and the cleanup leaves the broker as it was: no value.
	if err := m.SetThrottle(t.Context(), 3, "", false); err != nil {
		t.Fatal(err)
	}
	waitThrottle(t, m, "", false)

	// The source is freed once the broker removes the old log (file.delete
	// of the -delete dir after log.segment.delete.delay.ms).
	kafkatest.Eventually(t, 90*time.Second, func() error {
		if f := usage(from); f > fromBefore-28<<20 {
			return fmt.Errorf("%s still uses %d MiB", from, f>>20)
		}
		return nil
	})
	fromAfter, toAfter := usage(from), usage(to)
	t.Logf("after: %s %d MiB used, %s %d MiB used", from, fromAfter>>20, to, toAfter>>20)
	if toAfter < toBefore+28<<20 {
		t.Errorf("%s grew from %d to %d MiB, want +32", to, toBefore>>20, toAfter>>20)
	}

	// Every record is there, none purged: the log starts at 0 and reads
	// back in full.
	got := consumeFrom(t, node, topic, 0, n)
	for i, v := range got {
		if len(v) != size || !bytes.Equal(v[:26], want26(i)) {
			t.Fatalf("record %d differs after the move", i)
		}
	}
}

// want26 is the first 26 bytes record i holds.
func want26(i int) []byte {
	out := make([]byte, 26)
	for j := range out {
		out[j] = byte('a' + (i+j)%26)
	}
	return out
}

// waitThrottle polls until broker 3 reports value (a config change travels
// the metadata log).
func waitThrottle(t *testing.T, m *LogDirMoves, value string, set bool) {
	t.Helper()
	kafkatest.Eventually(t, 20*time.Second, func() error {
		v, ok, err := m.Throttle(t.Context(), 3)
		if err != nil {
			return err
		}
		if v != value || ok != set {
			return fmt.Errorf("throttle %q set %v, want %q set %v", v, ok, value, set)
		}
		return nil
	})
}

// What operating.md tells an operator: a move in flight is cancelled by
// moving the partition to the log dir it is in (Kafka drops the -future
// log; ReplicaManager.alterReplicaLogDirs).
func TestR3_8MoveCancelledByMovingBack(t *testing.T) {
	node := cluster.Node(3)
	m, err := NewLogDirMoves(client(t, kafkatest.GuardUser, kafkatest.GuardPassword))
	if err != nil {
		t.Fatal(err)
	}
	const topic = "jbod.cancel"
	cluster.CreateTopicAssigned(t, topic, [][]int32{{3}}, map[string]string{"segment.bytes": "4194304"})
	adm := cluster.Admin(t)
	t.Cleanup(func() { adm.DeleteTopic(topic) })
	produceTo(t, node, topic, 0, 32, 512<<10) // 16 MiB
	var from string
	kafkatest.Eventually(t, 20*time.Second, func() error {
		rs, err := m.Replicas(t.Context(), 3)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Topic == topic && !r.Future {
				from = r.Dir
				return nil
			}
		}
		return errors.New("not listed yet")
	})
	to := node.LogDir
	if from == node.LogDir {
		to = node.ExtraLogDirs[0]
	}
	// 256 KiB/s: the 16 MiB copy would take a minute.
	if err := m.SetThrottle(t.Context(), 3, "262144", true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.SetThrottle(t.Context(), 3, "", false) })
	waitThrottle(t, m, "262144", true)
	move := func(dir string) {
		t.Helper()
		res, err := m.Move(t.Context(), 3, []enforcer.Move{{Topic: topic, Partition: 0, To: dir}})
		if err != nil || res[topic+"/0"] != nil {
			t.Fatalf("move to %s: %v %v", dir, err, res)
		}
	}
	state := func() (live, future string) {
		rs, err := m.Replicas(t.Context(), 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Topic == topic && r.Future {
				future = r.Dir
			} else if r.Topic == topic {
				live = r.Dir
			}
		}
		return live, future
	}
	move(to)
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if _, f := state(); f != to {
			return fmt.Errorf("no -future log in %s yet", to)
		}
		return nil
	})
	move(from) // back: cancels
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if l, f := state(); l != from || f != "" {
			return fmt.Errorf("live in %q, future in %q", l, f)
		}
		return nil
	})
	got := consumeFrom(t, node, topic, 0, 32)
	t.Logf("cancelled: the partition stays in %s, %d records read back", from, len(got))
}
