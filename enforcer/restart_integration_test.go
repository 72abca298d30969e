//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R4.3, R3.7: an agent killed with SIGKILL while protection is on lifts
// exactly its own ACLs when it comes back with usage under the band, and
// leaves an operator's ACL alone. Two agents (nodes 1 and 2 of the
// cluster, a topic with a replica on each) share the protection: one
// lifting never removes what the other still claims.
func TestR4_3RestartLiftsOwnACLsAndAgentsNeverUndoEachOther(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "restart-shared"
		own   = "__kdg_test_restart"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{1, 2}}, nil)
	admin := clusterAdmin(t, c, own)
	alice := allowACL(topic, "User:alice", enforcer.OpRead)
	operatorACLs(t, admin, alice, allowACL(topic, anonymousPrincipal, enforcer.OpWrite))
	superProduce(t, c, topic, 20)
	dir := t.TempDir()
	capFile := map[int]string{1: filepath.Join(dir, "1"), 2: filepath.Join(dir, "2")}
	full, calm := map[int]uint64{}, map[int]uint64{}
	for id := range capFile {
		full[id], calm[id] = capacities(t, c.Node(int32(id)).LogDir, topic)
	}
	agent := func(id int) *child {
		return startChild(t, c.Node(int32(id)), childSpec{brokerID: id, capacityFile: capFile[id], topics: topic, ownTopic: own, addrs: c.SASLAddrs()})
	}
	protected := func(want bool) func() error {
		return func() error {
			acls := topicACLs(t, admin, topic)
			if !hasACL(acls, "User:alice", enforcer.OpRead, enforcer.PermAllow) {
				return errors.New("the operator's ACL is gone")
			}
			if got := hasACL(acls, enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny); got != want {
				return fmt.Errorf("DENY WRITE present %v, want %v: %v", got, want, acls)
			}
			if want && len(acls) != 3 {
				return fmt.Errorf("access widened on a topic with operator ACLs: %v", acls)
			}
			return nil
		}
	}
	claims := func(id int32, want bool) func() error {
		return func() error {
			recs, err := admin.LoadRecords(context.Background())
			if err != nil {
				return err
			}
			if got := slices.Contains(recs.Agents[id].ACLTopics(), topic); got != want {
				return fmt.Errorf("agent %d claims %s: %v, want %v", id, topic, got, want)
			}
			return nil
		}
	}

	// Agent 1 protects, then dies by SIGKILL.
	writeCapacity(t, capFile[1], full[1])
	a := agent(1)
	kafkatest.Eventually(t, 30*time.Second, protected(true))
	anonCfg, anonAddrs := anonymous(c)
	if err := produceAs(anonCfg, anonAddrs, topic); !refused(err) {
		t.Fatalf("produce under protection: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	a.kill(t)
	if err := protected(true)(); err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}

	// It comes back with usage at 50%: lifts its own, keeps alice's.
	writeCapacity(t, capFile[1], calm[1])
	a = agent(1)
	kafkatest.Eventually(t, 30*time.Second, protected(false))
	kafkatest.Eventually(t, 10*time.Second, claims(1, false))
	kafkatest.Eventually(t, 10*time.Second, func() error { return produceAs(anonCfg, anonAddrs, topic) })
	a.kill(t)

	// Both agents protect the topic.
	writeCapacity(t, capFile[1], full[1])
	writeCapacity(t, capFile[2], full[2])
	a, b := agent(1), agent(2)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if err := claims(1, true)(); err != nil {
			return err
		}
		if err := claims(2, true)(); err != nil {
			return err
		}
		return protected(true)()
	})

	// Agent 1's disk calms down: it drops its claim, agent 2's stays.
	writeCapacity(t, capFile[1], calm[1])
	kafkatest.Eventually(t, 30*time.Second, claims(1, false))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if err := protected(true)(); err != nil {
			t.Fatalf("agent 1 lifting removed agent 2's protection: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Agent 2 calms down too: everything the guard set is gone.
	writeCapacity(t, capFile[2], calm[2])
	kafkatest.Eventually(t, 30*time.Second, protected(false))
	a.kill(t)
	b.kill(t)
	if t.Failed() {
		t.Logf("agent 1 log:\n%s", a.logs.buf.String())
		t.Logf("agent 2 log:\n%s", b.logs.buf.String())
	}
}
