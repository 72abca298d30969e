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
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Helpers of the protection tests on the shared 3-node cluster.

// clusterAdmin is the guard's admin API on every node, as a super user.
func clusterAdmin(t testing.TB, c *kafkatest.Cluster, own string) *kafkaadmin.Enforce {
	t.Helper()
	return newAdminOn(t, c.SASLAddrs(), c.Nodes[0].GuardConfig(), own)
}

// nodeAgent is an in-process agent of cluster node id, guarding topics,
// its usage moved by capacity. Not running: g.start, or Reconcile.
func nodeAgent(t testing.TB, c *kafkatest.Cluster, id int32, cfg enforcer.Config, own string, capacity *fixedCapacity, topics ...string) *guard {
	t.Helper()
	set := map[string]bool{}
	for _, tp := range topics {
		set[tp] = true
	}
	src := &scantest.Source{LogDir: c.Node(id).LogDir, Topics: set, Capacity: capacity.get, ScanEvery: 100 * time.Millisecond}
	cfg.Enabled = true
	cfg.BrokerID = ptr(id)
	if cfg.Interval == 0 {
		cfg.Interval = 200 * time.Millisecond
	}
	return newGuard(t, c.Node(id), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
}

// capacities for a guarded set of topics: full puts usage at 95%, calm at
// 50%.
func capacities(t testing.TB, logDir string, topics ...string) (full, calm uint64) {
	t.Helper()
	set := map[string]bool{}
	for _, tp := range topics {
		set[tp] = true
	}
	src := &scantest.Source{LogDir: logDir, Topics: set, Capacity: func() uint64 { return 1 << 40 }}
	used := usedBytes(src)
	if used == 0 {
		t.Fatalf("no bytes of %v in %s", topics, logDir)
	}
	return uint64(float64(used) / 0.95), uint64(float64(used) / 0.50)
}

// superProduce writes n records to partition 0 as the guard (a super
// user: not subject to ACLs).
func superProduce(t testing.TB, c *kafkatest.Cluster, topic string, n int) {
	t.Helper()
	cfg := c.Nodes[0].GuardConfig()
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("record %d of %s", i, topic))}); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// anonymous is an anonymous client's config on the PLAINTEXT listeners;
// limited the non-super user's on the SASL ones.
func anonymous(c *kafkatest.Cluster) (*sarama.Config, []string) {
	return c.Nodes[0].ClientConfig(), c.Addrs()
}

func limited(c *kafkatest.Cluster) (*sarama.Config, []string) {
	return c.Nodes[0].UserConfig(kafkatest.LimitedUser, kafkatest.LimitedPassword), c.SASLAddrs()
}

// produceAs sends one record; the error is the client's.
func produceAs(cfg *sarama.Config, addrs []string, topic string) error {
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 0
	cfg.Metadata.Retry.Max = 1
	p, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	return err
}

// readAs fetches the first record of partition 0; the error is the
// client's.
func readAs(cfg *sarama.Config, addrs []string, topic string) error {
	cfg.Metadata.Retry.Max = 1
	cons, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		return err
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	select {
	case <-pc.Messages():
		return nil
	case err := <-pc.Errors():
		return err
	case <-time.After(15 * time.Second):
		return errors.New("no record within 15s")
	}
}

func refused(err error) bool { return errors.Is(err, sarama.ErrTopicAuthorizationFailed) }

// operatorACLs creates bindings as an operator would and removes them when
// the test ends.
func operatorACLs(t testing.TB, a *kafkaadmin.Enforce, acls ...enforcer.ACL) {
	t.Helper()
	if err := a.CreateACLs(context.Background(), acls); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.DeleteACLs(context.Background(), acls) })
}

func allowACL(topic, principal, op string) enforcer.ACL {
	return enforcer.ACL{Topic: topic, Pattern: enforcer.PatternLiteral, Principal: principal, Host: enforcer.AnyHost, Operation: op, Permission: enforcer.PermAllow}
}

func denyWrite(topic, principal string) enforcer.ACL {
	return enforcer.ACL{Topic: topic, Pattern: enforcer.PatternLiteral, Principal: principal, Host: enforcer.AnyHost, Operation: enforcer.OpWrite, Permission: enforcer.PermDeny}
}

// exactly reports whether the topic's ACLs are exactly want. A failed
// read is an error to poll past (a broker of the cluster may be stopping).
func exactly(t testing.TB, a *kafkaadmin.Enforce, topic string, want ...enforcer.ACL) error {
	all, err := a.TopicACLs(context.Background())
	if err != nil {
		return err
	}
	var got []enforcer.ACL
	for _, x := range all {
		if x.Topic == topic {
			got = append(got, x)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("ACLs on %s: %v, want %v", topic, got, want)
	}
	for _, w := range want {
		if !hasACL(got, w.Principal, w.Operation, w.Permission) {
			return fmt.Errorf("ACLs on %s: %v, want %v", topic, got, want)
		}
	}
	return nil
}

const anonymousPrincipal = "User:ANONYMOUS"
