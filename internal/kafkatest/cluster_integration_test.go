//go:build integration

package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// The cluster harness: three nodes replicate a topic with RF=3, an ACL set
// through one node binds producers on every node (the inter-broker
// principal is a super user, so replication goes on), one node's log dir
// is a tmpfs, and a node stopped and started again rejoins the ISR.
func TestClusterReplicatesAppliesACLsAndRejoins(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is required (Debian package kcat): ", err)
	}
	c, err := StartCluster(ClusterOptions{Tmpfs: map[int32]string{3: "64m"}, NodeProps: map[int32][]string{2: {"message.max.bytes=1048577"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("cluster %s of %d nodes up in %s", c.ID, len(c.Nodes), c.StartDuration.Round(100*time.Millisecond))

	// Every node: its own meta.properties naming the cluster and its id;
	// node 3's log dir is a tmpfs of 64 MiB, the others are not.
	for _, b := range c.Nodes {
		meta, err := os.ReadFile(filepath.Join(b.LogDir, "meta.properties"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(meta), "cluster.id="+c.ID) || !strings.Contains(string(meta), fmt.Sprintf("node.id=%d\n", b.NodeID)) {
			t.Errorf("node %d meta.properties:\n%s", b.NodeID, meta)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(b.LogDir, &st); err != nil {
			t.Fatal(err)
		}
		const tmpfsMagic = 0x01021994
		isTmpfs := st.Type == tmpfsMagic
		if size := uint64(st.Blocks) * uint64(st.Bsize); isTmpfs != (b.NodeID == 3) || isTmpfs && size != 64<<20 {
			t.Errorf("node %d log dir: tmpfs %v, %d bytes", b.NodeID, isTmpfs, size)
		}
	}
	props, err := os.ReadFile(filepath.Join(c.Node(2).Dir, "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(props), "\nmessage.max.bytes=1048577\n") {
		t.Error("node 2 lacks its own property")
	}

	// RF=3: every node holds a replica and the ISR is all three.
	const topic = "cluster.rf3"
	c.CreateTopic(t, topic, 1, 3, nil)
	if _, replicas, isr := c.Partition(t, topic, 0); !slices.Equal(replicas, []int32{1, 2, 3}) || !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("replicas %v, ISR %v: want all three nodes", replicas, isr)
	}
	// An anonymous producer on any node writes (allow.everyone.if.no.acl.found=true).
	for _, b := range c.Nodes {
		b.Produce(t, topic, 0, 1, 100)
	}

	// DENY WRITE for every principal, set through node 2.
	deny := sarama.Acl{Principal: "User:*", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: topic, ResourcePatternType: sarama.AclPatternLiteral}
	admin2 := newAdmin(t, []string{c.Node(2).SASLAddr}, c.Node(2).GuardConfig())
	if err := admin2.CreateACL(res, deny); err != nil {
		t.Fatal(err)
	}
	for _, b := range c.Nodes {
		Eventually(t, 20*time.Second, func() error {
			cfg := b.ClientConfig()
			p, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
			if err != nil {
				return err
			}
			defer p.Close()
			_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("denied?")})
			if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				return fmt.Errorf("node %d: Sarama producer got %v, want TOPIC_AUTHORIZATION_FAILED", b.NodeID, err)
			}
			return nil
		})
		cmd := exec.Command("kcat", "-P", "-b", b.Addr, "-t", topic, "-p", "0", "-X", "message.timeout.ms=10000")
		cmd.Stdin = strings.NewReader("denied?\n")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "authorization failed") {
			t.Errorf("node %d: kcat produced under DENY WRITE (err %v):\n%s", b.NodeID, err, out)
		}
	}
	// The guard, a super user, still writes with acks=all: replication
	// between the nodes (User:broker) goes on under the DENY.
	gp, err := sarama.NewSyncProducer([]string{c.Node(1).SASLAddr}, c.Node(1).GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	if _, _, err := gp.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("super")}); err != nil {
		t.Fatalf("super user producing with acks=all under the DENY: %v", err)
	}
	// Every node's replica holds the same bytes (DescribeLogDirs of each).
	Eventually(t, 20*time.Second, func() error {
		dirs, err := admin2.DescribeLogDirs([]int32{1, 2, 3})
		if err != nil {
			return err
		}
		sizes := map[int32]int64{}
		for node, ds := range dirs {
			for _, d := range ds {
				for _, tp := range d.Topics {
					for _, p := range tp.Partitions {
						if tp.Topic == topic && p.PartitionID == 0 {
							sizes[node] = p.Size
						}
					}
				}
			}
		}
		if len(sizes) != 3 || sizes[1] == 0 || sizes[1] != sizes[2] || sizes[1] != sizes[3] {
			return fmt.Errorf("replica sizes by node %v, want three equal", sizes)
		}
		return nil
	})

	// A node stopped leaves the ISR; started again, it rejoins.
	stop := time.Now()
	if err := c.Node(2).StopNode(); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 2 stopped in %s", time.Since(stop).Round(100*time.Millisecond))
	if c.Node(2).Running() {
		t.Fatal("node 2 still answers after StopNode")
	}
	Eventually(t, 30*time.Second, func() error {
		if _, _, isr := c.Partition(t, topic, 0); !slices.Equal(isr, []int32{1, 3}) {
			return fmt.Errorf("ISR %v with node 2 down, want [1 3]", isr)
		}
		return nil
	})
	// A fresh producer: the first one may hold a connection to node 2.
	cfg := c.Node(1).GuardConfig()
	cfg.Producer.Retry.Max = 5
	gp2, err := sarama.NewSyncProducer([]string{c.Node(1).SASLAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer gp2.Close()
	if _, _, err := gp2.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("two of three")}); err != nil {
		t.Fatalf("producing with node 2 down: %v", err)
	}
	start := time.Now()
	if err := c.Node(2).StartNode(); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 2 started again in %s", time.Since(start).Round(100*time.Millisecond))
	Eventually(t, 60*time.Second, func() error {
		if _, _, isr := c.Partition(t, topic, 0); !slices.Equal(isr, []int32{1, 2, 3}) {
			return fmt.Errorf("ISR %v after the restart, want [1 2 3]", isr)
		}
		return nil
	})
	// The DENY matches the topic, so allow.everyone.if.no.acl.found no
	// longer applies to it: anonymous readers are refused too (R4.3).
	anon, err := sarama.NewConsumer([]string{c.Node(2).Addr}, c.Node(2).ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.ConsumePartition(topic, 0, sarama.OffsetOldest); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("anonymous consumer under a DENY WRITE: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Every record is there: 3 anonymous, 2 from the guard.
	gc, err := sarama.NewConsumer([]string{c.Node(2).SASLAddr}, c.Node(2).GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	pc, err := gc.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < 5 {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatal(err)
		case <-timeout:
			t.Fatalf("read %d of 5 records: %q", len(got), got)
		}
	}
	if got[3] != "super" || got[4] != "two of three" {
		t.Errorf("records %q", got)
	}
}

func newAdmin(t *testing.T, addrs []string, cfg *sarama.Config) sarama.ClusterAdmin {
	t.Helper()
	a, err := sarama.NewClusterAdmin(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
