//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.1, R8.2: an agent killed with SIGKILL and never restarted: a peer
// agent lifts its protection once it saw the lease unrenewed for its
// length, and while producers are blocked the peer's cluster-wide view
// says so (the alert's condition) although the agent that blocked them is
// gone. The bound from the kill to the lift is measured.
func TestR8_1KilledAgentIsLiftedByAPeerWithinTheLease(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "lease-blocked"
		own   = "__kdg_test_lease"
		lease = 3 * time.Second
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{2}}, nil)
	admin := clusterAdmin(t, c, own)
	operatorACLs(t, admin, allowACL(topic, anonymousPrincipal, enforcer.OpWrite), allowACL(topic, anonymousPrincipal, enforcer.OpRead))
	superProduce(t, c, topic, 20)
	full, _ := capacities(t, c.Node(2).LogDir, topic)
	capFile := filepath.Join(t.TempDir(), "capacity")
	writeCapacity(t, capFile, full)

	// The peer: the agent of node 1, calm, following the records.
	peerCap := &fixedCapacity{v: 1 << 40}
	peer := nodeAgent(t, c, 1, enforcer.Config{Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}, own, peerCap, topic)
	peer.start(t)

	agent := startChild(t, c.Node(2), childSpec{brokerID: 2, capacityFile: capFile, topics: topic, ownTopic: own, addrs: c.SASLAddrs(), lease: lease})
	anonCfg, anonAddrs := anonymous(c)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if err := produceAs(anonCfg, anonAddrs, topic); !refused(err) {
			return fmt.Errorf("produce under protection: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if v := metric(peer.reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 1 {
			return fmt.Errorf("R8.2/the peer's view of broker 2: %v", v)
		}
		return nil
	})

	agent.kill(t)
	killed := time.Now()
	var lifted time.Duration
	for lifted == 0 {
		if time.Since(killed) > lease+30*time.Second {
			t.Fatalf("R8.1/not lifted %s after the kill (lease %s)", time.Since(killed), lease)
		}
		if hasACL(topicACLs(t, admin, topic), enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny) {
			// Still blocked: the cluster-wide view still says so while the
			// lease runs. It runs from the last renewal, which on a loaded
			// machine may precede the kill by a few passes: half the lease.
			if v := metric(peer.reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 1 && time.Since(killed) < lease/2 {
				t.Fatalf("R8.2/producers blocked but the peer's view of broker 2 is %v", v)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		lifted = time.Since(killed)
	}
	t.Logf("R8.1/lease %s: lifted %s after SIGKILL of the agent", lease, lifted.Round(10*time.Millisecond))
	if lifted > lease+5*time.Second {
		t.Errorf("R8.1/lifted %s after the kill, want within the lease %s and a few passes", lifted, lease)
	}
	kafkatest.Eventually(t, 10*time.Second, func() error { return produceAs(anonCfg, anonAddrs, topic) })
	recs, err := admin.LoadRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := recs.PendingLift(2); !ok || l.Kind != enforcer.LiftLeaseExpired || !strings.Contains(l.By, "broker 1") {
		t.Errorf("R8.1/the lift is not recorded: %+v %v", l, ok)
	}
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if v := metric(peer.reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 0 {
			return fmt.Errorf("R8.2/the peer's view of broker 2 after the lift: %v", v)
		}
		return nil
	})
}

// R8.1: two agents claiming the same DENY give it up at the same moment,
// several times over: each writes its smaller record, reads the topic to
// its end and deletes what no live record claims. The later writer sees
// the earlier one's drop: no DENY is ever left that no record claims.
func TestR8_1RacingLiftsLeaveNoUnclaimedDeny(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "race-lift"
		own   = "__kdg_test_race"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{1, 2}}, nil)
	admin := clusterAdmin(t, c, own)
	superProduce(t, c, topic, 20)
	caps := map[int32]*fixedCapacity{}
	agents := map[int32]*guard{}
	for _, id := range []int32{1, 2} {
		full, calm := capacities(t, c.Node(id).LogDir, topic)
		caps[id] = &fixedCapacity{v: full}
		// The first record write of a pass may take longer than the
		// default record timeout on a loaded machine; the deadline has its
		// own test (TestR8_4RecordWriteBoundedByRecordTimeout), this one
		// is about racing lifts.
		cfg := enforcer.Config{Protection: enforcer.ProtectionConfig{RecordTimeout: 15 * time.Second}}
		agents[id] = nodeAgent(t, c, id, cfg, own, caps[id], topic)
		if err := agents[id].admin.Prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func(id int32, calm uint64) { caps[id].set(calm) }(id, calm)
	}
	scan := func() {
		for _, g := range agents {
			g.src.(*scantest.Source).ScanOnce()
		}
	}
	for round := range 6 {
		for id, g := range agents {
			full, _ := capacities(t, c.Node(id).LogDir, topic)
			caps[id].set(full)
			scan()
			if err := g.e.Reconcile(context.Background()); err != nil {
				t.Fatalf("round %d: agent %d protecting: %v", round, id, err)
			}
		}
		recs, err := admin.LoadRecords(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !recs.Live(1, topic) || !recs.Live(2, topic) || len(recs.Agents[1].ACLTopics()) != 1 || len(recs.Agents[2].ACLTopics()) != 1 {
			t.Fatalf("round %d: both agents should claim %s: %+v", round, topic, recs.Agents)
		}
		for id := range agents {
			_, calm := capacities(t, c.Node(id).LogDir, topic)
			caps[id].set(calm)
		}
		scan()
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, id := range []int32{1, 2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = agents[id].e.Reconcile(context.Background())
			}()
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: lifting: %v", round, err)
		}
		// The brokers' ACL caches follow the metadata log: a read may lag
		// the deletion by a moment, a stuck DENY stays.
		kafkatest.Eventually(t, 10*time.Second, func() error {
			if got := topicACLs(t, admin, topic); len(got) != 0 {
				recs, _ := admin.LoadRecords(context.Background())
				return fmt.Errorf("R8.1/round %d: left after both lifted: %v; records %+v", round, got, recs.Agents)
			}
			return nil
		})
	}
}

// R8.3: with allow.everyone.if.no.acl.found=false (Kafka's default) a
// non-super principal that could not read a topic still cannot while it
// is protected: the guard adds a DENY and no ALLOW.
func TestR8_3DenyIfNoACLFoundIsNotWidened(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "closed-topic"
		own   = "__kdg_test_closed"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{1}}, nil)
	admin := clusterAdmin(t, c, own)
	superProduce(t, c, topic, 20)
	limCfg, limAddrs := limited(c)
	if err := readAs(limCfg, limAddrs, topic); !refused(err) {
		t.Fatalf("limited reads %s before protection: %v", topic, err)
	}
	full, calm := capacities(t, c.Node(1).LogDir, topic)
	capacity := &fixedCapacity{v: full}
	g := nodeAgent(t, c, 1, enforcer.Config{}, own, capacity, topic)
	g.start(t)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic, denyWrite(topic, enforcer.AnyPrincipal)) })
	limCfg, _ = limited(c)
	if err := readAs(limCfg, limAddrs, topic); !refused(err) {
		t.Fatalf("R8.3/limited reads %s during protection: %v (access widened)", topic, err)
	}
	if lines := g.logs.lines("allow.everyone.if.no.acl.found read from the brokers"); len(lines) == 0 || lines[0]["value"] != "unknown" {
		t.Errorf("R8.3/allow.everyone.if.no.acl.found as read: %v (the brokers set it: hidden, unknown)", lines)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic) })
}

// R8.3: an exempt principal keeps writing while everyone else is refused
// (operator ACLs govern the topic: DENY WRITE per other writer); when an
// operator ACL lets User:* write, no one can be left out, and the guard
// says so.
func TestR8_3ExemptPrincipalKeepsWriting(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "exempt-writer"
		own   = "__kdg_test_exempt"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{1}}, nil)
	admin := clusterAdmin(t, c, own)
	limitedPrincipal := "User:" + kafkatest.LimitedUser
	operatorACLs(t, admin, allowACL(topic, limitedPrincipal, enforcer.OpWrite), allowACL(topic, anonymousPrincipal, enforcer.OpWrite))
	superProduce(t, c, topic, 20)
	full, calm := capacities(t, c.Node(1).LogDir, topic)
	capacity := &fixedCapacity{v: full}
	g := nodeAgent(t, c, 1, enforcer.Config{Protection: enforcer.ProtectionConfig{ExemptPrincipals: []string{limitedPrincipal}}}, own, capacity, topic)
	g.start(t)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return exactly(t, admin, topic, allowACL(topic, limitedPrincipal, enforcer.OpWrite), allowACL(topic, anonymousPrincipal, enforcer.OpWrite),
			denyWrite(topic, anonymousPrincipal))
	})
	anonCfg, anonAddrs := anonymous(c)
	if err := produceAs(anonCfg, anonAddrs, topic); !refused(err) {
		t.Errorf("R8.3/anonymous produces under protection: %v", err)
	}
	limCfg, limAddrs := limited(c)
	for i := range 5 {
		if err := produceAs(limCfg, limAddrs, topic); err != nil {
			t.Fatalf("R8.3/the exempt principal is refused (write %d): %v", i, err)
		}
	}

	// An operator lets everyone write: exemption is impossible there.
	everyone := allowACL(topic, enforcer.AnyPrincipal, enforcer.OpWrite)
	operatorACLs(t, admin, everyone)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if !hasACL(topicACLs(t, admin, topic), enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny) {
			return errors.New("no DENY WRITE User:* yet")
		}
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "exemption_impossible"}); v != 1 {
			return fmt.Errorf("R8.3/error{exemption_impossible} %v", v)
		}
		return nil
	})
	limCfg, _ = limited(c)
	if err := produceAs(limCfg, limAddrs, topic); !refused(err) {
		t.Errorf("R8.3/with User:* allowed to write, the exempt principal is not denied: %v", err)
	}
	if err := admin.DeleteACLs(context.Background(), []enforcer.ACL{everyone}); err != nil {
		t.Fatal(err)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return exactly(t, admin, topic, allowACL(topic, limitedPrincipal, enforcer.OpWrite), allowACL(topic, anonymousPrincipal, enforcer.OpWrite))
	})
}

// R8.1: an operator lifts the protection of a live agent (the code of
// `kafka-disk-guard protection lift`): the bindings go, the agent
// acknowledges the lift and does not protect again while still full;
// withdrawn (`protection resume`), it protects again.
func TestR8_1OperatorLiftWithALiveAgent(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "operator-lift"
		own   = "__kdg_test_oplift"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{3}}, nil)
	admin := clusterAdmin(t, c, own)
	superProduce(t, c, topic, 20)
	full, calm := capacities(t, c.Node(3).LogDir, topic)
	capacity := &fixedCapacity{v: full}
	g := nodeAgent(t, c, 3, enforcer.Config{}, own, capacity, topic)
	g.start(t)
	deny := denyWrite(topic, enforcer.AnyPrincipal)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic, deny) })
	// Protection comes first; the record may follow a moment later.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		recs, err := admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if !recs.Live(3, topic) || len(recs.Agents[3].ACLTopics()) != 1 {
			return fmt.Errorf("not recorded yet: %+v", recs.Agents[3])
		}
		return nil
	})

	res, err := ledger.LiftProtection(context.Background(), admin, ledger.LiftRequest{Broker: 3, By: "operator test", Reason: "test", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lifts) != 1 || len(res.Released.ACLs) != 1 {
		t.Fatalf("R8.1/lift %+v", res)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		recs, err := admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if r := recs.Agents[3]; r.Ack != res.Lifts[0].ID || r.Suppressed == nil || r.Claims() {
			return fmt.Errorf("R8.1/not acknowledged yet: %+v", r)
		}
		return nil
	})
	g.waitReconciles(t, 10)
	if err := exactly(t, admin, topic); err != nil {
		t.Fatalf("R8.1/protected again after the operator's lift: %v", err)
	}
	if err := admin.DeleteLift(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic, deny) })
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic) })
}

// R8.4: the ownership topic under min.insync.replicas (RF 3,
// min.insync.replicas=3, one node stopped) takes no writes: protection is
// applied all the same, the error is visible, and the record is written
// once the node is back.
func TestR8_4OwnershipTopicUnderMinISRDoesNotStopProtection(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "minisr-protected"
		own   = "__kdg_test_minisr"
	)
	c.CreateTopicAssigned(t, own, [][]int32{{1, 2, 3}}, map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "3"})
	c.CreateTopicAssigned(t, topic, [][]int32{{1}}, nil)
	admin := clusterAdmin(t, c, own)
	superProduce(t, c, topic, 20)
	full, calm := capacities(t, c.Node(1).LogDir, topic)
	capacity := &fixedCapacity{v: calm}
	g := nodeAgent(t, c, 1, enforcer.Config{}, own, capacity, topic)
	g.start(t)
	g.waitReconciles(t, 3)

	if err := c.Node(3).StopNode(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			c.Node(3).StartNode()
		}
	})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if _, _, isr := c.Partition(t, own, 0); len(isr) != 2 {
			return fmt.Errorf("ISR of %s: %v", own, isr)
		}
		return nil
	})
	start := time.Now()
	capacity.set(full)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic, denyWrite(topic, enforcer.AnyPrincipal)) })
	t.Logf("R8.4/protected %s after crossing the band with the ownership topic under min.insync.replicas", time.Since(start).Round(time.Millisecond))
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "record_failed"}); v != 1 {
			return fmt.Errorf("R8.2/error{record_failed} %v", v)
		}
		return nil
	})
	// The read may meet the stopped node (a request any broker answers
	// goes to a random one): it is retried; a claim read is a failure.
	kafkatest.Eventually(t, 20*time.Second, func() error {
		recs, err := admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if recs.Agents[1].Claims() {
			t.Fatalf("a record was written under min.insync.replicas: %+v", recs.Agents[1])
		}
		return nil
	})

	if err := c.Node(3).StartNode(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	kafkatest.Eventually(t, 90*time.Second, func() error {
		recs, err := admin.LoadRecords(context.Background())
		if err != nil {
			return err
		}
		if !recs.Live(1, topic) || len(recs.Agents[1].ACLTopics()) != 1 {
			return fmt.Errorf("R8.4/the record is not written after the node came back: %+v", recs.Agents[1])
		}
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "record_failed"}); v != 0 {
			return fmt.Errorf("error{record_failed} %v", v)
		}
		return nil
	})
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error { return exactly(t, admin, topic) })
}

// R8.4: 3,000 topics protected and lifted by one agent: the time to
// protect, the record's size and the time to lift are measured.
func TestR8_4ThreeThousandTopicsProtected(t *testing.T) {
	c := sharedCluster(t)
	const (
		n   = 3000
		own = "__kdg_test_bulk"
	)
	topics := make([]string, n)
	for i := range topics {
		topics[i] = fmt.Sprintf("bulk.orders-service.events-v1-%04d", i)
	}
	start := time.Now()
	createTopicsOn(t, c, 2, topics)
	t.Logf("created %d topics in %s", n, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { deleteTopics(t, c, topics) })
	admin := clusterAdmin(t, c, own)
	full, calm := capacities(t, c.Node(2).LogDir, topics...)
	capacity := &fixedCapacity{v: calm}
	// The pass is measured at this size, not the record's bound (its own
	// test): a cluster whose node a test before restarted may take more
	// than the default 500 ms for the first write to a new ownership topic.
	g := nodeAgent(t, c, 2, enforcer.Config{Interval: time.Second, Protection: enforcer.ProtectionConfig{RecordTimeout: 15 * time.Second}},
		own, capacity, topics...)
	scan := func() { g.src.(*scantest.Source).ScanOnce() }
	scan()
	if err := g.e.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}

	capacity.set(full)
	scan()
	start = time.Now()
	if err := g.e.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	protectTook := time.Since(start)
	// The brokers' ACL caches follow the metadata log: a read may lag a
	// change by a moment.
	bulk := func(want int) func() error {
		return func() error {
			acls, err := admin.TopicACLs(context.Background())
			if err != nil {
				return err
			}
			denied := 0
			for _, a := range acls {
				if strings.HasPrefix(a.Topic, "bulk.") && a.Operation == enforcer.OpWrite && a.Permission == enforcer.PermDeny {
					denied++
				}
			}
			if denied != want {
				return fmt.Errorf("R8.4/%d of %d topics denied, want %d", denied, n, want)
			}
			return nil
		}
	}
	kafkatest.Eventually(t, 30*time.Second, bulk(n))
	recs, err := admin.LoadRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(recs.Agents[2].ACLTopics()); got != n {
		t.Fatalf("R8.4/the record claims %d topics", got)
	}
	data, _ := ledger.EncodeRecord(recs.Agents[2])
	if err := g.e.Reconcile(context.Background()); err != nil { // sets the record size gauge
		t.Fatal(err)
	}
	if v := metric(g.reg, "kafka_disk_guard_protection_record_bytes", nil); v == 0 || v > 256<<10 {
		t.Errorf("R8.4/record bytes gauge %v", v)
	}
	t.Logf("R8.4/%d topics: protected in one pass of %s; record %d bytes", n, protectTook.Round(time.Millisecond), len(data))

	capacity.set(calm)
	scan()
	start = time.Now()
	if err := g.e.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	liftTook := time.Since(start)
	kafkatest.Eventually(t, 30*time.Second, bulk(0))
	t.Logf("R8.4/%d topics: lifted in one pass of %s", n, liftTook.Round(time.Millisecond))
}

// createTopicsOn creates topics with one partition on node, in batches of
// 500 per CreateTopics request, and waits until the node has them all.
func createTopicsOn(t *testing.T, c *kafkatest.Cluster, node int32, topics []string) {
	t.Helper()
	a := c.Admin(t)
	ctrl, err := a.Controller()
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(topics); start += 500 {
		req := &sarama.CreateTopicsRequest{Version: 3, Timeout: 60 * time.Second, TopicDetails: map[string]*sarama.TopicDetail{}}
		for _, tp := range topics[start:min(start+500, len(topics))] {
			req.TopicDetails[tp] = &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: map[int32][]int32{0: {node}}}
		}
		rsp, err := ctrl.CreateTopics(req)
		if err != nil {
			t.Fatal(err)
		}
		for tp, e := range rsp.TopicErrors {
			if e != nil && !errors.Is(e.Err, sarama.ErrNoError) {
				t.Fatalf("create %s: %v", tp, e.Err)
			}
		}
	}
	kafkatest.Eventually(t, 120*time.Second, func() error {
		missing := 0
		for _, tp := range topics {
			if !dirExists(filepath.Join(c.Node(node).LogDir, tp+"-0")) {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d partition directories missing", missing)
		}
		return nil
	})
}

func deleteTopics(t *testing.T, c *kafkatest.Cluster, topics []string) {
	ctrl, err := c.Admin(t).Controller()
	if err != nil {
		t.Logf("delete topics: %v", err)
		return
	}
	for start := 0; start < len(topics); start += 500 {
		req := &sarama.DeleteTopicsRequest{Version: 3, Timeout: 60 * time.Second, Topics: topics[start:min(start+500, len(topics))]}
		if _, err := ctrl.DeleteTopics(req); err != nil {
			t.Logf("delete topics: %v", err)
			return
		}
	}
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
