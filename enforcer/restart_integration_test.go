//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R4.3, R3.7: an agent killed with SIGKILL while protection is on lifts
// exactly its own ACLs when it comes back with usage under the band, and
// leaves an operator's ACL alone. Two agents (two simulated brokers with
// different ids on the one broker) share the protection: one lifting never
// removes what the other still claims.
func TestR4_3RestartLiftsOwnACLsAndAgentsNeverUndoEachOther(t *testing.T) {
	const (
		free     = "restart-free"     // no ACL before: the guard adds ALLOW READ/DESCRIBE for User:*
		operated = "restart-operated" // an operator's ACL: the guard only denies writes
		own      = "__kdg_test_restart"
	)
	shared.CreateTopic(t, free, 1, nil)
	shared.CreateTopic(t, operated, 1, nil)
	shared.Produce(t, free, 0, 20, 1000)
	shared.Produce(t, operated, 0, 20, 1000)
	admin := newAdmin(t, shared, own)
	ctx := context.Background()
	alice := enforcer.ACL{Topic: operated, Pattern: enforcer.PatternLiteral, Principal: "User:alice", Host: "*", Operation: enforcer.OpRead, Permission: enforcer.PermAllow}
	if err := admin.CreateACLs(ctx, []enforcer.ACL{alice}); err != nil {
		t.Fatal(err)
	}

	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{free: true, operated: true}, Capacity: func() uint64 { return 1 << 40 }}
	used := usedBytes(src)
	full, calm := uint64(float64(used)/0.95), uint64(float64(used)/0.50)
	dir := t.TempDir()
	capA, capB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	topics := free + "," + operated

	protected := func(wantDeny bool) func() error {
		return func() error {
			fa, oa := topicACLs(t, admin, free), topicACLs(t, admin, operated)
			if !hasACL(oa, "User:alice", enforcer.OpRead, enforcer.PermAllow) {
				return errors.New("the operator's ACL is gone")
			}
			if wantDeny {
				switch {
				case !hasACL(fa, enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny) || !hasACL(oa, enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny):
					return fmt.Errorf("no DENY WRITE yet: %v %v", fa, oa)
				case !hasACL(fa, enforcer.AnyPrincipal, enforcer.OpRead, enforcer.PermAllow) || !hasACL(fa, enforcer.AnyPrincipal, enforcer.OpDescribe, enforcer.PermAllow):
					return fmt.Errorf("readers not kept on %s: %v", free, fa)
				case len(oa) != 2:
					return fmt.Errorf("access widened on %s, which had an operator ACL: %v", operated, oa)
				}
				return nil
			}
			if len(fa) != 0 || len(oa) != 1 {
				return fmt.Errorf("guard ACLs still there: %v %v", fa, oa)
			}
			return nil
		}
	}

	// Agent A protects, then dies by SIGKILL.
	writeCapacity(t, capA, full)
	a := startChild(t, shared, childSpec{brokerID: 101, capacityFile: capA, topics: topics, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, protected(true))

	// While protected: producers refused, consumers read.
	p := shared.Producer(t)
	_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: free, Value: sarama.StringEncoder("x")})
	if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("produce under protection: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := shared.Consume(t, kafkatest.Fetch{Topic: free, Offset: sarama.OffsetOldest, Records: 20, Timeout: 20 * time.Second}); len(got) != 20 {
		t.Fatalf("read %d records under protection", len(got))
	}

	a.kill(t)
	if err := protected(true)(); err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}

	// A comes back with usage at 50%: lifts its own, keeps alice's.
	writeCapacity(t, capA, calm)
	a = startChild(t, shared, childSpec{brokerID: 101, capacityFile: capA, topics: topics, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, protected(false))
	kafkatest.Eventually(t, 10*time.Second, func() error {
		o, err := admin.LoadOwnership(ctx)
		if err != nil {
			return err
		}
		if len(o[101].ACLs) != 0 {
			return fmt.Errorf("agent 101 still claims %v", o[101].ACLs)
		}
		return nil
	})
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: free, Value: sarama.StringEncoder("x")}); err != nil {
		t.Fatalf("produce after the lift: %v", err)
	}
	a.kill(t)

	// Two agents protect the same topics.
	writeCapacity(t, capA, full)
	writeCapacity(t, capB, full)
	a = startChild(t, shared, childSpec{brokerID: 101, capacityFile: capA, topics: topics, ownTopic: own})
	b := startChild(t, shared, childSpec{brokerID: 102, capacityFile: capB, topics: topics, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		o, err := admin.LoadOwnership(ctx)
		if err != nil {
			return err
		}
		if len(o[101].ACLs) != 4 || len(o[102].ACLs) != 4 {
			return fmt.Errorf("claims: 101 %v, 102 %v", o[101].ACLs, o[102].ACLs)
		}
		return protected(true)()
	})

	// A's disk calms down: A drops its claims, B's protection stays.
	writeCapacity(t, capA, calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		o, err := admin.LoadOwnership(ctx)
		if err != nil {
			return err
		}
		if len(o[101].ACLs) != 0 {
			return fmt.Errorf("agent 101 still claims %v", o[101].ACLs)
		}
		return nil
	})
	// Several more passes of both agents: nothing of B's goes away.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if err := protected(true)(); err != nil {
			t.Fatalf("agent 101 lifting removed agent 102's protection: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// B calms down too: everything the guard set is gone, alice's stays.
	writeCapacity(t, capB, calm)
	kafkatest.Eventually(t, 30*time.Second, protected(false))
	a.kill(t)
	b.kill(t)
	if t.Failed() {
		t.Logf("agent 101 log:\n%s", a.logs.buf.String())
		t.Logf("agent 102 log:\n%s", b.logs.buf.String())
	}
}
