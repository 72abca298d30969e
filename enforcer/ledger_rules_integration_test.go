//go:build integration

package enforcer_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Three rules of the protection ledger on the shared broker, each found
// by the simulation and unit-tested with fakes first: the read before an
// instance's first record write, no adoption on records as last read,
// and the caps counted spent when the purge history is unknown. Each test
// drives its agents' passes itself (Reconcile), a few seconds each.

// purgeData creates topic with 2 partitions of small segments (about
// 360 kB) on the shared broker and returns its snapshot source, whose
// capacity at moves the topic's usage to a fraction of the log dir (each
// call rescans, so it follows what was purged).
func purgeData(t *testing.T, topic string) (src *scantest.Source, at func(usage float64)) {
	t.Helper()
	shared.CreateTopic(t, topic, 2, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 2, rounds: 6, records: 30, size: 1000})
	capacity := &fixedCapacity{v: 1 << 40}
	src = &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	return src, func(usage float64) {
		capacity.set(1 << 40)
		capacity.set(uint64(float64(usedBytes(src)) / usage))
		src.ScanOnce()
	}
}

// waitPurgedGone waits until the broker removed the segments a purge put
// wholly below the log start offset, and their files: while on disk, a
// pass counts them as bytes on their way out (or, renamed .deleted, as
// data that is not Kafka's), which free what it would purge.
func waitPurgedGone(t *testing.T, src *scantest.Source, g *guard, topic string, parts int32) {
	t.Helper()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if files, _ := filepath.Glob(filepath.Join(shared.LogDir, topic+"-*", "*.deleted")); len(files) > 0 {
			return fmt.Errorf("files of purged segments still on disk: %v", files)
		}
		lso := offsets(t, g.admin, topic, parts)
		for _, p := range src.ScanOnce().LogDirs[0].Partitions {
			if p.Topic != topic {
				continue
			}
			for j := 0; j+1 < len(p.Segments); j++ {
				if p.Segments[j+1].BaseOffset <= lso[p.Partition].LogStart {
					return fmt.Errorf("%s-%d: the segment at %d is below the log start offset %d", topic, p.Partition, p.Segments[j].BaseOffset, lso[p.Partition].LogStart)
				}
			}
		}
		return nil
	})
}

// blockedReasons lists the reasons enforcer_blocked is 1 for.
func blockedReasons(t *testing.T, g *guard) []string {
	t.Helper()
	mfs, err := g.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "kafka_disk_guard_enforcer_blocked" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "reason" && m.GetGauge().GetValue() == 1 {
					out = append(out, lp.GetValue())
				}
			}
		}
	}
	return out
}

// pass runs one of g's passes; a pass's error is logged (a fenced write
// is one).
func pass(t *testing.T, g *guard) {
	t.Helper()
	if err := g.e.Reconcile(t.Context()); err != nil {
		t.Logf("pass: %v", err)
	}
}

// dropTopicACLs removes every binding on topic when the test ends (what a
// guard the test stopped left).
func dropTopicACLs(t *testing.T, g *guard, topic string) {
	t.Cleanup(func() {
		if acls := topicACLs(t, g.admin, topic); len(acls) > 0 {
			_ = g.admin.DeleteACLs(context.Background(), acls)
		}
	})
}

// R8.8, R7.3 on a real broker (TestR8_8InstanceWithoutLeaseReadsBeforeItsFirstWrite):
// a second instance for the broker, whose pass switches protection on
// from the records it read while calm (R8.4: that pass does not read
// them), reads the ledger before its first record write. The first
// instance took the lease meanwhile, protected and purged: its record,
// with its purges, is not written over, and the second stands by,
// changing and purging nothing (found by the simulation, duplicate_agent,
// seed 718).
func TestR8_8SecondInstanceSwitchingOnReadsTheLedgerBeforeItsFirstWrite(t *testing.T) {
	const (
		topic = "fence-first-write"
		own   = "__kdg_test_fence_first_write"
	)
	src, at := purgeData(t, topic)
	at(0.5)
	cfg := enforcer.Config{Enabled: true, Interval: 10 * time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	dropTopicACLs(t, a, topic)
	// Both read the ledger while calm: no record, no lease.
	pass(t, a)
	pass(t, b)

	// pod-a protects and purges (pod-b makes no pass).
	at(0.95)
	pass(t, a)
	recs, err := a.admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ra := recs.Agents[shared.NodeID]
	if ra.Instance != "pod-a" || len(ra.Purged) == 0 || !ra.Claims() || metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
		t.Fatalf("the test needs pod-a's record with its claims and purges: instance %q claims %v purged %v", ra.Instance, ra.Claims(), ra.Purged)
	}
	acls := topicACLs(t, a.admin, topic)
	mid := offsets(t, a.admin, topic, 2)

	// pod-b's pass: its log dir switches protection on, on the records
	// it read while calm; more unexpired data to purge.
	waitPurgedGone(t, src, a, topic, 2)
	at(0.95)
	pass(t, b)
	recs, err = a.admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[shared.NodeID]; r.Instance != "pod-a" || !slices.Equal(r.Purged, ra.Purged) || !r.Renewed.Equal(ra.Renewed) {
		t.Errorf("R8.8/pod-b wrote over pod-a's record (lease live, purges recorded) without reading it: instance %q purged %v, want pod-a's %v",
			r.Instance, r.Purged, ra.Purged)
	}
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-b's protection_standby %v, want 1 once it read pod-a's lease", v)
	}
	if v := metric(b.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R8.8/pod-b purged %v unexpired bytes while pod-a held the lease", v)
	}
	after := offsets(t, a.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R7.3/partition %d's log start moved from %d to %d in pod-b's pass", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if got := topicACLs(t, a.admin, topic); len(got) != len(acls) {
		t.Errorf("R8.8/pod-b changed the bindings standing by: %v, were %v", got, acls)
	}
	t.Logf("pod-a's record: %d purge buckets; log start offsets %v after pod-a, %v after pod-b", len(ra.Purged), mid, after)
}

// R8.6 on a real broker (TestR8_6StaleRecordsAdoptNoOperatorBinding): a
// pass switching protection on plans on the records as last read (R8.4).
// Another agent's record claimed DENY WRITE User:* on a topic at that
// read; it released the claim since, and an operator froze the topic with
// the identical binding. The binding is not claimed on the stale record,
// and it survives the calm; the guard's own binding on the other topic
// comes and goes (found by the simulation, default mix, seed 161).
func TestR8_6StaleRecordsAdoptNoOperatorBindingOnARealBroker(t *testing.T) {
	const (
		frozen  = "stale-frozen"
		guarded = "stale-guarded"
		own     = "__kdg_test_stale_records"
	)
	for _, tp := range []string{frozen, guarded} {
		shared.CreateTopic(t, tp, 1, nil)
		shared.Produce(t, tp, 0, 20, 1000)
	}
	capacity := &fixedCapacity{v: 1 << 40}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{frozen: true, guarded: true}, Capacity: capacity.get}
	used := usedBytes(src)
	capacity.set(uint64(float64(used) / 0.5))
	src.ScanOnce()
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	g := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own})
	dropTopicACLs(t, g, guarded)
	ctx := t.Context()
	// The topic has an operator's binding: its shape is DENY WRITE User:*.
	alice := allowACL(frozen, "User:alice", enforcer.OpRead)
	operatorACLs(t, g.admin, alice)
	// Broker 2's agent protects the topic (its record and its binding).
	const peer = 2
	deny := denyWrite(frozen, enforcer.AnyPrincipal)
	claim := enforcer.Record{BrokerID: peer, Instance: "agent-2", Strategy: enforcer.StrategyACL, LogDirs: []string{"/var/lib/kafka/data"},
		Owned:   []enforcer.Owned{{Kind: enforcer.OwnedACL, Shape: &enforcer.Shape{Deny: []string{enforcer.AnyPrincipal}}, Topics: []string{frozen}}},
		Renewed: time.Now(), Since: time.Now(), Updated: time.Now(), LeaseMs: time.Minute.Milliseconds()}
	kafkatest.Eventually(t, 30*time.Second, func() error { return g.admin.StoreRecord(ctx, claim) })
	if err := g.admin.CreateACLs(ctx, []enforcer.ACL{deny}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.admin.DeleteACLs(context.Background(), []enforcer.ACL{deny}) })
	pass(t, g) // calm: reads the records, broker 2 claims the topic
	if v := metric(g.reg, "kafka_disk_guard_cluster_protected_topics", map[string]string{"broker_id": "2"}); v != 1 {
		t.Fatalf("the test needs the agent to have read broker 2's claim: cluster_protected_topics{broker_id=2} %v", v)
	}

	// Broker 2 releases its claim (record first, then the binding); the
	// operator then freezes the topic with the identical binding.
	released := enforcer.Record{BrokerID: peer, Instance: "agent-2", Strategy: enforcer.StrategyACL, Updated: time.Now()}
	if err := g.admin.StoreRecord(ctx, released); err != nil {
		t.Fatal(err)
	}
	if err := g.admin.DeleteACLs(ctx, []enforcer.ACL{deny}); err != nil {
		t.Fatal(err)
	}
	if err := g.admin.CreateACLs(ctx, []enforcer.ACL{deny}); err != nil {
		t.Fatal(err)
	}

	// The agent's log dir switches protection on, on the cached records.
	capacity.set(uint64(float64(used) / 0.95))
	src.ScanOnce()
	passErr := g.e.Reconcile(ctx)
	// A binding created through the controller reaches the broker's
	// authorizer (what DescribeAcls answers from) when the broker applies
	// the metadata record: a moment later under load.
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if len(topicACLs(t, g.admin, guarded)) == 0 {
			return fmt.Errorf("the guarded topic is not protected (pass: %v; protection wanted %v, active %v, errors %v, standby %v, ledger lost %v)",
				passErr, metric(g.reg, "kafka_disk_guard_write_protection_wanted", nil),
				metric(g.reg, "kafka_disk_guard_write_protection_active", nil),
				metric(g.reg, "kafka_disk_guard_write_protection_error", nil),
				metric(g.reg, "kafka_disk_guard_protection_standby", nil),
				metric(g.reg, "kafka_disk_guard_protection_ledger_lost", nil))
		}
		return nil
	})
	recs, err := g.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine := recs.Agents[shared.NodeID].ACLTopics()
	if slices.Contains(mine, frozen) {
		t.Errorf("R8.6/the operator's binding on %s is claimed on stale records: %v", frozen, mine)
	}
	if !slices.Contains(mine, guarded) {
		t.Errorf("the agent's record does not claim its own protection of %s: %v", guarded, mine)
	}

	// Calm: the guard's own binding goes, the operator's stays.
	capacity.set(uint64(float64(used) / 0.5))
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, g)
		if acls := topicACLs(t, g.admin, guarded); len(acls) != 0 {
			return fmt.Errorf("guard bindings left on %s: %v", guarded, acls)
		}
		recs, err := g.admin.LoadRecords(ctx)
		if err != nil {
			return err
		}
		if r := recs.Agents[shared.NodeID]; r.Claims() {
			return fmt.Errorf("the agent's record still claims %v", r.Owned)
		}
		return nil
	})
	if err := exactly(t, g.admin, frozen, alice, deny); err != nil {
		t.Fatalf("R8.6/the operator's bindings after the calm: %v", err)
	}
}

// R7.3, R8.7 on a real broker (TestR7_3R8_7UnknownPurgeHistoryCountsTheCapsSpent):
// an agent purged unexpired data, and its record on the ownership topic
// was then replaced by one that does not decode (garbage, as a newer
// record version would be to this reader). The restarted process cannot
// know its purge history: it counts each log dir's larger cap as purged
// now, deletes no unexpired record, shows enforcer_blocked{reason=
// "purge_cap"}, and records the counted purge, so a further restart keeps
// it.
func TestR7_3R8_7RestartOnAnUndecodableOwnRecordPurgesNoUnexpiredData(t *testing.T) {
	const (
		topic = "unknown-history"
		own   = "__kdg_test_unknown_history"
	)
	src, at := purgeData(t, topic)
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100}
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: caps, Protection: enforcer.ProtectionConfig{LeaseDuration: time.Minute}}
	at(0.8995) // the top of the purge band, under the protect band
	first := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	pass(t, first)
	if v := metric(first.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v == 0 {
		t.Fatal("the first process purged nothing")
	}
	ctx := t.Context()
	recs, err := first.admin.LoadRecords(ctx)
	if err != nil || len(recs.Agents[shared.NodeID].Purged) == 0 {
		t.Fatalf("the first process's record holds no purge: %+v %v", recs.Agents[shared.NodeID], err)
	}

	// Its record is replaced by one that does not decode, as a reader
	// finds it once compaction kept only the key's last value: a reader
	// folding the topic keeps the last value of the key that decoded, so
	// the key is deleted (a tombstone) before the garbage is written.
	pcfg := shared.GuardConfig()
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	pcfg.Producer.Return.Successes = true
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer([]string{shared.SASLAddr}, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := sarama.StringEncoder(ledger.RecordKey(shared.NodeID))
	for _, v := range []sarama.Encoder{nil, sarama.StringEncoder("\x7fnot a record")} {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: own, Partition: 0, Key: key, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err = first.admin.LoadRecords(ctx)
	if _, ok := recs.Agents[shared.NodeID]; err != nil || ok || recs.Undecodable[shared.NodeID] == 0 {
		t.Fatalf("the test needs the agent's own record undecodable: record present %v, undecodable %v, %v", ok, recs.Undecodable, err)
	}

	// The restarted process, with unexpired data to purge.
	waitPurgedGone(t, src, first, topic, 2)
	at(0.8995)
	capacity := src.ScanOnce().LogDirs[0].Usage.CapacityBytes
	mid := offsets(t, first.admin, topic, 2)
	second := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	for range 3 {
		pass(t, second)
	}
	if v := metric(second.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/the restarted process purged %v unexpired bytes on an unknown purge history", v)
	}
	after := offsets(t, first.admin, topic, 2)
	for p := range after {
		if after[p].LogStart != mid[p].LogStart {
			t.Errorf("R7.3/partition %d's log start moved from %d to %d after the restart", p, mid[p].LogStart, after[p].LogStart)
		}
	}
	if v := metric(second.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); v != 1 {
		t.Errorf("R8.7/enforcer_blocked{reason=purge_cap} %v, want 1", v)
	}
	recs, err = second.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := recs.Agents[shared.NodeID]
	var counted int64
	for _, b := range r.Purged {
		if b.LogDir == shared.LogDir {
			counted += b.Bytes
		}
	}
	if want := int64(math.Ceil(float64(capacity))); !ok || counted < want {
		t.Errorf("R7.3/the counted purge is not recorded: record present %v, %d bytes purged in %s, want at least the day's cap %d", ok, counted, shared.LogDir, want)
	}
	t.Logf("restarted on an undecodable record: %d bytes counted purged (capacity %d), log start offsets %v -> %v, blocked %v",
		counted, capacity, mid, after, blockedReasons(t, second))
}

// R8.6 on a real broker, the quota strategy (TestR8_6StaleRecordsAdoptNoOperatorQuota):
// another agent's record claimed the default producer quota at the read
// before; it released the claim since (record first, then the quota), and
// an operator set the identical quota. The pass switching protection on,
// on the records as last read, does not claim it, and the quota survives
// the calm.
func TestR8_6StaleRecordsAdoptNoOperatorQuotaOnARealBroker(t *testing.T) {
	const (
		topic = "stale-quota"
		own   = "__kdg_test_stale_quota"
		rate  = 1024
	)
	shared.CreateTopic(t, topic, 1, nil)
	shared.Produce(t, topic, 0, 20, 1000)
	capacity := &fixedCapacity{v: 1 << 40}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	used := usedBytes(src)
	capacity.set(uint64(float64(used) / 0.5))
	src.ScanOnce()
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Protection: enforcer.ProtectionConfig{
		Strategy: enforcer.StrategyQuota, ProducerByteRate: rate, LeaseDuration: time.Minute}}
	g := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own})
	ctx := t.Context()
	t.Cleanup(func() { g.admin.RemoveDefaultProducerQuota(context.Background()) })
	setQuota := func() {
		t.Helper()
		if err := g.admin.SetDefaultProducerQuota(ctx, rate); err != nil {
			t.Fatal(err)
		}
		kafkatest.Eventually(t, 30*time.Second, func() error {
			if got, err := g.admin.DefaultProducerQuota(ctx); err != nil || got != rate {
				return fmt.Errorf("default producer_byte_rate %d (%v), want %d", got, err, rate)
			}
			return nil
		})
	}
	// Broker 2's agent protects with the quota (its record, then the quota).
	const peer = 2
	claim := enforcer.Record{BrokerID: peer, Instance: "agent-2", Strategy: enforcer.StrategyQuota, LogDirs: []string{"/var/lib/kafka/data"},
		Owned:   []enforcer.Owned{ledger.QuotaOwned(rate)},
		Renewed: time.Now(), Since: time.Now(), Updated: time.Now(), LeaseMs: time.Minute.Milliseconds()}
	kafkatest.Eventually(t, 30*time.Second, func() error { return g.admin.StoreRecord(ctx, claim) })
	setQuota()
	pass(t, g) // calm: reads the records, broker 2 claims the quota
	if v := metric(g.reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 1 {
		t.Fatalf("the test needs the agent to have read broker 2's claim in place: cluster_write_protection{broker_id=2} %v", v)
	}

	// Broker 2 releases its claim (record first, then the quota); the
	// operator then sets the identical quota.
	released := enforcer.Record{BrokerID: peer, Instance: "agent-2", Strategy: enforcer.StrategyQuota, Updated: time.Now()}
	if err := g.admin.StoreRecord(ctx, released); err != nil {
		t.Fatal(err)
	}
	if err := g.admin.RemoveDefaultProducerQuota(ctx); err != nil {
		t.Fatal(err)
	}
	setQuota()

	// The agent's log dir switches protection on, on the cached records.
	capacity.set(uint64(float64(used) / 0.95))
	src.ScanOnce()
	pass(t, g)
	recs, err := g.admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[shared.NodeID]; r.Quota() != 0 || len(r.LogDirs) == 0 {
		t.Errorf("R8.6/the operator's quota is claimed on stale records (or the log dir is not protected): claims %v, log dirs %v", r.Owned, r.LogDirs)
	}

	// Calm: the operator's quota stays.
	capacity.set(uint64(float64(used) / 0.5))
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, g)
		recs, err := g.admin.LoadRecords(ctx)
		if err != nil {
			return err
		}
		if r := recs.Agents[shared.NodeID]; r.Claims() || len(r.LogDirs) > 0 {
			return fmt.Errorf("the agent's record still protects: claims %v, log dirs %v", r.Owned, r.LogDirs)
		}
		return nil
	})
	for range 2 {
		pass(t, g)
	}
	if got, err := g.admin.DefaultProducerQuota(ctx); err != nil || got != rate {
		t.Fatalf("R8.6/the operator's quota after the calm: %d (%v), want %d", got, err, rate)
	}
}
