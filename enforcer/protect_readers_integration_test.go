//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R4.3: consumers keep reading while protection switches on and off. On
// the shared broker (allow.everyone.if.no.acl.found=true) the absence
// shape's first binding on a topic takes allow.everyone away from it, and
// the broker applies a CreateAcls or DeleteAcls request's bindings one at
// a time (its authorizer sees every one): the ALLOW READ must be the
// first binding in place and the last one gone. Anonymous consumers fetch
// every topic in a loop, without pause, through four switches on and
// off of 200 topics; not one fetch may be refused.
func TestR4_3ConsumersKeepReadingWhileProtectionSwitches(t *testing.T) {
	const n = 200
	topics := make([]string, n)
	for i := range topics {
		topics[i] = fmt.Sprintf("readers-%03d", i)
	}
	createTopicsOnBroker(t, shared, topics)
	t.Cleanup(func() { deleteTopicsOnBroker(t, shared, topics) })
	shared.Produce(t, topics[0], 0, 20, 1000)
	want := map[string]bool{}
	for _, tp := range topics {
		want[tp] = true
	}
	capacity := &fixedCapacity{v: 1 << 40}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: want, Capacity: capacity.get}
	used := usedBytes(src)
	full, calm := uint64(float64(used)/0.95), uint64(float64(used)/0.50)
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{
		AllowEveryoneIfNoACLFound: "true"}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_readers"})

	bindings := func() int {
		all, err := g.admin.TopicACLs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := 0
		for _, a := range all {
			if want[a.Topic] {
				c++
			}
		}
		return c
	}
	fetchers := startFetchers(t, topics, 4)
	for round := range 4 {
		fetchers.phase(fmt.Sprintf("switch-on %d", round))
		capacity.set(full)
		kafkatest.Eventually(t, 60*time.Second, func() error {
			if c := bindings(); c != n*5 {
				return fmt.Errorf("round %d: %d bindings of %d", round, c, n*5)
			}
			return nil
		})
		fetchers.phase(fmt.Sprintf("release %d", round))
		capacity.set(calm)
		kafkatest.Eventually(t, 60*time.Second, func() error {
			if c := bindings(); c != 0 {
				return fmt.Errorf("round %d: %d bindings left", round, c)
			}
			return nil
		})
	}
	fetches, refusals, first := fetchers.stop()
	t.Logf("%d fetches of %d topics, %d refused (by phase: %v)", fetches, n, refusals, fetchers.byPhase)
	if fetches < 100 {
		t.Fatalf("only %d fetches: the consumers did not keep up with the switches", fetches)
	}
	if refusals > 0 {
		t.Errorf("R4.3/consumers refused while protection switched: %d fetches of %d, first: %s", refusals, fetches, first)
	}
}

// fetchers fetch a set of topics as an anonymous consumer, in a loop,
// and count the fetches a topic was refused in.
type fetchers struct {
	mu        sync.Mutex
	fetches   int
	refusals  int
	first     string
	now       string         // the phase: switch-on or release, and the round
	byPhase   map[string]int // refusals by phase
	err       error
	done      chan struct{}
	stopLoops chan struct{}
	wg        sync.WaitGroup
}

func startFetchers(t *testing.T, topics []string, k int) *fetchers {
	f := &fetchers{stopLoops: make(chan struct{}), byPhase: map[string]int{}}
	for range k {
		b := sarama.NewBroker(shared.Addr)
		if err := b.Open(shared.ClientConfig()); err != nil {
			t.Fatal(err)
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer b.Close()
			f.loop(b, topics)
		}()
	}
	t.Cleanup(func() { f.stop() })
	return f
}

func (f *fetchers) loop(b *sarama.Broker, topics []string) {
	for {
		select {
		case <-f.stopLoops:
			return
		default:
		}
		req := &sarama.FetchRequest{Version: 11, MaxWaitTime: 0, MinBytes: 0, MaxBytes: 1 << 20, Isolation: sarama.ReadUncommitted}
		for _, tp := range topics {
			req.AddBlock(tp, 0, 0, 1024, -1)
		}
		rsp, err := b.Fetch(req)
		f.mu.Lock()
		if err != nil {
			f.err = err
			f.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f.fetches++
		refused := ""
		for _, tp := range topics {
			if bl := rsp.GetBlock(tp, 0); bl != nil && errors.Is(bl.Err, sarama.ErrTopicAuthorizationFailed) {
				refused = tp
				break
			}
		}
		if refused != "" {
			f.refusals++
			f.byPhase[f.now]++
			if f.first == "" {
				f.first = fmt.Sprintf("topic %s in %s at %s", refused, f.now, time.Now().Format(time.RFC3339Nano))
			}
		}
		f.mu.Unlock()
	}
}

// phase names what the test does from now on.
func (f *fetchers) phase(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = p
}

// stop ends the loops and returns the fetches, the refused ones and the
// first refusal.
func (f *fetchers) stop() (fetches, refusals int, first string) {
	f.mu.Lock()
	if f.done == nil {
		f.done = make(chan struct{})
		close(f.stopLoops)
	}
	f.mu.Unlock()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches, f.refusals, f.first
}
