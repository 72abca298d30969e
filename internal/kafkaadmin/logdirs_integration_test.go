//go:build integration

package kafkaadmin

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

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
	last := produceAs(t, node, topic, n, size)
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
	got := consumeAs(t, node, topic, n)
	if len(got) != n || last != n-1 {
		t.Fatalf("read back %d records (last offset %d), want %d", len(got), last, n)
	}
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

// produceAs floods partition 0 as the admin user (anonymous clients hold
// no ACL on this cluster): n records of size bytes, record i starting
// with want26(i). It returns the last offset.
func produceAs(t *testing.T, b *kafkatest.Broker, topic string, n, size int) int64 {
	t.Helper()
	cfg := b.UserConfig(kafkatest.AdminUser, kafkatest.AdminPassword)
	cfg.Producer.MaxMessageBytes = 2 * size
	p, err := sarama.NewSyncProducer([]string{b.SASLAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var last int64
	for i := range n {
		v := bytes.Repeat(want26(i), size/26+1)[:size]
		if _, last, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(v)}); err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
	}
	return last
}

// consumeAs reads n records from the start of partition 0 as the admin
// user.
func consumeAs(t *testing.T, b *kafkatest.Broker, topic string, n int) [][]byte {
	t.Helper()
	c, err := sarama.NewConsumer([]string{b.SASLAddr}, b.UserConfig(kafkatest.AdminUser, kafkatest.AdminPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got [][]byte
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			if len(got) == 0 && m.Offset != 0 {
				t.Fatalf("the log starts at offset %d: records were purged", m.Offset)
			}
			got = append(got, m.Value)
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-timer.C:
			t.Fatalf("read back %d of %d records", len(got), n)
		}
	}
	return got
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
