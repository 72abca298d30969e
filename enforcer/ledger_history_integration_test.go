//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Four more rules of the protection ledger on real brokers, each found by
// the simulation (classes ledger_delete and ledger_reshape) and
// unit-tested with fakes first: a record a peer wrote back counts the
// caps spent (Record.Restored), a process with no record of its own waits
// a lease and a pass before purging, a peer writes back the claims of an
// earlier Fresh process (Record.Started), and an instance standing by
// keeps standing by when the active instance's record vanishes with the
// topic. The tests drive their agents' passes themselves (Reconcile), with
// short leases: seconds each.

// deleteTopicAndWait deletes topic and waits until the cluster no longer
// describes it.
func deleteTopicAndWait(t *testing.T, ca sarama.ClusterAdmin, topic string) {
	t.Helper()
	if err := ca.DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		md, err := ca.DescribeTopics([]string{topic})
		if err != nil {
			return err
		}
		if len(md) == 1 && errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
			return nil
		}
		return fmt.Errorf("topic %s not deleted yet", topic)
	})
}

// logged reports whether g logged a line msg whose attribute key contains
// part.
func logged(g *guard, msg, key, part string) bool {
	return slices.ContainsFunc(g.logs.lines(msg), func(l map[string]any) bool {
		s, _ := l[key].(string)
		return strings.Contains(s, part)
	})
}

// R7.3, R8.7 on a real broker (TestR7_3R8_7RecordAPeerWroteBackCountsTheCapsSpent):
// the agent's own record on the ownership topic was written back by a
// peer (Restored: the topic lost it while the agent was down, and the
// peer's copy may lack the agent's last purges). The new process restores
// the copy's purges and counts the caps as spent: no unexpired record is
// deleted, expired data still is, enforcer_blocked{reason="purge_cap"}
// and the log say why, and its own next record is no longer marked
// Restored.
func TestR7_3R8_7RestoredOwnRecordCountsTheCapsSpentOnARealBroker(t *testing.T) {
	const (
		topic   = "restored-history"
		expired = "restored-history-expired"
		own     = "__kdg_test_restored_history"
	)
	// One closed segment of expired data (9 kB: its deletion alone does
	// not bring usage under the purge band's target), older than the
	// unexpired data.
	shared.CreateTopic(t, expired, 1, map[string]string{"internal.segment.bytes": "16384"})
	shared.Produce(t, expired, 0, 2, 9000)
	src, at := purgeData(t, topic)
	src.Topics[expired] = true
	src.Classify = classifyAllClosed(expired)
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100}
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: caps, Protection: enforcer.ProtectionConfig{LeaseDuration: 10 * time.Second}}
	at(0.8995) // the top of the purge band, under the protect band

	// The copy a peer wrote back: an earlier process of pod-a purged 1 kB
	// (as far as the peer knew), nothing claimed.
	g := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	ctx := t.Context()
	now := time.Now()
	copied := enforcer.Record{BrokerID: shared.NodeID, Instance: "pod-a", Strategy: enforcer.StrategyACL, Restored: true,
		Purged:  []enforcer.PurgeBucket{{LogDir: shared.LogDir, End: now.Truncate(ledger.PurgeBucketWidth).Add(ledger.PurgeBucketWidth), Bytes: 1000}},
		Updated: now.Add(-time.Minute), Started: now.Add(-time.Hour)}
	kafkatest.Eventually(t, 30*time.Second, func() error { return g.admin.StoreRecord(ctx, copied) })
	mid := offsets(t, g.admin, topic, 2)
	for range 3 {
		pass(t, g)
	}
	if v := metric(g.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/the process whose record a peer wrote back purged %v unexpired bytes", v)
	}
	after := offsets(t, g.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R7.3/partition %d's log start moved from %d to %d", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if lso := offsets(t, g.admin, expired, 1)[0].LogStart; lso == 0 {
		t.Errorf("R7.3/the expired segment of %s was not deleted (log start offset 0)", expired)
	}
	if v := metric(g.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_cap} %v, want 1 (blocked %v)", v, blockedReasons(t, g))
	}
	const spent = "purge caps counted as spent for a day: this agent's purge history is unknown (no evidence, no action); unexpired data is not purged until the day's window frees, expired data is deleted as before"
	if !logged(g, spent, "reason", "written back by a peer") {
		t.Errorf("R7.3/no log line says the caps count as spent because a peer wrote the record back")
	}
	recs, err := g.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[shared.NodeID]; r.Restored || r.Instance != "pod-a" || len(r.Purged) == 0 {
		t.Errorf("R8.7/the agent's own record after its passes: restored %v, instance %q, purged %v; want its own write with the counted purges",
			r.Restored, r.Instance, r.Purged)
	}
	t.Logf("log start offsets %v -> %v, blocked %v", mid, after, blockedReasons(t, g))
}

// clusterPurgeData creates topic with 2 partitions of small segments
// (about 240 kB) on node of the cluster and returns its snapshot source,
// as purgeData does on the shared broker.
func clusterPurgeData(t *testing.T, c *kafkatest.Cluster, node int32, topic string) (src *scantest.Source, at func(usage float64)) {
	t.Helper()
	c.CreateTopicAssigned(t, topic, [][]int32{{node}, {node}}, map[string]string{"internal.segment.bytes": "16384"})
	cfg := c.Nodes[0].GuardConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := sarama.ByteEncoder(make([]byte, 1000))
	for range 4 {
		for part := range int32(2) {
			for range 30 {
				if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: value}); err != nil {
					t.Fatalf("produce %s-%d: %v", topic, part, err)
				}
			}
		}
	}
	capacity := &fixedCapacity{v: 1 << 40}
	src = &scantest.Source{LogDir: c.Node(node).LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	return src, func(usage float64) {
		capacity.set(1 << 40)
		capacity.set(uint64(float64(usedBytes(src)) / usage))
		src.ScanOnce()
	}
}

// R7.3, R8.7 on the 3-node cluster (TestR7_3R8_7NoRecordAtStartWaitsForAPeerToWriteItBack):
// a process whose first read finds no record of its own, in a cluster
// that lists other brokers, cannot tell a fresh install from a ledger
// lost while it was down: it purges no unexpired data for a lease and a
// pass (enforcer_blocked{reason="purge_history"}, a WARN line), in which
// a peer could write its record back; no record came back, so it then
// purges as a fresh install (an INFO line).
func TestR7_3R8_7NoRecordAtStartWaitsALeaseAndAPassOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "history-wait"
		own   = "__kdg_test_history_wait"
		lease = 3 * time.Second
	)
	src, at := clusterPurgeData(t, c, 2, topic)
	at(0.8995)
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	g := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	wait := lease + cfg.Interval
	start := time.Now()
	mid := offsets(t, g.admin, topic, 2)
	pass(t, g)
	if v := metric(g.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Fatalf("R7.3/the first pass purged %v unexpired bytes with no record of its own in a cluster of 3", v)
	}
	if v := metric(g.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_history} %v at the first pass, want 1 (blocked %v)", v, blockedReasons(t, g))
	}
	const (
		warn = "no record of this agent in the ownership topic: unexpired data is not purged for a lease and a pass, while peers write back a record the topic may have lost (a fresh install waits too); expired data is deleted as before"
		info = "no record of this agent was written back: purging as a fresh install"
	)
	if !logged(g, warn, "wait", wait.String()) {
		t.Errorf("R7.3/no WARN line names the wait %s", wait)
	}
	// Passes until it purges: not before the lease and a pass.
	var purgedAt time.Duration
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, g)
		if metric(g.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
			if after := offsets(t, g.admin, topic, 2); after[0].LogStart != mid[0].LogStart || after[1].LogStart != mid[1].LogStart {
				t.Fatalf("R7.3/log start offsets moved from %v to %v while waiting", mid, after)
			}
			time.Sleep(200 * time.Millisecond)
			return errors.New("no unexpired data purged yet")
		}
		purgedAt = time.Since(start)
		return nil
	})
	if purgedAt < wait {
		t.Errorf("R7.3/purged %s after the first pass, before the lease and a pass (%s)", purgedAt.Round(time.Millisecond), wait)
	}
	if v := metric(g.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 0 {
		t.Errorf("enforcer_blocked{reason=purge_history} %v once the wait ended, want 0", v)
	}
	if len(g.logs.lines(info)) != 1 {
		t.Errorf("R7.3/%d INFO lines say the wait ended, want 1", len(g.logs.lines(info)))
	}
	if after := offsets(t, g.admin, topic, 2); after[0].LogStart == mid[0].LogStart && after[1].LogStart == mid[1].LogStart {
		t.Errorf("R7.3/the unexpired bytes counted purged moved no log start offset: %v", after)
	}
	t.Logf("waited %s (lease and a pass %s) before purging as a fresh install", purgedAt.Round(time.Millisecond), wait)
}

// R7.3, R8.7 on the 3-node cluster (TestR7_3R8_7HistoryWaitStartsAgainOnATopicCreatedAgain):
// the ownership topic is deleted and created again between two passes of
// a process waiting for its record. Kafka gives the new topic another
// topic ID, which the agent reads (Records.Topic): its wait starts again
// on the new topic (a WARN line), so a lease and a pass after the wait
// began it still purges no unexpired data
// (enforcer_blocked{reason="purge_history"} stays 1).
func TestR7_3R8_7HistoryWaitStartsAgainOnATopicCreatedAgainOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "history-recreated"
		own   = "__kdg_test_history_recreated"
		lease = 5 * time.Second
	)
	src, at := clusterPurgeData(t, c, 2, topic)
	at(0.8995)
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	g := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	wait := lease + cfg.Interval
	// A pass reads the ownership topic when its last read is an interval
	// old.
	readPass := func() { time.Sleep(cfg.Interval + 100*time.Millisecond); pass(t, g) }
	pass(t, g) // creates the topic (its first read finds none)
	readPass() // reads it: the wait counts from here
	began := time.Now()
	before, err := g.admin.LoadRecords(t.Context())
	if err != nil || before.Topic == "" {
		t.Fatalf("the ownership topic read with no identity (%q, %v): the rule needs Kafka's topic ID", before.Topic, err)
	}
	deleteTopicAndWait(t, c.Admin(t), own)
	if err := clusterAdmin(t, c, own).Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	var after enforcer.Records
	kafkatest.Eventually(t, 30*time.Second, func() error {
		after, err = g.admin.LoadRecords(t.Context())
		return err
	})
	if after.Topic == "" || after.Topic == before.Topic {
		t.Fatalf("R8.7/the topic created again reads with identity %q, before %q: want another one", after.Topic, before.Topic)
	}
	readPass() // reads the new topic: the wait starts again
	const again = "the ownership topic was created again while this agent waited for its record: the wait starts again on it"
	if n := len(g.logs.lines(again)); n != 1 {
		t.Errorf("R7.3/%d WARN lines say the wait starts again, want 1", n)
	}
	time.Sleep(time.Until(began.Add(wait + 200*time.Millisecond)))
	pass(t, g) // past the first wait's end, within the second
	if v := metric(g.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/purged %v unexpired bytes a lease and a pass after the wait began, the topic created again within it", v)
	}
	if v := metric(g.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_history} %v past the first wait's end, want 1 (blocked %v)", v, blockedReasons(t, g))
	}
}

// R8.7 on the 3-node cluster (TestR8_7PeerWritesBackTheClaimsOfAnEarlierFreshProcess):
// broker 2's agent protects within a lease of its start, so its record is
// Fresh; the peer on broker 1 reads it. The ownership topic is deleted and
// broker 2's agent restarts: its new process finds no record, takes the
// bindings in place for an operator's (never adopt) and writes a Fresh
// record without them. The peer writes the earlier process's claims into
// it (the records carry their process's start, Record.Started), the new
// process adopts them, and on calm every binding goes.
func TestR8_7PeerWritesBackAnEarlierFreshProcessesClaimsOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "fresh-claims"
		own   = "__kdg_test_fresh_claims"
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{2}}, nil)
	superProduce(t, c, topic, 20)
	admin := clusterAdmin(t, c, own)
	t.Cleanup(func() {
		if acls := topicACLs(t, admin, topic); len(acls) > 0 {
			_ = admin.DeleteACLs(context.Background(), acls)
		}
	})
	full, calm := capacities(t, c.Node(2).LogDir, topic)
	cfg := enforcer.Config{Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}, Interval: time.Second}
	old := nodeAgent(t, c, 2, cfg, own, &fixedCapacity{v: full}, topic)
	peer := nodeAgent(t, c, 1, cfg, own, &fixedCapacity{v: 1 << 40}, topic)
	ctx := t.Context()
	var first enforcer.Record
	scan := func(g *guard) { g.src.(*scantest.Source).ScanOnce() }
	scan(old)
	scan(peer)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, old)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			return err
		}
		if first = recs.Agents[2]; !slices.Contains(first.ACLTopics(), topic) || len(topicACLs(t, admin, topic)) == 0 {
			return fmt.Errorf("broker 2 not protecting yet: %+v", first)
		}
		return nil
	})
	if !first.Fresh || first.Started.IsZero() {
		t.Fatalf("the test needs broker 2's record Fresh, with its process's start: %+v", first)
	}
	acls := topicACLs(t, admin, topic)
	pass(t, peer) // it reads broker 2's Fresh record

	// The topic is deleted; broker 2's agent restarts and writes its new
	// record (it created the topic again) before the peer's next pass.
	deleteTopicAndWait(t, c.Admin(t), own)
	backCap := &fixedCapacity{v: full}
	// Its interval is half the lease (the longest allowed): its calm pass
	// below comes within an interval of its last ledger read even on a
	// loaded machine, so no read is due then (the race of
	// TestR8_7FreshRecordKeepsThePeersWriteBackWithinAnInterval).
	backCfg := cfg
	backCfg.Interval = cfg.Protection.LeaseDuration / 2
	back := nodeAgent(t, c, 2, backCfg, own, backCap, topic)
	scan(back)
	var fresh enforcer.Record
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, back)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if fresh, ok = recs.Agents[2]; !ok {
			return errors.New("broker 2's new process wrote no record yet")
		}
		return nil
	})
	if !fresh.Fresh || len(fresh.ACLTopics()) != 0 || fresh.Started.Equal(first.Started) {
		t.Fatalf("the test needs the new process's record Fresh, without claims, with another start: %+v (earlier start %s)", fresh, first.Started)
	}
	if got := topicACLs(t, admin, topic); len(got) != len(acls) {
		t.Fatalf("the bindings changed across the restart: %v, were %v", got, acls)
	}

	// The peer's next read (an interval after its last one).
	kafkatest.Eventually(t, 10*time.Second, func() error {
		pass(t, peer)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			return err
		}
		if r := recs.Agents[2]; !slices.Contains(r.ACLTopics(), topic) {
			return fmt.Errorf("R8.7/the peer did not write the earlier Fresh process's claims into broker 2's record: %+v", r)
		}
		return nil
	})

	// Calm at once, within an interval of the new process's last read:
	// its record is Fresh, so it reads the ledger before it writes and
	// keeps the claims the peer wrote into it (the peer writes them
	// once), adopts them and lifts them
	// (TestR8_7FreshRecordKeepsThePeersWriteBackWithinAnInterval).
	backCap.set(calm)
	scan(back)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, back)
		pass(t, peer)
		if got := topicACLs(t, admin, topic); len(got) != 0 {
			return fmt.Errorf("R8.7/the earlier process's bindings are left: %v", got)
		}
		return nil
	})
}

// R8.8, R8.7 on a real broker (TestR7_3R8_7StandbyKeepsStandingByWhenTheRecordVanishes):
// pod-b stands by beside pod-a, which protects and purges. The ownership
// topic is deleted and created again: pod-a's record vanishes with it.
// pod-b keeps standing by for pod-a's lease (a missing record is a lost
// ledger, not a lease run out): it purges nothing and changes no binding,
// and pod-a writes its record back from memory.
func TestR7_3R8_7StandbyKeepsStandingByWhenTheRecordVanishesOnARealBroker(t *testing.T) {
	const (
		topic = "standby-vanish"
		own   = "__kdg_test_standby_vanish"
	)
	src, at := purgeData(t, topic)
	at(0.95)
	// The lease outlasts the topic's deletion on a loaded machine; the
	// test waits for no lease to run out.
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	dropTopicACLs(t, a, topic)
	pass(t, a)
	if v := metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v == 0 || len(topicACLs(t, a.admin, topic)) == 0 {
		t.Fatalf("the test needs pod-a protecting and purging: purged %v, bindings %v", v, topicACLs(t, a.admin, topic))
	}
	waitPurgedGone(t, src, a, topic, 2)
	at(0.95) // more unexpired data to purge
	pass(t, b)
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Fatalf("the test needs pod-b standing by beside pod-a's lease: protection_standby %v", v)
	}

	deleteTopicAndWait(t, shared.Admin(t), own)
	acls := topicACLs(t, a.admin, topic)
	mid := offsets(t, a.admin, topic, 2)
	// pod-b's passes (each reads the ledger once an interval passed since
	// its last read, or while it is lost): one finds the ledger lost and
	// creates the topic again (the creation may fail while the deletion
	// completes: the next read tries again); the next read finds the
	// topic without pod-a's record, and pod-b writes it back.
	lost, read := false, 0
	for i := 0; read < 2; i++ {
		err := b.e.Reconcile(t.Context())
		if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
			t.Fatalf("R8.8/pod-b stopped standing by at its pass %d after pod-a's record vanished, within pod-a's lease", i+1)
		}
		lostNow := metric(b.reg, "kafka_disk_guard_protection_ledger_lost", nil) == 1
		lost = lost || lostNow
		switch {
		case lost && err == nil && !lostNow:
			read++
		case i > 50:
			t.Fatalf("pod-b never read the ownership topic created again: %v", err)
		default:
			time.Sleep(200 * time.Millisecond)
		}
	}
	if v := metric(b.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R8.8/pod-b purged %v unexpired bytes beside pod-a", v)
	}
	after := offsets(t, a.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R8.8/partition %d's log start moved from %d to %d in pod-b's passes", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if got := topicACLs(t, a.admin, topic); len(got) != len(acls) {
		t.Errorf("R8.8/pod-b changed the bindings standing by: %v, were %v", got, acls)
	}
	recs, err := a.admin.LoadRecords(t.Context())
	if err != nil {
		t.Error(err)
	}
	// Standing by, pod-b writes back only the record pod-a wrote (it may
	// be the only process that remembers it), never its own.
	if r, ok := recs.Agents[shared.NodeID]; ok && r.Instance != "pod-a" {
		t.Errorf("R8.8/pod-b wrote broker %d's record naming %q standing by", shared.NodeID, r.Instance)
	}

	// pod-a writes its record back from memory; pod-b goes on standing by.
	pass(t, a)
	recs, err = a.admin.LoadRecords(t.Context())
	if err != nil {
		t.Error(err)
	}
	if r := recs.Agents[shared.NodeID]; r.Instance != "pod-a" || !slices.Contains(r.ACLTopics(), topic) {
		t.Errorf("R8.7/broker %d's record after pod-a's pass: instance %q, claims %v; want pod-a's written back from memory", shared.NodeID, r.Instance, r.ACLTopics())
	}
	pass(t, b)
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-b stopped standing by after pod-a wrote its record back")
	}
}
