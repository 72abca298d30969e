//go:build integration

package enforcer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// The tiered broker of the R7.4 tests: its only log dir is a 256 MiB
// tmpfs (remote storage on the ordinary disk), started by the first test
// that asks for it and shared by the rest (stopped in TestMain).
var (
	tieredMu  sync.Mutex
	tiered    *kafkatest.Broker
	tieredErr error
)

func sharedTiered(t testing.TB) *kafkatest.Broker {
	t.Helper()
	tieredMu.Lock()
	defer tieredMu.Unlock()
	if tiered == nil && tieredErr == nil {
		tiered, tieredErr = kafkatest.Start(kafkatest.Options{Tiered: true, TmpfsSize: "256m", RetentionCheckMs: 1000, FileDeleteDelayMs: 1000})
	}
	if tieredErr != nil {
		t.Fatalf("the tiered tests need a real broker with tiered storage and it did not start: %v", tieredErr)
	}
	return tiered
}

func stopTiered() {
	tieredMu.Lock()
	defer tieredMu.Unlock()
	if tiered != nil {
		tiered.Stop()
		tiered = nil
	}
}

// R7.4, R1.7: a producer floods a tiered topic on a broker whose only log
// dir is a 256 MiB tmpfs (remote storage on the ordinary disk), the guard
// enforcing on the cloud profile with the topic's real configs. Kafka's
// own local retention (local.retention.bytes) frees the local disk once
// segments are uploaded; the guard protects if usage still reaches 90%,
// and never sends DeleteRecords for the tiered topic: afterwards the log
// start offset is still 0 and every acknowledged record is readable from
// offset 0, through the remote tier.
func TestR7_4TieredFloodKeepsEveryRecord(t *testing.T) {
	start := time.Now()
	b := sharedTiered(t)
	const topic = "tflood"
	b.CreateTopic(t, topic, 1, map[string]string{"segment.bytes": "1048576", "remote.storage.enable": "true",
		"local.retention.bytes": "8388608"})

	// The topic's config as the cluster has it (read back, as the agent does).
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	configs, err := kafkaadmin.NewConfigFetcher(client, -1).FetchConfigs(t.Context(), []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	if !configs.Topics[topic].Tiered(topic) {
		t.Fatalf("%s read as %+v", topic, configs.Topics[topic])
	}
	src := &scantest.Source{LogDir: b.LogDir, ScanEvery: 100 * time.Millisecond, UsageEvery: 5 * time.Millisecond, Configs: configs.Topics,
		Topics: map[string]bool{topic: true}} // the broker is shared with the other tiered tests
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond}, src: src, ownTopic: enforcer.DefaultOwnershipTopic})

	cfg := b.ClientConfig()
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	p, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var (
		mu       sync.Mutex
		acked    = map[int64]uint64{} // offset -> sequence number in the value
		maxRatio float64
		refused  int
		other    []string
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			r := statfsRatio(b.LogDir)
			mu.Lock()
			maxRatio = max(maxRatio, r)
			mu.Unlock()
		}
	}()
	const target = 320 << 20 // more than the tmpfs holds
	const size = 64 << 10
	var seq uint64
	var produced int64
	for produced < target && ctx.Err() == nil {
		msgs := make([]*sarama.ProducerMessage, 16)
		for i := range msgs {
			v := make([]byte, size)
			binary.BigEndian.PutUint64(v, seq+uint64(i))
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(v)}
		}
		err := p.SendMessages(msgs)
		mu.Lock()
		switch {
		case err == nil:
			for i, m := range msgs {
				acked[m.Offset] = seq + uint64(i)
			}
			produced += int64(len(msgs) * size)
		case errors.Is(err, sarama.ErrTopicAuthorizationFailed) || producerErrIs(err, sarama.ErrTopicAuthorizationFailed):
			refused++
		default:
			var pes sarama.ProducerErrors
			if errors.As(err, &pes) {
				for _, pe := range pes {
					if pe.Err == nil {
						acked[pe.Msg.Offset] = binary.BigEndian.Uint64(pe.Msg.Value.(sarama.ByteEncoder))
					}
				}
			}
			other = append(other, err.Error())
		}
		mu.Unlock()
		seq += uint64(len(msgs))
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	g.stop()
	t.Logf("produced %d MiB in %s, max usage %.1f%%, %d refused requests, other errors %d",
		produced>>20, time.Since(start).Round(time.Second), maxRatio*100, refused, len(other))
	if produced < target {
		t.Fatalf("only %d MiB acknowledged before the deadline", produced>>20)
	}
	if !b.Running() {
		t.Fatal("the broker stopped")
	}
	if log := b.ServerLog(); strings.Contains(log, "No space left on device") || strings.Contains(log, "have failed") {
		t.Fatal("the broker ran out of space")
	}
	if dels := g.logs.lines("would delete records", "deleted records", "deleted unexpired records"); len(dels) > 0 {
		t.Errorf("R7.4: the guard planned DeleteRecords on the tiered topic: %v", dels)
	}
	t.Logf("write protection switched on %d times", len(g.logs.lines("write protection on")))

	// The log start offset never moved, and everything acknowledged reads
	// back from offset 0 (through the remote tier: the local copy of the
	// first segments is long gone).
	ro, err := kafkaadmin.NewRemoteOffsetsFetcher(client).FetchRemoteOffsets(t.Context(), []agent.TopicPartition{{Topic: topic, Partition: 0}})
	if err != nil {
		t.Fatal(err)
	}
	r := ro[agent.TopicPartition{Topic: topic, Partition: 0}]
	if r.Err != "" || r.LogStart != 0 || r.LocalLogStart == 0 {
		t.Fatalf("R7.4: remote offsets %+v: want log start 0, local log start > 0", r)
	}
	var last int64 = -1
	for o := range acked {
		last = max(last, o)
	}
	c, err := sarama.NewConsumer([]string{b.Addr}, b.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	seen := 0
	deadline := time.After(120 * time.Second)
	for read := int64(-1); read < last; {
		select {
		case m := <-pc.Messages():
			read = m.Offset
			if want, ok := acked[m.Offset]; ok {
				if got := binary.BigEndian.Uint64(m.Value); got != want {
					t.Fatalf("offset %d holds record %d, acknowledged %d", m.Offset, got, want)
				}
				seen++
			}
		case err := <-pc.Errors():
			t.Fatalf("read back from offset 0: %v", err)
		case <-deadline:
			t.Fatalf("read back: %d of %d acknowledged records before the deadline", seen, len(acked))
		}
	}
	if seen != len(acked) {
		t.Errorf("R7.4: read back %d of %d acknowledged records", seen, len(acked))
	}
	t.Logf("read back %d acknowledged records from offset 0 (local log start %d); test took %s", seen, r.LocalLogStart, time.Since(start).Round(time.Second))
}
