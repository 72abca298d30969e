//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// deleteAs is the guard's admin API whose DeleteAcls goes out as another
// principal: its right to delete ACLs (ALTER on the cluster) can be
// revoked and granted again on the real broker.
type deleteAs struct {
	*kafkaadmin.Enforce
	del *kafkaadmin.Enforce
}

func (d deleteAs) DeleteACLs(ctx context.Context, acls []enforcer.ACL) error {
	return d.del.DeleteACLs(ctx, acls)
}

// clusterAlter is the binding that lets principal create and delete ACLs.
func clusterAlter(principal string) (sarama.Resource, sarama.Acl) {
	return sarama.Resource{ResourceType: sarama.AclResourceCluster, ResourceName: "kafka-cluster", ResourcePatternType: sarama.AclPatternLiteral},
		sarama.Acl{Principal: principal, Host: "*", Operation: sarama.AclOperationAlter, PermissionType: sarama.AclPermissionAllow}
}

// R8.5 on a real broker (issue 20, point 8): the guard's right to delete
// ACLs is revoked while it lifts its protection, and granted again. The
// claims stay in the record as releasing, lift_failed stays up, and once
// the right is back the next passes delete every guard binding; the
// operator's own binding on the topic is never touched.
func TestR8_5ReleaseSurvivesARevokedRight(t *testing.T) {
	const (
		topic = "revoked-release"
		own   = "__kdg_test_revoked"
	)
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	principal := "User:" + kafkatest.LimitedUser
	ca := shared.Admin(t)
	res, grant := clusterAlter(principal)
	remove := func(a sarama.Acl) error {
		f := sarama.AclFilter{ResourceType: res.ResourceType, ResourceName: &res.ResourceName, ResourcePatternTypeFilter: res.ResourcePatternType,
			Principal: &a.Principal, Operation: a.Operation, PermissionType: a.PermissionType}
		_, err := ca.DeleteACL(f, false)
		return err
	}
	// The first ACL on the cluster resource ends allow.everyone for it:
	// the test broker forwards requests to its controller as ANONYMOUS,
	// which then needs CLUSTER_ACTION of its own. Both go when the test
	// ends (the other tests run on a cluster resource without ACLs).
	broker := sarama.Acl{Principal: anonymousPrincipal, Host: "*", Operation: sarama.AclOperationClusterAction, PermissionType: sarama.AclPermissionAllow}
	if err := ca.CreateACL(res, broker); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(broker) })
	if err := ca.CreateACL(res, grant); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(grant) })
	revoke := func() {
		t.Helper()
		if err := remove(grant); err != nil {
			t.Fatal(err)
		}
	}
	del := newAdminOn(t, []string{shared.SASLAddr}, shared.UserConfig(kafkatest.LimitedUser, kafkatest.LimitedPassword), own)
	// An operator froze one producer before the episode: theirs.
	theirs := denyWrite(topic, "User:mallory")
	g0 := newAdminOn(t, []string{shared.SASLAddr}, shared.GuardConfig(), own)
	operatorACLs(t, g0, theirs)

	capacity.set(full)
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: 30 * time.Second}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own,
		wrap: func(a *kafkaadmin.Enforce) enforcer.Admin { return deleteAs{Enforce: a, del: del} }})
	guardDeny := denyWrite(topic, enforcer.AnyPrincipal)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, g.admin, topic, theirs, guardDeny) })

	revoke()
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "lift_failed"}); v != 1 {
			return fmt.Errorf("R8.5/error{lift_failed} %v while the right is revoked", v)
		}
		return nil
	})
	recs, err := g.admin.LoadRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Agents[1].Releasing()) == 0 {
		t.Fatalf("R8.5/the claim left the record while its binding is in place: %+v", recs.Agents[1])
	}
	if err := exactly(t, g.admin, topic, theirs, guardDeny); err != nil {
		t.Fatalf("the revoked right deleted something: %v", err)
	}

	if err := ca.CreateACL(res, grant); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if err := exactly(t, g.admin, topic, theirs); err != nil {
			return fmt.Errorf("R8.5/after the right came back: %w", err)
		}
		recs, err := g.admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if recs.Agents[1].Claims() {
			return fmt.Errorf("R8.5/claims left: %+v", recs.Agents[1])
		}
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "lift_failed"}); v != 0 {
			return fmt.Errorf("error{lift_failed} %v", v)
		}
		return nil
	})
}

// R8.7 on a real broker (issue 20, point 8): the ownership topic is
// deleted while the guard protects with the absence shape (ALLOW bindings
// for User:* on a broker with allow.everyone.if.no.acl.found=true, the
// case where the guard's own bindings would otherwise turn into an
// operator's and refuse every producer for good). The guard reports the
// ledger lost, creates the topic again, writes its record from memory,
// and on calm lifts every binding it set; the operator's binding on
// another topic is untouched.
func TestR8_7OwnershipTopicDeletedDuringProtection(t *testing.T) {
	const (
		topic = "ledger-deleted"
		other = "ledger-deleted-operators"
		own   = "__kdg_test_ledger_deleted"
	)
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	shared.CreateTopic(t, other, 1, nil)
	g0 := newAdminOn(t, []string{shared.SASLAddr}, shared.GuardConfig(), own)
	theirs := denyWrite(other, enforcer.AnyPrincipal)
	operatorACLs(t, g0, theirs)

	capacity.set(full)
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{
		AllowEveryoneIfNoACLFound: "true", LeaseDuration: 30 * time.Second}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 5 {
			return fmt.Errorf("not protected yet: %v", acls)
		}
		return nil
	})
	ca := shared.Admin(t)
	if err := ca.DeleteTopic(own); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if len(g.logs.lines("protection ledger lost: nothing is claimed or released until it is back; the guard creates a missing ownership topic again")) == 0 {
			return errors.New("R8.7/the lost ledger is not reported")
		}
		return nil
	})
	// Back (created again by the guard), with the agent's record.
	kafkatest.Eventually(t, 60*time.Second, func() error {
		recs, err := g.admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if len(recs.Agents[1].ACLTopics()) == 0 {
			return fmt.Errorf("R8.7/the agent's record is not written again: %+v", recs.Agents)
		}
		return nil
	})
	if acls := topicACLs(t, g.admin, topic); len(acls) != 5 {
		t.Fatalf("R8.7/protection changed while the ledger was lost: %v", acls)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
			return fmt.Errorf("R8.7/guard bindings left after the ledger was lost: %v", acls)
		}
		return exactly(t, g.admin, other, theirs)
	})
	if err := produceAs(shared.ClientConfig(), []string{shared.Addr}, topic); err != nil {
		t.Errorf("R8.7/producers refused after calm: %v", err)
	}
	if v := metric(g.reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 0 {
		t.Errorf("ledger_lost %v once back", v)
	}
}

// Spec R8.7, on a real broker: the ownership topic deleted and created
// again with 3 partitions (as infrastructure-as-code would) between a
// read and a write: the write is refused as the ledger lost, and nothing
// reaches partition 0, which no agent reads (the producer's cached
// metadata still says one partition).
func TestR8_7NoWriteToAReshapedOwnershipTopic(t *testing.T) {
	const own = "__kdg_test_ledger_reshaped"
	g := newAdminOn(t, []string{shared.SASLAddr}, shared.GuardConfig(), own)
	ctx := context.Background()
	// The topic's first write may find its leader not ready yet (a
	// loaded machine): an agent's next pass writes again.
	kafkatest.Eventually(t, 30*time.Second, func() error { return g.StoreRecord(ctx, enforcer.Record{BrokerID: 1}) })
	if _, err := g.LoadRecords(ctx); err != nil {
		t.Fatal(err)
	}
	ca := shared.Admin(t)
	if err := ca.DeleteTopic(own); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		md, err := ca.DescribeTopics([]string{own})
		if err != nil {
			return err
		}
		if len(md) == 1 && errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
			return nil
		}
		return fmt.Errorf("topic %s not deleted yet", own)
	})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		return ca.CreateTopic(own, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"cleanup.policy": ptr("compact")}}, false)
	})
	err := g.StoreRecord(ctx, enforcer.Record{BrokerID: 1, Updated: time.Now()})
	if !errors.Is(err, enforcer.ErrLedgerLost) {
		t.Fatalf("R8.7/a write to a 3-partition ownership topic: %v, want the ledger lost", err)
	}
	if _, err := g.LoadRecords(ctx); !errors.Is(err, enforcer.ErrLedgerLost) {
		t.Fatalf("R8.7/read of a 3-partition ownership topic: %v, want the ledger lost", err)
	}
	c, err := sarama.NewClient([]string{shared.SASLAddr}, shared.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The partitions just created may have no leader yet (a loaded
	// machine): ask until one answers.
	var hw int64
	kafkatest.Eventually(t, 30*time.Second, func() error {
		hw, err = c.GetOffset(own, 0, sarama.OffsetNewest)
		if err != nil {
			_ = c.RefreshMetadata(own)
		}
		return err
	})
	if hw != 0 {
		t.Fatalf("R8.7/partition 0 of the reshaped topic ends at %d, want 0: a record was written where no agent reads", hw)
	}
}
