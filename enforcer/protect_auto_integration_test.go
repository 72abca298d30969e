//go:build integration

package enforcer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.3 (docs/configuration.md, allowEveryoneIfNoAclFound): the shared
// broker sets allow.everyone.if.no.acl.found=true and hides it; the guard
// left on auto takes it as unknown and protects a topic without ACLs with
// DENY WRITE User:* alone. Kafka's StandardAuthorizer lets everyone in
// only on a topic with no binding at all (StandardAuthorizerData: any
// binding on the resource makes an unmatched request DENY), so anonymous
// readers are refused until the lift; a super user still reads. This is
// what refused the tiered flood test's anonymous read-back when the guard
// stopped inside a protection episode (readBackFromZero).
func TestR8_3AutoShapeRefusesAnonymousReadersUntilTheLift(t *testing.T) {
	const topic = "auto-shape-readers"
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	anon := func() error { return readAs(shared.ClientConfig(), []string{shared.Addr}, topic) }
	if err := anon(); err != nil {
		t.Fatalf("anonymous cannot read the topic without ACLs: %v", err)
	}
	capacity.set(full)
	g := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond}, src: src, ownTopic: "__kdg_test_auto_shape"})
	dropTopicACLs(t, g, topic)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return exactly(t, g.admin, topic, denyWrite(topic, enforcer.AnyPrincipal))
	})
	if err := anon(); !refused(err) {
		t.Errorf("R8.3/anonymous read under the DENY WRITE User:* shape: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := readAs(shared.GuardConfig(), []string{shared.SASLAddr}, topic); err != nil {
		t.Errorf("the super user cannot read under protection: %v", err)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
			return fmt.Errorf("still %v", acls)
		}
		return nil
	})
	// Each node applies ACL changes as it replays the metadata log: the
	// read is polled.
	kafkatest.Eventually(t, 10*time.Second, anon)
}
