//go:build integration

package enforcer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.3: a protected topic's shape follows the operator's ACLs on a broker
// with allow.everyone.if.no.acl.found=true (the shared broker). The
// operator's first binding on a topic of the absence shape makes it DENY
// WRITE User:*: the guard's ALLOWs for User:* go once the DENY is in place
// (until then everyone keeps reading: Kafka has no conditional ALLOW).
// The operator deleting it makes it the absence shape again: the ALLOWs
// are created before the DENY goes, so the topic is never without ACLs
// (writable by everyone) while protection is wanted.
func TestR8_3ShapeFollowsTheOperatorsACLs(t *testing.T) {
	const topic = "shape-follows"
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	capacity.set(full)
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{
		AllowEveryoneIfNoACLFound: "true"}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_shape_follows"})
	absence := func() error {
		acls := topicACLs(t, g.admin, topic)
		for _, op := range []string{enforcer.OpRead, enforcer.OpCreate, enforcer.OpDelete, enforcer.OpAlter, enforcer.OpAlterConfigs} {
			if !hasACL(acls, enforcer.AnyPrincipal, op, enforcer.PermAllow) {
				return fmt.Errorf("no ALLOW %s User:*: %v", op, acls)
			}
		}
		if len(acls) != 5 {
			return fmt.Errorf("bindings %v", acls)
		}
		return nil
	}
	kafkatest.Eventually(t, 30*time.Second, absence)

	alice := allowACL(topic, "User:alice", enforcer.OpRead)
	if err := g.admin.CreateACLs(context.Background(), []enforcer.ACL{alice}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.admin.DeleteACLs(context.Background(), []enforcer.ACL{alice}) })
	added := time.Now()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return exactly(t, g.admin, topic, alice, denyWrite(topic, enforcer.AnyPrincipal))
	})
	t.Logf("DENY shape in place, ALLOWs gone, %s after the operator's binding", time.Since(added).Round(time.Millisecond))
	if err := readAs(shared.ClientConfig(), []string{shared.Addr}, topic); !refused(err) {
		t.Errorf("R8.3/anonymous reads a topic the operator's ACL does not let it read: %v", err)
	}
	if err := produceAs(shared.ClientConfig(), []string{shared.Addr}, topic); !refused(err) {
		t.Errorf("R8.3/anonymous produces under protection: %v", err)
	}

	if err := g.admin.DeleteACLs(context.Background(), []enforcer.ACL{alice}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	for absence() != nil {
		if acls := topicACLs(t, g.admin, topic); len(acls) == 0 {
			t.Fatal("R8.3/the topic was left without ACLs (writable by everyone) while its shape changed")
		}
		if time.Since(deleted) > 30*time.Second {
			t.Fatalf("absence shape not back: %v", absence())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("absence shape back %s after the operator's binding went", time.Since(deleted).Round(time.Millisecond))
	if err := readAs(shared.ClientConfig(), []string{shared.Addr}, topic); err != nil {
		t.Errorf("R8.3/anonymous cannot read under the absence shape: %v", err)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
			return fmt.Errorf("still %v", acls)
		}
		return nil
	})
}
