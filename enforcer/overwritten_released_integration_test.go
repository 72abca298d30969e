//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// replyLostStore is the guard's admin API whose record writes, while lose
// is set, take effect and then fail (a write that times out while it goes
// on).
type replyLostStore struct {
	*kafkaadmin.Enforce
	lose atomic.Bool
}

func (s *replyLostStore) StoreRecord(ctx context.Context, r enforcer.Record) error {
	if err := s.Enforce.StoreRecord(ctx, r); err != nil || !s.lose.Load() {
		return err
	}
	return errors.New("injected: the write goes on, its reply lost")
}

// R8.6, R8.8 on a real broker (TestR8_6R8_8OverwrittenInstanceKeepsNoBindingAReadFoundGone):
// pod-a protects the topic with DENY WRITE User:*; the disk calm, it
// writes its claim releasing and deletes the binding; its next record,
// without the claim, takes effect with its reply lost. pod-b (reading the
// ledger for broker 2's claim) takes broker 1 over from that record. The
// operator freezes the topic with the identical binding. pod-a, reading
// pod-b's record over its own, keeps nothing its read found gone since
// its last confirmed record: the operator's binding stays (seed 42119:
// agent-1 deleted the operator's {orders literal User:* * WRITE DENY}).
func TestR8_6R8_8OverwrittenInstanceKeepsNoBindingAReadFoundGoneOnARealBroker(t *testing.T) {
	const (
		topic = "overwritten-gone"
		own   = "__kdg_test_overwritten_gone"
		lease = 3 * time.Second
	)
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	cfg := enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	var store *replyLostStore
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a",
		wrap: func(a *kafkaadmin.Enforce) enforcer.Admin { store = &replyLostStore{Enforce: a}; return store }})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	dropTopicACLs(t, a, topic)
	ctx := t.Context()
	record := func() enforcer.Record {
		t.Helper()
		recs, err := a.admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs.Agents[shared.NodeID]
	}
	// Broker 2's agent claims another topic for a minute: every agent
	// reads the ledger each pass.
	peer := enforcer.Record{BrokerID: 2, Instance: "agent-2", Strategy: enforcer.StrategyACL, LogDirs: []string{"/var/lib/kafka/data"},
		Owned:   []enforcer.Owned{{Kind: enforcer.OwnedACL, Shape: &enforcer.Shape{Deny: []string{enforcer.AnyPrincipal}}, Topics: []string{"elsewhere"}}},
		Renewed: time.Now(), Since: time.Now(), Updated: time.Now(), LeaseMs: time.Minute.Milliseconds()}
	kafkatest.Eventually(t, 30*time.Second, func() error { return a.admin.StoreRecord(ctx, peer) })
	// An operator's binding on the topic: the guard's shape is DENY WRITE
	// User:*.
	alice := allowACL(topic, "User:alice", enforcer.OpRead)
	operatorACLs(t, a.admin, alice)
	deny := denyWrite(topic, enforcer.AnyPrincipal)
	capacity.set(full)
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, a)
		pass(t, b) // stands by
		if r := record(); r.Instance != "pod-a" || !slices.Contains(r.ACLTopics(), topic) || exactly(t, a.admin, topic, alice, deny) != nil {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("pod-a's protection not claimed in its record yet: %+v, bindings %v", r, topicACLs(t, a.admin, topic))
		}
		return nil
	})
	// Calm: pod-a writes its claim releasing and deletes the binding.
	capacity.set(calm)
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, a)
		if r := record(); r.Instance != "pod-a" || !r.Claims() || exactly(t, a.admin, topic, alice) != nil {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("pod-a has not released its binding, its claim releasing: %+v, bindings %v", r, topicACLs(t, a.admin, topic))
		}
		return nil
	})
	// Its next record, without the claim, takes effect; the reply is lost.
	store.lose.Store(true)
	pass(t, a)
	store.lose.Store(false)
	if r := record(); r.Instance != "pod-a" || r.Claims() {
		t.Fatalf("the test needs pod-a's record without the claim (its reply lost): %+v", r)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, b)
		if r := record(); r.Instance != "pod-b" {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("pod-b has not taken broker 1 over: %+v", r)
		}
		return nil
	})
	// The operator freezes the topic with the identical binding: no
	// record claims it.
	operatorACLs(t, a.admin, deny)
	kafkatest.Eventually(t, 10*time.Second, func() error { return exactly(t, a.admin, topic, alice, deny) })
	for range 4 {
		time.Sleep(cfg.Interval)
		pass(t, a)
		pass(t, b)
	}
	if err := exactly(t, a.admin, topic, alice, deny); err != nil {
		t.Errorf("R8.6/the operator's binding, made after pod-a released its identical claim, after pod-a's passes: %v", err)
	}
}
