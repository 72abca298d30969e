//go:build integration

package enforcer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// floodResult is what one flood run saw.
type floodResult struct {
	crossings []time.Time     // the filesystem reaching 90% (after being under 85%)
	reactions []time.Duration // crossing -> first refused produce
	refused   int             // produce requests refused with TOPIC_AUTHORIZATION_FAILED
	resumed   int             // successful produces after a refusal (protection lifted)
	maxRatio  float64
	produced  int64
	readsOK   int // reads under protection that succeeded
	otherErrs []string
}

func statfsRatio(path string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks)
}

// flood starts a broker on a 256 MiB tmpfs, the guard (cloud profile,
// enforcing) and a producer writing as fast as it can, until cycles
// protect/lift cycles are complete.
func flood(t testing.TB, cycles int, live bool) (floodResult, *kafkatest.Broker) {
	b, err := kafkatest.Start(kafkatest.Options{TmpfsSize: "256m", RetentionCheckMs: 1000, FileDeleteDelayMs: 1000,
		Props: []string{"log.segment.delete.delay.ms=1000"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	const topic = "flood"
	b.CreateTopic(t, topic, 2, map[string]string{"segment.bytes": "1048576"})

	var src source = &scantest.Source{LogDir: b.LogDir, ScanEvery: 100 * time.Millisecond, UsageEvery: 5 * time.Millisecond}
	if live {
		a, err := agent.New(agent.Config{LogDirs: []string{b.LogDir}, UsageInterval: 10 * time.Millisecond},
			slog.New(slog.NewTextHandler(io.Discard, nil)), freshConfigs{topic: topic, time: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		src = a
	}
	// The broker sets allow.everyone.if.no.acl.found=true and hides its
	// value: the guard is told, so readers keep reading (R8.3).
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{AllowEveryoneIfNoACLFound: "true"}}, src: src, ownTopic: enforcer.DefaultOwnershipTopic})

	var (
		mu  sync.Mutex
		res floodResult
	)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var wg sync.WaitGroup

	// Watcher: when does the filesystem cross 90%?
	wg.Add(1)
	go func() {
		defer wg.Done()
		above := false
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			r := statfsRatio(b.LogDir)
			mu.Lock()
			res.maxRatio = max(res.maxRatio, r)
			if r >= 0.90 && !above {
				res.crossings = append(res.crossings, time.Now())
				above = true
			}
			if r < 0.85 {
				above = false
			}
			mu.Unlock()
		}
	}()

	cfg := b.ClientConfig()
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	p, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	refusedCh := make(chan struct{}, 1)
	value := bytes.Repeat([]byte("x"), 64*1024)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		refusedSince := -1 // index of the crossing the current refusal streak answers
		for ctx.Err() == nil {
			msgs := make([]*sarama.ProducerMessage, 16)
			for i := range msgs {
				msgs[i] = &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}
			}
			err := p.SendMessages(msgs)
			now := time.Now()
			mu.Lock()
			switch {
			case err == nil:
				res.produced += int64(len(msgs) * len(value))
				if refusedSince >= 0 {
					res.resumed++
					refusedSince = -1
				}
			case errors.Is(err, sarama.ErrTopicAuthorizationFailed) || producerErrIs(err, sarama.ErrTopicAuthorizationFailed):
				res.refused++
				if refusedSince < 0 {
					refusedSince = len(res.crossings) - 1
					if refusedSince >= 0 && len(res.reactions) <= refusedSince {
						for len(res.reactions) < refusedSince {
							res.reactions = append(res.reactions, -1) // a crossing without its own refusal
						}
						res.reactions = append(res.reactions, max(now.Sub(res.crossings[refusedSince]), 0))
					}
					select {
					case refusedCh <- struct{}{}:
					default:
					}
				}
			default:
				res.otherErrs = append(res.otherErrs, err.Error())
			}
			done := res.resumed >= cycles
			mu.Unlock()
			if done {
				return
			}
			if err != nil {
				time.Sleep(20 * time.Millisecond) // a client backing off, as producers do
			}
		}
	}()

	// Readers keep reading while writes are refused.
	consumer, err := sarama.NewConsumer([]string{b.Addr}, b.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-refusedCh:
			if err := readUnderProtection(consumer, topic); err != nil {
				mu.Lock()
				res.otherErrs = append(res.otherErrs, "read under protection: "+err.Error())
				mu.Unlock()
			} else {
				mu.Lock()
				res.readsOK++
				mu.Unlock()
			}
		}
	}
	wg.Wait()
	g.stop()
	mu.Lock()
	defer mu.Unlock()
	out := res
	out.reactions = slices.DeleteFunc(slices.Clone(res.reactions), func(d time.Duration) bool { return d < 0 })
	return out, b
}

func producerErrIs(err error, target error) bool {
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) {
		for _, pe := range pes {
			if errors.Is(pe.Err, target) {
				return true
			}
		}
	}
	return false
}

// readUnderProtection reads the last records of each partition.
func readUnderProtection(c sarama.Consumer, topic string) error {
	for part := int32(0); part < 2; part++ {
		pc, err := c.ConsumePartition(topic, part, sarama.OffsetNewest)
		if err != nil {
			return err
		}
		hw := pc.HighWaterMarkOffset()
		pc.Close()
		if hw < 5 {
			continue
		}
		pc, err = c.ConsumePartition(topic, part, hw-5)
		if err != nil {
			return err
		}
		timer := time.NewTimer(10 * time.Second)
		for range 5 {
			select {
			case <-pc.Messages():
			case err := <-pc.Errors():
				pc.Close()
				timer.Stop()
				return err
			case <-timer.C:
				pc.Close()
				return fmt.Errorf("partition %d: no records in time", part)
			}
		}
		timer.Stop()
		pc.Close()
	}
	return nil
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// R3.1, R3.7, R4.3: a producer floods a broker whose only log dir is a 256
// MiB tmpfs. With the guard enforcing, the disk never fills and the broker
// stays up (the baseline without the guard, in internal/kafkatest, ends
// with "Shutdown broker because all log dirs ... have failed"): protection
// engages at 90%, the producer gets TOPIC_AUTHORIZATION_FAILED, readers
// keep reading, the purge brings usage under 85% and writes succeed again.
func TestR4_3FloodBrokerStaysUp(t *testing.T) {
	res, b := flood(t, 2, false)
	checkFlood(t, res, b)
}

// The same flood with the agent's live watcher as the snapshot source.
func TestR4_3FloodBrokerStaysUpWithLiveAgent(t *testing.T) {
	res, b := flood(t, 2, true)
	checkFlood(t, res, b)
}

func checkFlood(t *testing.T, res floodResult, b *kafkatest.Broker) {
	t.Logf("produced %d MiB, max usage %.1f%%, %d crossings of 90%%, %d refused requests, %d resumptions, reactions %v, reads under protection %d",
		res.produced>>20, res.maxRatio*100, len(res.crossings), res.refused, res.resumed, res.reactions, res.readsOK)
	if !b.Running() {
		t.Fatal("the broker stopped")
	}
	if log := b.ServerLog(); strings.Contains(log, "No space left on device") || strings.Contains(log, "have failed") {
		t.Fatal("the broker ran out of space")
	}
	if res.maxRatio >= 0.999 {
		t.Errorf("usage reached %.2f%%", res.maxRatio*100)
	}
	if res.refused == 0 {
		t.Fatal("no produce was refused with TOPIC_AUTHORIZATION_FAILED")
	}
	if res.resumed < 2 {
		t.Fatalf("writes resumed %d times after protection, want 2 cycles", res.resumed)
	}
	if res.readsOK == 0 {
		t.Fatal("no read succeeded while writes were refused")
	}
	if len(res.otherErrs) > 0 {
		t.Errorf("other errors: %v", res.otherErrs)
	}
}

// BenchmarkR4_3ProtectionReactionTime measures, over b.N protect cycles of
// the flood, the time from the filesystem crossing 90% to the first
// refused produce (goal: p99 <= 1 s).
//
//	go test -tags integration -run '^$' -bench R4_3ProtectionReactionTime -benchtime 10x ./enforcer/
func BenchmarkR4_3ProtectionReactionTime(b *testing.B) {
	res, _ := flood(b, b.N, false)
	b.ReportMetric(float64(percentile(res.reactions, 0.50).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(percentile(res.reactions, 0.99).Microseconds())/1000, "p99_ms")
	b.ReportMetric(res.maxRatio*100, "max_usage_%")
	b.Logf("reactions %v; max usage %.2f%%; resumed %d", res.reactions, res.maxRatio*100, res.resumed)
}

// freshConfigs stand for configs read from the cluster: the topic's are
// Kafka's defaults, looked up at every call (spec R7.2's gate lets them
// drive deletion).
type freshConfigs struct {
	topic string
	time  time.Time
}

func (f freshConfigs) Current() agent.ConfigSet {
	d := agent.DefaultTopicConfig()
	return agent.ConfigSet{Topics: map[string]agent.TopicConfig{f.topic: d}, Defaults: d, Time: f.time,
		Fetched: map[string]time.Time{f.topic: time.Now()}}
}
