//go:build integration

package monitoring_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

func statfsRatio(path string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks)
}

// usageWatch records when the filesystem crosses thresholds.
type usageWatch struct {
	mu      sync.Mutex
	max     float64
	first70 time.Time // first >= 70%
	first90 time.Time // first >= 90%
	below70 time.Time // first < 70% after having been above
}

func (w *usageWatch) run(ctx context.Context, path string) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r := statfsRatio(path)
		now := time.Now()
		w.mu.Lock()
		w.max = max(w.max, r)
		if r >= 0.70 && w.first70.IsZero() {
			w.first70 = now
		}
		if r >= 0.90 && w.first90.IsZero() {
			w.first90 = now
		}
		if r < 0.70 && !w.first70.IsZero() && w.below70.IsZero() {
			w.below70 = now
		}
		w.mu.Unlock()
	}
}

func (w *usageWatch) get() usageWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return usageWatch{max: w.max, first70: w.first70, first90: w.first90, below70: w.below70}
}

// attempt is one produce request and its outcome.
type attempt struct {
	at      time.Time
	refused bool // TOPIC_AUTHORIZATION_FAILED
	err     error
}

// producer writes 1 MiB requests to the flood topic at a bounded rate,
// recording every outcome.
type producer struct {
	p        sarama.SyncProducer
	mu       sync.Mutex
	attempts []attempt
	bytes    int64
}

func (p *producer) send() attempt {
	value := make([]byte, 64<<10)
	msgs := make([]*sarama.ProducerMessage, 16)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: flood, Value: sarama.ByteEncoder(value)}
	}
	err := p.p.SendMessages(msgs)
	a := attempt{at: time.Now(), err: err, refused: isAuthFailed(err)}
	p.mu.Lock()
	p.attempts = append(p.attempts, a)
	if err == nil {
		p.bytes += int64(len(msgs) * len(value))
	}
	p.mu.Unlock()
	return a
}

// loop sends every interval until ctx ends or stop returns true.
func (p *producer) loop(ctx context.Context, interval time.Duration, stop func(attempt) bool) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if stop(p.send()) {
			return
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (p *producer) history() []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.attempts)
}

func isAuthFailed(err error) bool {
	if errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return true
	}
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) {
		for _, pe := range pes {
			if errors.Is(pe.Err, sarama.ErrTopicAuthorizationFailed) {
				return true
			}
		}
	}
	return false
}

// oldRecords writes n 4 KiB records stamped two hours ago to the audit
// topic (16 KiB segments: several closed, all past retention).
func oldRecords(t *testing.T, b *kafkatest.Broker, n int) {
	t.Helper()
	p := b.Producer(t)
	old := time.Now().Add(-2 * time.Hour)
	for i := range n {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: audit, Value: sarama.ByteEncoder(make([]byte, 4096)), Timestamp: old.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatalf("produce to %s: %v", audit, err)
		}
	}
}
