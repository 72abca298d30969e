//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Four more rules of the protection ledger on real brokers, each found by
// the simulation (seeds 1208, 2555, 2938 and 3895 of the default mix) and
// unit-tested with fakes first: an instance taking over from a record the
// ownership topic lost counts the caps spent, so does a process with no
// record after a loss no peer remembered its record through, a peer
// writes back a later copy of a record over an older one, and a released
// local-retention claim never hands the key back to a value a claim on
// another original sets. The loss is the ownership topic deleted on the
// broker; each test drives its agents' passes itself (Reconcile).

const spentLine = "purge caps counted as spent for a day: this agent's purge history is unknown (no evidence, no action); unexpired data is not purged until the day's window frees, expired data is deleted as before"

// purgedBytes sums a record's purge history.
func purgedBytes(r enforcer.Record) int64 {
	var n int64
	for _, b := range r.Purged {
		n += b.Bytes
	}
	return n
}

// R7.3, R8.8 on a real broker (TestR7_3R8_8StandbyTakingOverFromALostRecordCountsTheCapsSpent):
// pod-a purges unexpired data within its caps (10% of the log dir a pass,
// an hour and a day); pod-b, a second instance for the broker, reads
// pod-a's record and stands by. pod-a dies; the ownership topic is deleted
// and created again, empty, before pod-b's next read, which comes after
// pod-a's lease: pod-b takes over from a record the topic lost. It counts
// the record it remembers as written back: pod-a's purges restored, the
// caps spent. It deletes no unexpired record though its log dir is in the
// purge band (enforcer_blocked{reason="purge_cap"}), and its record in the
// topic carries pod-a's purges. Read as no record at all (a single broker:
// no peer could write one back), it purged as a fresh install.
func TestR7_3R8_8StandbyTakingOverFromALostRecordCountsTheCapsSpentOnARealBroker(t *testing.T) {
	const (
		topic = "standby-takeover"
		own   = "__kdg_test_standby_takeover"
		lease = 3 * time.Second
	)
	src, at := purgeData(t, topic)
	at(0.8995) // the top of the purge band, under the protect band
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 10, MaxPercentPerHour: 10, MaxPercentPerDay: 10}
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: caps, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	ctx := t.Context()
	pass(t, a)
	recs, err := a.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := recs.Agents[shared.NodeID]
	if metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 || first.Instance != "pod-a" || purgedBytes(first) == 0 {
		t.Fatalf("the test needs pod-a purging and recording it: purged %v, record %+v",
			metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil), first)
	}
	pass(t, b)
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Fatalf("the test needs pod-b standing by beside pod-a's lease: protection_standby %v", v)
	}
	standingBy := time.Now()

	// pod-a dies. The purged segments leave the disk, and the log dir is
	// back at the top of the purge band (more unexpired data to purge).
	waitPurgedGone(t, src, a, topic, 2)
	at(0.8995)
	// The ownership topic is deleted and created again, empty, before
	// pod-b's next read.
	deleteTopicAndWait(t, shared.Admin(t), own)
	kafkatest.Eventually(t, 30*time.Second, func() error { return newAdmin(t, shared, own).Prepare(ctx) })
	if recs, err := a.admin.LoadRecords(ctx); err != nil || len(recs.Agents) != 0 {
		t.Fatalf("the test needs the ownership topic created again, empty: %v %v", recs.Agents, err)
	}
	time.Sleep(time.Until(standingBy.Add(lease + 200*time.Millisecond)))
	mid := offsets(t, a.admin, topic, 2)
	for i := range 3 {
		if i > 0 {
			time.Sleep(cfg.Interval)
		}
		pass(t, b)
	}
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Fatalf("the test needs pod-b taking over after pod-a's lease: protection_standby %v", v)
	}
	if v := metric(b.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/pod-b purged %v unexpired bytes taking over from a record the topic lost (pod-a purged %d, the caps 10%%), want 0", v, purgedBytes(first))
	}
	after := offsets(t, a.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R7.3/partition %d's log start moved from %d to %d after pod-b took over", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if v := metric(b.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_cap} %v, want 1 (blocked %v)", v, blockedReasons(t, b))
	}
	if !logged(b, spentLine, "reason", "written back by a peer") {
		t.Error("R7.3/no log line says pod-b counts the caps spent from the record it remembers")
	}
	recs, err = a.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[shared.NodeID]; r.Instance != "pod-b" || purgedBytes(r) < purgedBytes(first) {
		t.Errorf("R7.3/broker %d's record after pod-b took over: instance %q, purged %d bytes; want pod-b's, with at least pod-a's %d",
			shared.NodeID, r.Instance, purgedBytes(r), purgedBytes(first))
	}
	t.Logf("pod-a purged %d bytes; pod-b, taking over: log start offsets %v -> %v, blocked %v", purgedBytes(first), mid, after, blockedReasons(t, b))
}

// R7.3, R8.7 on the 3-node cluster (TestR7_3NoRecordAfterALossNoPeerRememberedCountsTheCapsSpent):
// broker 2's agent purges unexpired data within its caps and records it.
// The ownership topic is deleted and created again with Kafka's defaults
// (cleanup.policy=delete: the ledger lost, for the operator to repair);
// broker 1's agent starts meanwhile, so it never reads broker 2's record,
// and finds the ledger lost. Broker 2's agent dies; the operator deletes
// the topic, broker 1's agent creates it again and writes its record,
// which says the topic was lost (ledger_lost). Broker 2's agent restarts:
// no record of its own, none written back within its wait of a lease and
// a pass (no live process remembers it), but a record says the topic was
// lost within the day: it counts the caps spent and purges nothing,
// though its log dir is in the purge band.
func TestR7_3NoRecordAfterALossNoPeerRememberedCountsTheCapsSpentOnACluster(t *testing.T) {
	c := sharedCluster(t)
	begin := time.Now()
	const (
		topic = "lost-unremembered"
		own   = "__kdg_test_lost_unremembered"
		lease = 3 * time.Second
	)
	src, at := clusterPurgeData(t, c, 2, topic)
	admin := clusterAdmin(t, c, own)
	t.Cleanup(func() {
		if acls := topicACLs(t, admin, topic); len(acls) > 0 {
			_ = admin.DeleteACLs(context.Background(), acls)
		}
	})
	at(0.8995)
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 10, MaxPercentPerHour: 10, MaxPercentPerDay: 10, OtherBytesPercent: 100}
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: time.Second, Purge: caps,
		Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	old := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	ctx := t.Context()
	// It waits a lease and a pass (no record of its own at start), then
	// purges up to its caps.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, old)
		if metric(old.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("no unexpired data purged yet (blocked %v)", blockedReasons(t, old))
		}
		return nil
	})
	recs, err := admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := recs.Agents[2]
	if purgedBytes(first) == 0 {
		t.Fatalf("the test needs broker 2's record with its purges: %+v", first)
	}

	// Deleted, and created again in the wrong shape: lost. Broker 1's
	// agent starts and finds it so.
	ca := c.Admin(t)
	deleteTopicAndWait(t, ca, own)
	policy := "delete"
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return ca.CreateTopic(own, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 3,
			ConfigEntries: map[string]*string{"cleanup.policy": &policy}}, false)
	})
	peer := nodeAgent(t, c, 1, enforcer.Config{Interval: time.Second, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}},
		own, &fixedCapacity{v: 1 << 40}, topic)
	scanSrc(peer)
	pass(t, peer)
	if v := metric(peer.reg, "kafka_disk_guard_protection_ledger_lost", nil); v != 1 {
		t.Fatalf("the test needs the ledger lost for broker 1's agent: protection_ledger_lost %v", v)
	}
	// Broker 2's agent is dead. The operator deletes the topic; broker 1's
	// agent creates it again and writes its record.
	deleteTopicAndWait(t, ca, own)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, peer)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			return err
		}
		if r, ok := recs.Agents[1]; !ok || r.LedgerLost.IsZero() {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("R7.3/broker 1's record does not say the topic was lost: %+v", r)
		}
		return nil
	})

	// Broker 2's agent restarts; its log dir is in the purge band, with
	// the earlier purge counted as on its way out.
	at(0.99)
	back := newGuard(t, c.Node(2), guardSpec{cfg: cfg, src: src, ownTopic: own, addrs: c.SASLAddrs()})
	mid := offsets(t, admin, topic, 2)
	started := time.Now()
	wait := lease + cfg.Interval
	for time.Since(started) < wait+3*cfg.Interval {
		pass(t, back)
		pass(t, peer)
		time.Sleep(200 * time.Millisecond)
	}
	if v := metric(back.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 0 {
		t.Fatalf("the test needs the new process past its wait of a lease and a pass (%s): blocked %v", wait, blockedReasons(t, back))
	}
	if v := metric(back.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/the new process purged %v unexpired bytes as a fresh install (%d before the loss, the caps 10%% a day), want 0: a record says the topic was lost within the day",
			v, purgedBytes(first))
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
	if !logged(back, spentLine, "reason", "lost within the day") {
		t.Error("R7.3/no log line says the caps count as spent because the topic was lost within the day")
	}
	recs, err = admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[2]; r.LedgerLost.IsZero() || r.Restored {
		t.Errorf("R7.3/broker 2's new record: ledger_lost %v, restored %v; want its own, saying the topic was lost", r.LedgerLost, r.Restored)
	}
	t.Logf("purged %d bytes before the loss; the new process, %s past its start (wait %s): log start offsets %v -> %v, blocked %v; %s with the cluster up",
		purgedBytes(first), time.Since(started).Round(time.Millisecond), wait, mid, after, blockedReasons(t, back), time.Since(begin).Round(100*time.Millisecond))
}

// R8.7 on the 3-node cluster (TestR8_7PeerWritesBackALaterCopyOverAnOlderOne):
// broker 2's agent protects topic a; broker 1's agent reads its record.
// Topic b fills too and broker 2's agent claims it; broker 3's agent reads
// that later write. Broker 2's agent dies and the ownership topic is
// deleted; broker 1's agent creates it again and writes back its copy of
// broker 2's record (claiming a only). Broker 3's agent finds that copy of
// an earlier write of the process whose later write it read (the records'
// seq) and writes its own back: the claim on b is in the record again,
// and a lease later both bindings are lifted and producers write to both
// topics. Taken for the record, the older copy left b's binding for good.
func TestR8_7PeerWritesBackALaterCopyOverAnOlderOneOnACluster(t *testing.T) {
	c := sharedCluster(t)
	begin := time.Now()
	const (
		a     = "later-copy-a"
		b     = "later-copy-b"
		own   = "__kdg_test_later_copy"
		lease = 6 * time.Second // broker 3's pass must follow broker 1's write-back within it: room under -race on a loaded CI machine
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
	fullAB, _ := capacities(t, c.Node(2).LogDir, a, b)
	capacity := &fixedCapacity{v: fullA}
	cfg := enforcer.Config{Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	two := nodeAgent(t, c, 2, cfg, own, capacity, a)
	peer1 := nodeAgent(t, c, 1, cfg, own, &fixedCapacity{v: 1 << 40}, a, b)
	peer3 := nodeAgent(t, c, 3, cfg, own, &fixedCapacity{v: 1 << 40}, a, b)
	ctx := t.Context()
	denied := func(tp string) bool {
		return hasACL(topicACLs(t, admin, tp), enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny)
	}
	record := func() enforcer.Record {
		t.Helper()
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs.Agents[2]
	}
	scanSrc(two)
	scanSrc(peer1)
	scanSrc(peer3)
	started := time.Now()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, two)
		if !denied(a) || !slices.Contains(record().ACLTopics(), a) {
			time.Sleep(100 * time.Millisecond)
			return errors.New("broker 2's agent not protecting a yet")
		}
		return nil
	})
	// Past a lease of its start, its records are no longer Fresh.
	for time.Since(started) < lease+200*time.Millisecond {
		pass(t, two)
		time.Sleep(200 * time.Millisecond)
	}
	pass(t, two)
	pass(t, peer1) // reads the claim on a
	older := record()

	// b fills too; broker 3's agent reads the later write.
	two.src.(*scantest.Source).Topics[b] = true
	capacity.set(fullAB)
	scanSrc(two)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, two)
		if got := record().ACLTopics(); !denied(b) || len(got) != 2 {
			time.Sleep(100 * time.Millisecond)
			return fmt.Errorf("broker 2's agent not claiming a and b yet: %v", got)
		}
		return nil
	})
	pass(t, peer3)
	later := record()
	if later.Fresh || !ledger.LaterWrite(later, older) {
		t.Fatalf("the test needs broker 2's records of one process, not Fresh, the second a later write: seq %d then %d (fresh %v)", older.Seq, later.Seq, later.Fresh)
	}

	// Broker 2's agent dies; the topic is deleted. Broker 1's agent
	// creates it again and writes back its copy.
	deleteTopicAndWait(t, c.Admin(t), own)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, peer1)
		recs, err := admin.LoadRecords(ctx)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return err
		}
		if r, ok := recs.Agents[2]; !ok || !r.Restored {
			time.Sleep(100 * time.Millisecond)
			return fmt.Errorf("broker 1's agent has not written broker 2's record back: %+v", r)
		}
		return nil
	})
	if r := record(); !slices.Equal(r.ACLTopics(), []string{a}) || r.Seq != older.Seq {
		t.Fatalf("the test needs broker 1's older copy written back (claims %v, seq %d): claims %v, seq %d", []string{a}, older.Seq, r.ACLTopics(), r.Seq)
	}
	pass(t, peer3)
	if r := record(); !slices.Equal(r.ACLTopics(), []string{a, b}) || r.Seq != later.Seq || !r.Restored {
		t.Errorf("R8.7/broker 2's record after broker 3's agent read the older copy: claims %v, seq %d, restored %v; want broker 3's later copy (claims %v, seq %d) written back",
			r.ACLTopics(), r.Seq, r.Restored, []string{a, b}, later.Seq)
	}
	if !logged2(peer3.logs, "a peer wrote back an older copy of another agent's record: the later one this agent read written back") {
		t.Error("R8.7/no log line says broker 3's agent wrote its later copy back")
	}

	// A lease later, both bindings go, and producers write to both.
	back := time.Now()
	kafkatest.Eventually(t, lease+20*time.Second, func() error {
		pass(t, peer1)
		pass(t, peer3)
		for _, tp := range []string{a, b} {
			if denied(tp) {
				time.Sleep(100 * time.Millisecond)
				return fmt.Errorf("R8.7/broker 2's binding on %s left %s after the ledger came back (lease %s; its record claims %v)",
					tp, time.Since(back).Round(time.Millisecond), lease, record().ACLTopics())
			}
		}
		return nil
	})
	for _, tp := range []string{a, b} {
		kafkatest.Eventually(t, 10*time.Second, func() error { cfg, addrs := anonymous(c); return produceAs(cfg, addrs, tp) })
	}
	t.Logf("seq %d (a) and %d (a, b); both bindings lifted %s after the ledger came back; %s with the cluster up",
		older.Seq, later.Seq, time.Since(back).Round(time.Millisecond), time.Since(begin).Round(100*time.Millisecond))
}

// R8.5, R7.4 on the tiered broker (TestR8_5HandBackNeverToAValueOfAnotherOriginal):
// this agent lowered a topic's local.retention.bytes (from the operator's
// 200 MiB). Broker 2's record claims the key at the next number up on the
// same original; broker 3's, a stale claim made before the operator's
// value, sets that same number on "not set". The disk calms: this agent
// gives its claim up, and the key is held elsewhere, but handing it back
// to broker 2's number would put in place a value that names two
// originals (broker 3's release would delete the override): its claim
// stays, releasing, its own value in place. Once broker 3's stale claim
// goes, it hands the key back to broker 2's value and leaves its record.
func TestR8_5HandBackNeverToAValueOfAnotherOriginalOnTheTieredBroker(t *testing.T) {
	b := sharedTiered(t)
	begin := time.Now()
	const (
		topic = "thandback"
		own   = "__kdg_test_handback"
	)
	src := uploadedTieredTopic(t, b, topic)(0.87)
	cfg := enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: 5 * time.Minute}}
	g := newGuard(t, b, guardSpec{cfg: cfg, src: src, ownTopic: own})
	ctx := t.Context()
	step := func() {
		src.ScanOnce()
		pass(t, g)
	}
	records := func() ledger.Records {
		t.Helper()
		recs, err := g.admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		step()
		if v := localRetentionOf(t, g.admin, topic); v == nil || *v == operatorLocalRetention {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("local.retention.bytes %s", showValue(v))
		}
		return nil
	})
	lowered := *localRetentionOf(t, g.admin, topic)
	id := b.NodeID
	if cs := records().Agents[id].ConfigClaims(); len(cs) != 1 || cs[0].Value != lowered || showValue(cs[0].Orig) != operatorLocalRetention {
		t.Fatalf("the test needs the agent's claim on %s=%s, made on the operator's %s: %+v", enforcer.LocalRetentionBytesKey, lowered, operatorLocalRetention, cs)
	}
	n, err := strconv.ParseInt(lowered, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	next := strconv.FormatInt(n+1, 10)
	operator := operatorLocalRetention
	claim := func(orig *string) enforcer.ConfigClaim {
		return enforcer.ConfigClaim{Topic: topic, Key: enforcer.LocalRetentionBytesKey, Value: next, Orig: orig}
	}
	peer := func(broker int32, cs ...enforcer.ConfigClaim) enforcer.Record {
		return enforcer.Record{BrokerID: broker, Instance: fmt.Sprintf("broker-%d", broker), Renewed: time.Now(),
			LeaseMs: (5 * time.Minute).Milliseconds(), Updated: time.Now(), Configs: cs}
	}
	for _, r := range []enforcer.Record{peer(2, claim(&operator)), peer(3, claim(nil))} {
		if err := g.admin.StoreRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	// Calm: the agent gives its claim up; it stays, releasing, and so does
	// its value.
	src.Capacity = func() uint64 { return uint64(float64(dirBytes(filepath.Join(b.LogDir, topic+"-0"))) / 0.5) }
	kafkatest.Eventually(t, 30*time.Second, func() error {
		step()
		if v := localRetentionOf(t, g.admin, topic); v == nil || *v != lowered {
			t.Fatalf("R8.5/the agent handed %s of %s back to %s, a value broker 3's claim made on \"not set\" also sets (its own %s)",
				enforcer.LocalRetentionBytesKey, topic, showValue(v), lowered)
		}
		if len(records().Agents[id].ReleasingConfigs()) != 1 {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("the agent's claim not releasing yet: %+v", records().Agents[id].Configs)
		}
		return nil
	})
	for range 4 {
		step()
		time.Sleep(cfg.Interval)
	}
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != lowered {
		t.Fatalf("R8.5/the agent handed %s of %s back to %s, a value broker 3's claim made on \"not set\" also sets (its own %s)",
			enforcer.LocalRetentionBytesKey, topic, showValue(v), lowered)
	}
	if cs := records().Agents[id].ReleasingConfigs(); len(cs) != 1 || cs[0].Value != lowered {
		t.Errorf("R8.5/the agent's record: %+v; want its claim on %s kept, releasing, while its value is in place", records().Agents[id].Configs, lowered)
	}

	// Broker 3's stale claim goes: the key is handed back to broker 2's
	// value, and the agent's claim leaves its record.
	if err := g.admin.StoreRecord(ctx, peer(3)); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		step()
		v := localRetentionOf(t, g.admin, topic)
		cs := records().Agents[id].Configs
		if v == nil || *v != next || len(cs) != 0 {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("R8.5/with broker 3's stale claim gone: %s=%s, the agent's claims %+v; want broker 2's %s handed back, no claim",
				enforcer.LocalRetentionBytesKey, showValue(v), cs, next)
		}
		return nil
	})
	t.Logf("lowered to %s; kept over broker 2's %s while broker 3's stale claim set it, handed back once it went; %s with the broker up",
		lowered, next, time.Since(begin).Round(100*time.Millisecond))
}
