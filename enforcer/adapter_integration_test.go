//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R4.1, R4.2: DeleteRecords moves the log start offset to a segment
// boundary; a nil RPC error is not success: a compact-only topic answers
// POLICY_VIOLATION and an offset past the high watermark
// OFFSET_OUT_OF_RANGE, per partition.
func TestR4_2DeleteRecordsResultsPerPartition(t *testing.T) {
	const del, compact = "adapter-delete", "adapter-compact"
	shared.CreateTopic(t, del, 2, map[string]string{"internal.segment.bytes": "16384"})
	shared.CreateTopic(t, compact, 1, map[string]string{"cleanup.policy": "compact"})
	produceRounds(t, shared, del, load{partitions: 2, rounds: 1, records: 40, size: 1000})
	shared.Produce(t, compact, 0, 5, 100)
	a := newAdmin(t, shared, "__kdg_test_adapter")
	ctx := context.Background()

	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{del: true}, Capacity: func() uint64 { return 1 << 40 }}
	snap := src.ScanOnce()
	boundary := snap.LogDirs[0].Partitions[0].Segments[1].BaseOffset
	offs := offsets(t, a, del, 2)

	res, err := a.DeleteRecords(ctx, del, map[int32]int64{0: boundary, 1: offs[1].HighWatermark + 10})
	if err != nil {
		t.Fatalf("rpc error: %v", err)
	}
	if res[0] != nil {
		t.Errorf("partition 0 to %d: %v", boundary, res[0])
	}
	if !errors.Is(res[1], sarama.ErrOffsetOutOfRange) {
		t.Errorf("partition 1 past the high watermark: %v, want OFFSET_OUT_OF_RANGE", res[1])
	}
	got := offsets(t, a, del, 2)
	if got[0].LogStart != boundary || got[1].LogStart != 0 {
		t.Errorf("log start offsets %v, want %d and 0", got, boundary)
	}

	res, err = a.DeleteRecords(ctx, compact, map[int32]int64{0: 1})
	if err != nil {
		t.Fatalf("rpc error: %v", err)
	}
	if !errors.Is(res[0], sarama.ErrPolicyViolation) {
		t.Errorf("compact-only topic: %v, want POLICY_VIOLATION", res[0])
	}

	// The broker removes the segment below the new log start offset.
	kafkatest.Eventually(t, 20*time.Second, func() error {
		ps := src.ScanOnce().LogDirs[0].Partitions
		if ps[0].Segments[0].BaseOffset != boundary {
			return fmt.Errorf("first segment still %d", ps[0].Segments[0].BaseOffset)
		}
		return nil
	})
}

// R4.3: the ACL calls create, list and delete exactly the bindings given,
// and the ownership records round-trip through the compacted topic.
func TestR4_3ACLAndOwnershipAdapter(t *testing.T) {
	const topic = "adapter-acl"
	shared.CreateTopic(t, topic, 1, nil)
	a := newAdmin(t, shared, "__kdg_test_adapter_own")
	ctx := context.Background()
	deny := enforcer.ACL{Topic: topic, Pattern: enforcer.PatternLiteral, Principal: enforcer.AnyPrincipal, Host: enforcer.AnyHost, Operation: enforcer.OpWrite, Permission: enforcer.PermDeny}
	bob := enforcer.ACL{Topic: topic, Pattern: enforcer.PatternLiteral, Principal: "User:bob", Host: enforcer.AnyHost, Operation: enforcer.OpWrite, Permission: enforcer.PermDeny}
	prefixed := enforcer.ACL{Topic: "adapter-", Pattern: enforcer.PatternPrefixed, Principal: enforcer.AnyPrincipal, Host: enforcer.AnyHost, Operation: enforcer.OpWrite, Permission: enforcer.PermDeny}
	if err := a.CreateACLs(ctx, []enforcer.ACL{deny, bob, prefixed}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateACLs(ctx, []enforcer.ACL{deny}); err != nil {
		t.Fatalf("creating an existing binding again: %v", err)
	}
	all, err := a.TopicACLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []enforcer.ACL{deny, bob, prefixed} {
		if !slices.Contains(all, want) {
			t.Errorf("listed %v, missing %v", all, want)
		}
	}
	if err := a.DeleteACLs(ctx, []enforcer.ACL{deny}); err != nil {
		t.Fatal(err)
	}
	all, _ = a.TopicACLs(ctx)
	if slices.Contains(all, deny) || !slices.Contains(all, bob) || !slices.Contains(all, prefixed) {
		t.Errorf("after deleting one binding: %v", all)
	}
	if err := a.DeleteACLs(ctx, []enforcer.ACL{bob, prefixed}); err != nil {
		t.Fatal(err)
	}

	// R8.7: a missing ownership topic is the ledger lost, never "no
	// records".
	own, err := a.LoadRecords(ctx)
	if !errors.Is(err, enforcer.ErrLedgerMissing) || len(own.Agents)+len(own.Lifts) != 0 {
		t.Fatalf("before any record: %v %v, want the ledger missing", own, err)
	}
	shape := enforcer.Shape{Deny: []string{enforcer.AnyPrincipal}}
	rec := enforcer.Record{BrokerID: 7, Strategy: enforcer.StrategyACL, Owned: []enforcer.Owned{{Kind: enforcer.OwnedACL, Shape: &shape, Topics: []string{topic}}}}
	for i := range 3 {
		rec.LogDirs = []string{fmt.Sprintf("/d%d", i)}
		if err := a.StoreRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.StoreRecord(ctx, enforcer.Record{BrokerID: 8}); err != nil {
		t.Fatal(err)
	}
	lift := enforcer.Lift{ID: "op-1", BrokerID: 7, Kind: enforcer.LiftOperator, By: "test"}
	if err := a.StoreLift(ctx, lift); err != nil {
		t.Fatal(err)
	}
	own, err = a.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(own.Agents) != 2 || !slices.Equal(own.Agents[7].LogDirs, []string{"/d2"}) || !slices.Equal(own.Agents[7].ACLTopics(), []string{topic}) ||
		own.Lifts[7].ID != "op-1" {
		t.Fatalf("loaded %+v", own)
	}
	// R8.7: created with one partition, compacted, with a segment that
	// rolls (compaction never touches the active one).
	ca := shared.Admin(t)
	md, err := ca.DescribeTopics([]string{"__kdg_test_adapter_own"})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 1 {
		t.Fatalf("R8.7/ownership topic %+v %v", md, err)
	}
	cfgs, err := ca.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "__kdg_test_adapter_own"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if (c.Name == "cleanup.policy" && c.Value != "compact") || (c.Name == "segment.ms" && c.Value != "3600000") {
			t.Errorf("R8.7/ownership topic %s=%s", c.Name, c.Value)
		}
	}
	// R8.7: a value that does not decode is skipped and counted; every
	// other record is read, incrementally after the first read.
	p, err := sarama.NewSyncProducer([]string{shared.SASLAddr}, func() *sarama.Config {
		c := shared.GuardConfig()
		c.Producer.Return.Successes = true
		c.Producer.Partitioner = sarama.NewManualPartitioner
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "__kdg_test_adapter_own", Partition: 0,
		Key: sarama.StringEncoder(ledger.RecordKey(9)), Value: sarama.StringEncoder(`{"v":99}`)}); err != nil {
		t.Fatal(err)
	}
	if own, err = a.LoadRecords(ctx); err != nil || own.Undecodable[9] != 1 || len(own.Agents) != 2 || own.Lifts[7].ID != "op-1" {
		t.Fatalf("R8.7/an undecodable record: %+v %v", own, err)
	}
	if err := a.DeleteLift(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if own, err = a.LoadRecords(ctx); err != nil || len(own.Lifts) != 0 {
		t.Fatalf("R8.1/a withdrawn lift is still read: %+v %v", own.Lifts, err)
	}
	live, err := a.LiveBrokers(ctx)
	if err != nil || !slices.Equal(live, []int32{1}) {
		t.Fatalf("live brokers %v %v", live, err)
	}
	// The single broker sets allow.everyone.if.no.acl.found=true: the
	// broker reports it set, hiding its value (a sensitive entry).
	if v, err := a.AllowEveryoneIfNoACLFound(ctx); err != nil || v != enforcer.AllowEveryoneUnknown {
		t.Fatalf("R8.3/allow.everyone.if.no.acl.found read as %v %v, want unknown (set, value hidden)", v, err)
	}
}

// R4.3: the quota strategy sets producer_byte_rate on the default client
// entity, lifts it, and never touches an operator's default quota.
func TestR4_3QuotaStrategy(t *testing.T) {
	const topic = "quota-protect"
	shared.CreateTopic(t, topic, 1, nil)
	shared.Produce(t, topic, 0, 20, 1000)
	capacity := &fixedCapacity{}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	capacity.set(1 << 40)
	used := usedBytes(src)
	capacity.set(uint64(float64(used) / 0.95))
	src.ScanOnce()
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{Strategy: enforcer.StrategyQuota, ProducerByteRate: 2048}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_quota"})
	ctx := context.Background()
	quota := func(want int64) func() error {
		return func() error {
			got, err := g.admin.DefaultProducerQuota(ctx)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("default producer_byte_rate %d, want %d", got, want)
			}
			return nil
		}
	}
	kafkatest.Eventually(t, 20*time.Second, quota(2048))
	if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
		t.Errorf("quota strategy created ACLs: %v", acls)
	}
	capacity.set(uint64(float64(used) / 0.5))
	kafkatest.Eventually(t, 20*time.Second, quota(0))
	g.stop()

	// An operator's default quota stays as it is.
	if err := g.admin.SetDefaultProducerQuota(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.admin.RemoveDefaultProducerQuota(context.Background()) })
	capacity.set(uint64(float64(used) / 0.95))
	g2 := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_quota"})
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if len(g2.logs.lines("write protection impossible")) == 0 {
			return fmt.Errorf("no log line about the operator's quota")
		}
		if v := metric(g2.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "operator_quota"}); v != 1 {
			return fmt.Errorf("R8.2/error{operator_quota} %v", v)
		}
		if v := metric(g2.reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
			return fmt.Errorf("R8.2/active %v with an operator's quota", v)
		}
		return nil
	})
	capacity.set(uint64(float64(used) / 0.5))
	g2.waitReconciles(t, 3)
	if err := quota(5000)(); err != nil {
		t.Fatal(err)
	}
}
