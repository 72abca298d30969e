//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Four more rules of the protection ledger on real brokers, each found by
// the simulation (ledger_delete, ledger_reshape) and unit-tested with
// fakes first: peers' leases count again from the read that finds the
// ledger back, a peer's reassigner writes back the claim it was
// releasing, a peer writes the purge history it remembers into a
// restarted agent's Fresh record, and an agent's own memory wins over a
// peer's copy of its record after its wall clock went back. The tests
// drive their agents' passes themselves (Reconcile, Pass), with short
// leases where one must run out.

// R8.7, R8.5 on the 3-node cluster (TestR8_7LeasesCountAgainWhenTheLedgerIsBack):
// broker 2's agent protects its topic (DENY WRITE User:*), broker 1's
// agent follows its lease. The ownership topic is deleted, and a tool
// creates it again with Kafka's defaults (cleanup.policy=delete): the
// ledger is lost, for the operator to repair, for longer than a lease,
// both agents passing, nobody able to renew. The operator deletes it, the
// agents create it again, and the peer reads it back first: it counts
// broker 2's lease again from that read and does not lift the protection
// of the live agent, which renews at its next pass; a producer stays
// refused throughout. Once broker 2's agent is gone, the peer lifts its
// protection a lease later, as before.
func TestR8_7LeasesCountAgainWhenTheLedgerIsBackOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "lease-back"
		own   = "__kdg_test_lease_back"
		lease = 3 * time.Second
	)
	c.CreateTopicAssigned(t, topic, [][]int32{{2}}, nil)
	admin := clusterAdmin(t, c, own)
	operatorACLs(t, admin, allowACL(topic, anonymousPrincipal, enforcer.OpWrite))
	t.Cleanup(func() {
		if acls := topicACLs(t, admin, topic); len(acls) > 0 {
			_ = admin.DeleteACLs(context.Background(), acls)
		}
	})
	superProduce(t, c, topic, 20)
	full, _ := capacities(t, c.Node(2).LogDir, topic)
	cfg := enforcer.Config{Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	owner := nodeAgent(t, c, 2, cfg, own, &fixedCapacity{v: full}, topic)
	peer := nodeAgent(t, c, 1, cfg, own, &fixedCapacity{v: 1 << 40}, topic)
	scanSrc(owner)
	scanSrc(peer)
	denied := func() bool {
		return hasACL(topicACLs(t, admin, topic), enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny)
	}
	produce := func() error { cfg, addrs := anonymous(c); return produceAs(cfg, addrs, topic) }
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, owner)
		pass(t, peer)
		if !denied() {
			return errors.New("broker 2's agent not protecting yet")
		}
		if v := metric(peer.reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 1 {
			return fmt.Errorf("the peer's view of broker 2: cluster_write_protection %v", v)
		}
		if err := produce(); !refused(err) {
			return fmt.Errorf("produce under protection: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		return nil
	})

	// Deleted, and created again in the wrong shape: lost for longer than
	// a lease while both agents pass.
	ca := c.Admin(t)
	deleteTopicAndWait(t, ca, own)
	policy := "delete"
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return ca.CreateTopic(own, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 3,
			ConfigEntries: map[string]*string{"cleanup.policy": &policy}}, false)
	})
	for lost := time.Now(); time.Since(lost) < lease+time.Second; time.Sleep(100 * time.Millisecond) {
		_ = owner.e.Reconcile(t.Context()) // the ledger lost: an error
		_ = peer.e.Reconcile(t.Context())
	}
	if v := metric(peer.reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 1 {
		t.Fatalf("the test needs the ledger lost for the peer: protection_ledger_lost %v", v)
	}
	if !denied() {
		t.Fatal("R8.7/protection released while the ledger was lost")
	}

	// Repaired: deleted, and the peer creates it again and reads it back
	// first (its second pass), then makes one more pass.
	deleteTopicAndWait(t, ca, own)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, peer)
		if v := metric(peer.reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 0 {
			return errors.New("the peer has not read the ledger back yet")
		}
		return nil
	})
	back := time.Now()
	time.Sleep(200 * time.Millisecond)
	pass(t, peer)
	if !denied() {
		t.Fatalf("R8.7/the peer lifted the live agent's protection as the ledger came back (lifts %v)", pendingLifts(t, admin))
	}
	if err := produce(); !refused(err) {
		t.Errorf("R8.7/produce as the ledger came back: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// The agent renews; the peer goes on following it for more than a
	// lease: nothing is lifted.
	for time.Since(back) < lease+time.Second {
		pass(t, owner)
		pass(t, peer)
		if !denied() {
			t.Fatalf("R8.7/the live agent's protection lifted %s after the ledger came back (lease %s; lifts %v)",
				time.Since(back).Round(time.Millisecond), lease, pendingLifts(t, admin))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := produce(); !refused(err) {
		t.Errorf("R8.7/produce after the ledger came back: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	recs, err := admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[2]; !slices.Contains(r.ACLTopics(), topic) {
		t.Errorf("R8.7/broker 2's record after the ledger came back: %+v, want its claim", r)
	}

	// Broker 2's agent is gone: its protection is lifted a lease later.
	gone := time.Now()
	kafkatest.Eventually(t, lease+20*time.Second, func() error {
		pass(t, peer)
		if denied() {
			time.Sleep(100 * time.Millisecond)
			return errors.New("broker 2's protection not lifted yet")
		}
		return nil
	})
	if d := time.Since(gone); d < lease/2 {
		t.Errorf("R8.5/a dead agent's protection lifted %s after its last pass, within half its lease %s", d.Round(time.Millisecond), lease)
	}
	kafkatest.Eventually(t, 10*time.Second, produce)
	t.Logf("lease %s: protection kept %s past the ledger's return with its agent renewing; lifted %s after its last pass",
		lease, (lease + time.Second).Round(time.Millisecond), time.Since(gone).Round(time.Millisecond))
}

func scanSrc(g *guard) { g.src.(*scantest.Source).ScanOnce() }

// pendingLifts lists the lifts the ownership topic holds (for failure
// messages).
func pendingLifts(t *testing.T, a *kafkaadmin.Enforce) map[int32]ledger.Lift {
	recs, err := a.LoadRecords(context.Background())
	if err != nil {
		t.Logf("load records: %v", err)
		return nil
	}
	return recs.Lifts
}

// failingReads is the reassigner's admin API whose throttle config reads
// fail while fail is set (a timeout, a controller move).
type failingReads struct {
	*kafkaadmin.Relief
	fail atomic.Bool
}

func (f *failingReads) ThrottleConfig(ctx context.Context, resource, name, key string) (string, bool, error) {
	if f.fail.Load() {
		return "", false, errors.New("injected: REQUEST_TIMED_OUT")
	}
	return f.Relief.ThrottleConfig(ctx, resource, name, key)
}

// R8.7, R8.5 on a real broker (TestR8_7ReassignerWritesBackThePeerClaimItWasReleasing):
// broker 2's reassigner throttled a topic's replication (its claim in the
// ledger, the values on the topic: the leader side the guard's alone, the
// follower side over an operator's "*") and stopped renewing. This
// agent's reassigner restores them after the claim's lease: it marks the
// claim releasing under its instance, and its config reads fail before
// the values are restored. The ownership topic is deleted and created
// again, empty: the reassigner writes the claim back from memory,
// restores both values (the leader side removed, the operator's "*"
// back) and removes the claim.
func TestR8_7ReassignerWritesBackThePeerClaimItWasReleasingOnARealBroker(t *testing.T) {
	const (
		topic = "reassign-releasing"
		own   = "__kdg_test_reassign_releasing"
	)
	shared.CreateTopic(t, topic, 1, nil)
	admin := newAdmin(t, shared, own)
	ctx := t.Context()
	if err := admin.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	rel := &failingReads{Relief: admin.Relief()}
	guardValue := fmt.Sprintf("0:%d", shared.NodeID)
	operator := "*"
	leaderKey, followerKey := enforcer.LeaderThrottledReplicas, enforcer.FollowerThrottledReplicas
	for _, v := range []enforcer.ThrottleConfigValue{
		{Resource: ledger.ResourceTopic, Name: topic, Key: leaderKey, Value: guardValue, Set: true},
		{Resource: ledger.ResourceTopic, Name: topic, Key: followerKey, Value: guardValue, Set: true},
	} {
		if err := rel.SetThrottleConfig(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	peerClaim := ledger.ReassignClaim{Owner: ledger.ReassignOwner(2), Instance: "agent-2", Partitions: []string{topic + "/0"},
		Entries: []ledger.ThrottleEntry{
			{Resource: ledger.ResourceTopic, Name: topic, Key: leaderKey, Value: guardValue},
			{Resource: ledger.ResourceTopic, Name: topic, Key: followerKey, Value: guardValue, Orig: &operator},
		},
		Since: time.Now(), Renewed: time.Now(), LeaseMs: time.Second.Milliseconds()}
	if err := admin.StoreReassign(ctx, peerClaim); err != nil {
		t.Fatal(err)
	}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: func() uint64 { return 1 << 40 }}
	src.ScanOnce()
	logs := &logBuf{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the reassigner's log:\n%s", logs.buf.String())
		}
	})
	// Only tends its peers' claims (enforcer.relief.reassign off).
	r, err := enforcer.NewReassigner(enforcer.Config{Enabled: true, BrokerID: ptr(shared.NodeID), Interval: time.Second,
		Protection: enforcer.ProtectionConfig{LeaseDuration: 10 * time.Second}},
		slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), prometheus.NewRegistry(),
		enforcer.ReassignerDeps{Snapshots: src, Admin: rel, Store: admin, Evidence: newEvidence(t, []string{shared.SASLAddr}, shared.GuardConfig()),
			Clock: realClock{}, Instance: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(ctx); err != nil { // the peer's claim first seen
		t.Fatal(err)
	}
	time.Sleep(peerClaim.Lease() + 200*time.Millisecond)
	rel.fail.Store(true)
	if err := r.Pass(ctx); err == nil {
		t.Fatal("restore with the config reads failing: want an error")
	}
	recs, err := admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := recs.Reassigns[peerClaim.Owner]; !c.Releasing || c.Instance != "a1" {
		t.Fatalf("the test needs broker 2's claim marked releasing by this agent (a1): %+v", c)
	}
	throttle := func(key string) (string, bool) {
		t.Helper()
		v, set, err := admin.Relief().ThrottleConfig(ctx, ledger.ResourceTopic, topic, key)
		if err != nil {
			t.Fatal(err)
		}
		return v, set
	}
	if v, set := throttle(leaderKey); !set || v != guardValue {
		t.Fatalf("the test needs the guard's %s=%s in place: %q (set %v)", leaderKey, guardValue, v, set)
	}

	// The ownership topic is deleted and created again, empty (as the
	// agent's protection pass does); the reads work again.
	deleteTopicAndWait(t, shared.Admin(t), own)
	if err := newAdmin(t, shared, own).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	rel.fail.Store(false)
	start := time.Now()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		err := r.Pass(ctx)
		lv, lset := throttle(leaderKey)
		fv, fset := throttle(followerKey)
		recs, rerr := admin.LoadRecords(ctx)
		if rerr != nil {
			return rerr
		}
		if lset || !fset || fv != operator || len(recs.Reassigns) != 0 {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("R8.7/after the ledger came back: %s=%q (set %v), %s=%q (set %v), claims %v; want the first removed, the operator's %q back and no claim (pass: %v)",
				leaderKey, lv, lset, followerKey, fv, fset, recs.Reassigns, operator, err)
		}
		return nil
	})
	if !logged2(logs, "a replication throttle claim this agent was restoring is missing from the ownership topic: written again from memory") {
		t.Error("R8.7/no log line says the claim was written again from memory")
	}
	t.Logf("restored %s after the ledger came back", time.Since(start).Round(time.Millisecond))
}

// logged2 reports whether logs hold a line msg.
func logged2(logs *logBuf, msg string) bool { return len(logs.lines(msg)) > 0 }

// R7.3, R8.7 on the 3-node cluster (TestR7_3R8_7PeerWritesThePurgeHistoryIntoAFreshRecord):
// broker 2's agent protects and purges unexpired data up to its caps
// (10% of the log dir a pass, an hour and a day); broker 1's agent reads
// its record. The ownership topic is deleted and broker 2's agent
// restarts: its new process finds no record, creates the topic again and
// writes its first record, Fresh, without the earlier process's purges,
// before the peer's next read. The peer writes the purge history it
// remembers into that record (marked Restored), and the new process,
// past its wait of a lease and a pass, counts the caps as spent: it
// deletes no unexpired record, though its log dir is still in the purge
// band (enforcer_blocked{reason="purge_cap"}).
func TestR7_3R8_7PeerWritesThePurgeHistoryIntoAFreshRecordOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		topic = "fresh-history"
		own   = "__kdg_test_fresh_history"
		lease = 4 * time.Second
	)
	src, at := clusterPurgeData(t, c, 2, topic)
	admin := clusterAdmin(t, c, own)
	t.Cleanup(func() {
		if acls := topicACLs(t, admin, topic); len(acls) > 0 {
			_ = admin.DeleteACLs(context.Background(), acls)
		}
	})
	at(0.95)
	capacity := src.ScanOnce().LogDirs[0].Usage.CapacityBytes
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 10, MaxPercentPerHour: 10, MaxPercentPerDay: 10, OtherBytesPercent: 100}
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: time.Second, Purge: caps,
		Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	old := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	peer := nodeAgent(t, c, 1, enforcer.Config{Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}, own, &fixedCapacity{v: 1 << 40}, topic)
	scanSrc(peer)
	ctx := t.Context()
	// The first process waits a lease and a pass (no record of its own at
	// start), then purges up to its caps.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, old)
		if metric(old.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("no unexpired data purged yet (blocked %v)", blockedReasons(t, old))
		}
		return nil
	})
	purged := metric(old.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
	recs, err := admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := recs.Agents[2]
	if len(first.Purged) == 0 || !slices.Contains(first.ACLTopics(), topic) {
		t.Fatalf("the test needs broker 2's record with its claim and purges: %+v", first)
	}
	pass(t, peer) // it reads broker 2's record

	// Killed; the topic deleted. The log dir stays in the purge band even
	// with the purged segments counted as freed (on disk until the
	// broker's next retention check, minutes away: 10% at most of the
	// capacity, under 89% left).
	deleteTopicAndWait(t, c.Admin(t), own)
	at(0.99)
	// Its binding was lifted meanwhile (as a peer does a lease after the
	// agent died): the new process claims its own, and the peer has no
	// claim to write into its record, only the purge history.
	if err := admin.DeleteACLs(ctx, topicACLs(t, admin, topic)); err != nil {
		t.Fatal(err)
	}
	// Its interval is half the lease (the longest allowed): its reads
	// come an interval apart, so its Fresh record is read again before it
	// is written (TestR8_7FreshRecordKeepsThePeersWriteBackWithinAnInterval).
	backCfg := cfg
	backCfg.Interval = lease / 2
	back := newGuard(t, c.Node(2), guardSpec{cfg: backCfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	mid := offsets(t, admin, topic, 2)
	started := time.Now()
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
	if !fresh.Fresh || len(fresh.Purged) != 0 || fresh.Restored || !slices.Contains(fresh.ACLTopics(), topic) {
		t.Fatalf("the test needs the new process's record Fresh, with its claim, without purges: %+v", fresh)
	}
	// The peer's next read writes the history into the record (the test
	// goes on without it, to show what the new process then purges).
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		pass(t, peer)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := recs.Agents[2]
		if ledger.SamePurges(r.Purged, first.Purged) && r.Restored {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("R7.3/the peer did not write the purge history it remembers into broker 2's Fresh record: purged %v, restored %v", r.Purged, r.Restored)
			break
		}
	}
	// Past the new process's wait (a lease and a pass), and a pass more.
	wait := lease + backCfg.Interval
	until := started.Add(wait + backCfg.Interval + time.Second)
	if u := time.Now().Add(backCfg.Interval + time.Second); u.After(until) {
		until = u
	}
	for time.Now().Before(until) {
		pass(t, back)
		pass(t, peer)
		time.Sleep(200 * time.Millisecond)
	}
	if v := metric(back.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/the new process purged %v unexpired bytes (%v before the restart, the caps 10%% a day), want 0: its history came from a peer's copy", v, purged)
	}
	after := offsets(t, admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R7.3/partition %d's log start moved from %d to %d after the restart", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if v := metric(back.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_cap} %v, want 1 (blocked %v)", v, blockedReasons(t, back))
	}
	t.Logf("capacity %d (caps 10%%: %d bytes); first process purged %v unexpired bytes; the new one, %s past its start (wait %s): log start offsets %v -> %v, blocked %v",
		capacity, capacity/10, purged, time.Since(started).Round(time.Millisecond), wait, mid, after, blockedReasons(t, back))
}

// skewClock is a host's wall clock moved by an offset, with the system's
// monotonic clock (a wall clock set back leaves the monotonic one alone).
type skewClock struct {
	mu    sync.Mutex
	off   time.Duration
	start time.Time
}

func (c *skewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Round(0).Add(c.off)
}

func (c *skewClock) Elapsed() time.Duration { return time.Since(c.start) }

func (c *skewClock) move(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// R8.7 on the 3-node cluster (TestR8_7OwnMemoryWinsOverACopyAfterTheClockWentBack):
// broker 2's agent protects topic a; broker 1's agent reads its record.
// Broker 2's wall clock goes back 10 minutes, topic b fills too, and the
// agent claims it. The ownership topic is deleted; the peer creates it
// again and writes back its copy of broker 2's record, which claims a
// only and names a later time than the agent's last write. The agent's
// own memory wins: its record claims a and b again, and on calm both
// bindings go and producers write to both topics.
func TestR8_7OwnMemoryWinsOverACopyAfterTheClockWentBackOnACluster(t *testing.T) {
	c := sharedCluster(t)
	const (
		a   = "clock-back-a"
		b   = "clock-back-b"
		own = "__kdg_test_clock_back"
	)
	admin := clusterAdmin(t, c, own)
	for _, tp := range []string{a, b} {
		c.CreateTopicAssigned(t, tp, [][]int32{{2}}, nil)
		superProduce(t, c, tp, 20)
		operatorACLs(t, admin, allowACL(tp, anonymousPrincipal, enforcer.OpWrite))
		t.Cleanup(func() {
			if acls := topicACLs(t, admin, tp); len(acls) > 0 {
				_ = admin.DeleteACLs(context.Background(), acls)
			}
		})
	}
	fullA, _ := capacities(t, c.Node(2).LogDir, a)
	fullAB, calmAB := capacities(t, c.Node(2).LogDir, a, b)
	clock := &skewClock{start: time.Now()}
	capacity := &fixedCapacity{v: fullA}
	src := &scantest.Source{LogDir: c.Node(2).LogDir, Topics: map[string]bool{a: true}, Capacity: capacity.get, Now: clock.Now}
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: 200 * time.Millisecond,
		Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	agent := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, clock: clock, ownTopic: own, addrs: c.SASLAddrs()})
	peer := nodeAgent(t, c, 1, enforcer.Config{Protection: cfg.Protection}, own, &fixedCapacity{v: 1 << 40}, a, b)
	ctx := t.Context()
	denied := func(tp string) bool {
		return hasACL(topicACLs(t, admin, tp), enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny)
	}
	claims := func() []string {
		t.Helper()
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs.Agents[2].ACLTopics()
	}
	src.ScanOnce()
	scanSrc(peer)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, agent)
		if !denied(a) || !slices.Contains(claims(), a) {
			return errors.New("broker 2's agent not protecting a yet")
		}
		return nil
	})
	pass(t, peer) // it reads broker 2's record: a claimed

	// The wall clock goes back; b fills too.
	clock.move(-10 * time.Minute)
	src.Topics[b] = true
	capacity.set(fullAB)
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, agent)
		if got := claims(); !denied(b) || len(got) != 2 {
			time.Sleep(100 * time.Millisecond)
			return fmt.Errorf("broker 2's agent not claiming a and b yet: %v", got)
		}
		return nil
	})
	if err := func() error { cfg, addrs := anonymous(c); return produceAs(cfg, addrs, b) }(); !refused(err) {
		t.Fatalf("the test needs producers refused on b: %v", err)
	}

	// The topic is deleted; the peer creates it again and writes back its
	// copy (claiming a only).
	deleteTopicAndWait(t, c.Admin(t), own)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, peer)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return err
		}
		if r, ok := recs.Agents[2]; !ok || !r.Restored {
			time.Sleep(100 * time.Millisecond)
			return fmt.Errorf("the peer has not written broker 2's record back: %+v", r)
		}
		return nil
	})
	if got := claims(); !slices.Equal(got, []string{a}) {
		t.Fatalf("the test needs the peer's copy claiming a only: %v", got)
	}
	for range 3 {
		time.Sleep(cfg.Interval)
		pass(t, agent)
		pass(t, peer)
	}
	if got := claims(); len(got) != 2 {
		t.Errorf("R8.7/broker 2's record claims %v after the copy, want a and b (its own memory)", got)
	}

	// Calm: every binding goes, producers write to both topics.
	capacity.set(calmAB)
	src.ScanOnce()
	kafkatest.Eventually(t, 20*time.Second, func() error {
		pass(t, agent)
		pass(t, peer)
		for _, tp := range []string{a, b} {
			if denied(tp) {
				time.Sleep(100 * time.Millisecond)
				return fmt.Errorf("R8.7/bindings left on %s after calm: %v (broker 2's record claims %v)", tp, topicACLs(t, admin, tp), claims())
			}
		}
		return nil
	})
	for _, tp := range []string{a, b} {
		kafkatest.Eventually(t, 10*time.Second, func() error { cfg, addrs := anonymous(c); return produceAs(cfg, addrs, tp) })
	}
}
