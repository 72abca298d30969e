//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Rules of the protection ledger between the processes and instances of
// one broker's agent on real brokers, each found by the simulation (seeds
// 7150 and 6078 of the whole mix, 4296 and 5728 of the default mix) and
// unit-tested with fakes first: an instance another instance wrote over
// never writes its outdated record back; a record written while its
// writer's purge history was unknown (purges_unknown: in its wait, or in
// observe mode) ends no history wait; and an instance never stands by
// for its own lease stamp. Each test drives its agents' passes itself
// (Reconcile), with a lease of 3 s.

// failingStore is the guard's admin API whose next record write fails
// once armed (the ownership topic just created again, its partition
// without a leader yet: NOT_LEADER_OR_FOLLOWER).
type failingStore struct {
	*kafkaadmin.Enforce
	armed atomic.Bool
}

func (f *failingStore) StoreRecord(ctx context.Context, r enforcer.Record) error {
	if f.armed.CompareAndSwap(true, false) {
		return errors.New("injected: NOT_LEADER_OR_FOLLOWER")
	}
	return f.Enforce.StoreRecord(ctx, r)
}

// R8.8, R8.6 on a real broker (TestR8_8OverwrittenInstanceNeverWritesBackItsOutdatedRecord):
// pod-a protects the topic with DENY WRITE User:*; a peer lifts it after
// pod-a's lease (the binding goes); pod-b takes the broker over,
// acknowledges the lift and claims nothing; the operator freezes the
// topic with the identical binding. pod-a reads pod-b's record and writes
// nothing yet. The ownership topic is deleted and created again, and
// pod-a's first record write on it fails: pod-b's record, claiming
// nothing, is not written back and leaves pod-a's memory, while the last
// record pod-a wrote is still the one pod-b wrote over. pod-a never writes
// that record back: no record names the operator's binding, which
// survives pod-a's calm passes. Written back, pod-a's record named it,
// and pod-a deleted it (seed 7150: {compacted literal User:* * WRITE
// DENY} removed).
func TestR8_8OverwrittenInstanceNeverWritesBackItsOutdatedRecordOnARealBroker(t *testing.T) {
	const (
		topic = "overwritten-outdated"
		own   = "__kdg_test_overwritten_outdated"
		lease = 3 * time.Second
	)
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	cfg := enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	var store *failingStore
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a",
		wrap: func(a *kafkaadmin.Enforce) enforcer.Admin { store = &failingStore{Enforce: a}; return store }})
	b := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-b"})
	dropTopicACLs(t, a, topic)
	ctx := t.Context()
	record := func() (enforcer.Record, bool) {
		t.Helper()
		recs, err := a.admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := recs.Agents[shared.NodeID]
		return r, ok
	}
	// An operator's binding on the topic: the guard's shape is DENY WRITE
	// User:*.
	alice := allowACL(topic, "User:alice", enforcer.OpRead)
	operatorACLs(t, a.admin, alice)
	deny := denyWrite(topic, enforcer.AnyPrincipal)
	capacity.set(full)
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, a)
		if r, _ := record(); r.Instance != "pod-a" || !slices.Contains(r.ACLTopics(), topic) || exactly(t, a.admin, topic, alice, deny) != nil {
			time.Sleep(200 * time.Millisecond)
			return fmt.Errorf("pod-a's protection not claimed in its record yet: %+v, bindings %v", r, topicACLs(t, a.admin, topic))
		}
		return nil
	})

	// pod-a runs no pass from here. A peer lifts its protection a lease
	// later; pod-b takes the broker over and acknowledges the lift.
	time.Sleep(lease + 200*time.Millisecond)
	res, err := ledger.LiftProtection(ctx, a.admin, ledger.LiftRequest{Broker: shared.NodeID, By: "agent of broker 2", Reason: "lease not renewed",
		Kind: ledger.LiftLeaseExpired, Now: time.Now()})
	if err != nil || len(res.Lifts) != 1 || exactly(t, a.admin, topic, alice) != nil {
		t.Fatalf("the peer's lift: %+v, %v; bindings %v", res, err, topicACLs(t, a.admin, topic))
	}
	capacity.set(calm)
	src.ScanOnce()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, b)
		if r, _ := record(); r.Instance != "pod-b" || r.Ack != res.Lifts[0].ID || r.Claims() {
			time.Sleep(250 * time.Millisecond)
			return fmt.Errorf("pod-b has not taken the broker over and acknowledged the lift: %+v", r)
		}
		return nil
	})
	// The operator freezes the topic with the identical binding: no
	// record claims it. Both instances run.
	operatorACLs(t, a.admin, deny)
	for range 3 {
		time.Sleep(cfg.Interval)
		pass(t, a)
		pass(t, b)
	}
	if r, _ := record(); r.Instance != "pod-b" || r.Claims() || exactly(t, a.admin, topic, alice, deny) != nil {
		t.Fatalf("the test needs pod-b's record, claiming nothing, over pod-a's, and the operator's binding: %+v, bindings %v", r, topicACLs(t, a.admin, topic))
	}

	// pod-b stops; the ownership topic is deleted. pod-a's passes: one
	// finds the ledger lost and creates the topic again (the creation may
	// fail while the deletion completes: the next read tries again); the
	// reads after it find no record of the broker, and the first record
	// write fails.
	deleteTopicAndWait(t, shared.Admin(t), own)
	store.armed.Store(true)
	lost, read := false, 0
	for i := 0; read < 5; i++ {
		err := a.e.Reconcile(ctx)
		lostNow := metric(a.reg, "kafka_disk_guard_protection_ledger_lost", nil) == 1
		lost = lost || lostNow
		switch {
		case lost && err == nil && !lostNow:
			read++
			if r, ok := record(); ok && slices.Contains(r.ACLTopics(), topic) {
				t.Errorf("R8.8/pod-a wrote back its record that pod-b wrote over (instance %q): it names the operator's binding on %s", r.Instance, topic)
			}
		case i > 60:
			t.Fatalf("pod-a never read the ownership topic created again: %v", err)
		}
		time.Sleep(cfg.Interval)
	}
	if store.armed.Load() {
		t.Fatal("the test needs pod-a's first record write after the loss failed: pod-a wrote no record")
	}
	if logged2(a.logs, "this agent's record is missing from the ownership topic: written again from memory") {
		t.Error("R8.8/pod-a wrote its record that pod-b wrote over again from memory")
	}
	if err := exactly(t, a.admin, topic, alice, deny); err != nil {
		t.Errorf("R8.6/the operator's binding, made after pod-b wrote over pod-a's record, after pod-a's calm passes: %v", err)
	}
}

// clusterWait is the start of the history-wait tests on the shared
// cluster: broker 2's log dir holding the topic's purgeable data at 95%,
// its own ownership topic, and the config of broker 2's enforcing agent
// (a lease of 3 s, a pass a second).
type clusterWait struct {
	c     *kafkatest.Cluster
	src   *scantest.Source
	own   string
	admin *kafkaadmin.Enforce
	cfg   enforcer.Config
}

func newClusterWait(t *testing.T, topic, own string) clusterWait {
	c := sharedCluster(t)
	src, at := clusterPurgeData(t, c, 2, topic)
	admin := clusterAdmin(t, c, own)
	t.Cleanup(func() {
		if acls := topicACLs(t, admin, topic); len(acls) > 0 {
			_ = admin.DeleteACLs(t.Context(), acls)
		}
	})
	at(0.95)
	cfg := enforcer.Config{Enabled: true, BrokerID: ptr(int32(2)), Interval: time.Second, Purge: purgeMechanics,
		Protection: enforcer.ProtectionConfig{LeaseDuration: 3 * time.Second}}
	return clusterWait{c: c, src: src, own: own, admin: admin, cfg: cfg}
}

// guard is a process of broker 2's agent with cfg, named instance.
func (w clusterWait) guard(t *testing.T, cfg enforcer.Config, instance string) *guard {
	return newGuard(t, w.c.Node(2), guardSpec{cfg: cfg, src: w.src, ownTopic: w.own, addrs: w.c.SASLAddrs(), instance: instance})
}

// R7.3, R8.7 on the 3-node cluster (TestR7_3R8_7RecordWrittenDuringTheHistoryWaitIsNoHistory):
// a process of broker 2's agent finds no record of its own in a cluster
// that lists other brokers: it waits a lease and a pass for its purge
// history. Its log dir in the protect band, it protects meanwhile and
// writes its record, which says purges_unknown. It dies within the wait.
// Its next process reads that record as its own: it waits for its
// history too, purging no unexpired data for a lease and a pass from its
// own start, and only then purges, as a fresh install. Taken as a known
// empty history, the record ended the wait at once (seed 4296: the next
// process purged a second hour's cap).
func TestR7_3R8_7RecordWrittenDuringTheHistoryWaitIsNoHistoryOnACluster(t *testing.T) {
	const topic = "wait-record"
	w := newClusterWait(t, topic, "__kdg_test_wait_record")
	admin, cfg := w.admin, w.cfg
	first := w.guard(t, cfg, "pod-a")
	ctx := t.Context()
	// The ownership topic exists, empty (a record write may still fail
	// while its partition has no leader: the next pass writes it).
	kafkatest.Eventually(t, 30*time.Second, func() error { return admin.Prepare(ctx) })
	mid := offsets(t, admin, topic, 2)
	var r enforcer.Record
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, first)
		recs, err := admin.LoadRecords(ctx)
		if err == nil && recs.Agents[2].Instance == "" {
			err = errors.New("the first process's record not written yet")
		}
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			return err
		}
		r = recs.Agents[2]
		return nil
	})
	if v := metric(first.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 1 {
		t.Fatalf("the test needs the first process still waiting for its history: blocked %v", blockedReasons(t, first))
	}
	if r.Instance != "pod-a" || !r.Claims() {
		t.Fatalf("the test needs the waiting process's record, with its claims: %+v", r)
	}
	if !r.PurgesUnknown {
		t.Errorf("R7.3/the record written during the history wait, read back from the topic, does not say purges_unknown: %+v", r)
	}

	// It dies within its wait; the next process starts.
	next := w.guard(t, cfg, "pod-a")
	started := time.Now()
	wait := cfg.Protection.LeaseDuration + cfg.Interval
	pass(t, next)
	if v := metric(next.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 1 {
		t.Errorf("R7.3/enforcer_blocked{reason=purge_history} at the next process's first pass: blocked %v, want purge_history (it waits too)", blockedReasons(t, next))
	}
	var purgedAt time.Duration
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if metric(next.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
			if after := offsets(t, admin, topic, 2); after[0].LogStart != mid[0].LogStart || after[1].LogStart != mid[1].LogStart {
				t.Fatalf("R7.3/log start offsets moved from %v to %v with no purge", mid, after)
			}
			time.Sleep(200 * time.Millisecond)
			pass(t, next)
			return errors.New("no unexpired data purged yet")
		}
		purgedAt = time.Since(started)
		return nil
	})
	if purgedAt < wait {
		t.Errorf("R7.3/the next process purged %v unexpired bytes %s after its start, within its wait of a lease and a pass (%s): the record written during the first process's wait ended it",
			metric(next.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil), purgedAt.Round(time.Millisecond), wait)
	}
	recs, err := admin.LoadRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs.Agents[2]; r.PurgesUnknown || len(r.Purged) == 0 {
		t.Errorf("R7.3/the next process's record after its wait: purges_unknown %v, purged %v; want its purges, known", r.PurgesUnknown, r.Purged)
	}
	t.Logf("the next process purged %s after its start (wait %s)", purgedAt.Round(time.Millisecond), wait)
}

// R7.3, R8.8 on the 3-node cluster (TestR7_3R8_8ObserveModeRecordEndsNoHistoryWait):
// broker 2's enforcing agent (pod-a) finds no record of its own, waits
// for its purge history, protects meanwhile and writes its record; it
// dies. A second install for the broker left in observe mode (pod-b)
// stands by for pod-a's lease, then takes the broker over: its record,
// holding no purge history of pod-a's processes (it purges nothing),
// says purges_unknown. pod-a's next process reads that record under its
// broker's key, stands by for pod-b's lease, and takes the broker back:
// the record is no history, and the process waits a lease and a pass
// before purging unexpired data, as if it had found no record. Taken for the known history of an instance taken over
// from, it ended the wait at once (seed 5728: 24 MiB purged on top of
// the 56 MiB purged before the ownership topic was lost).
func TestR7_3R8_8ObserveModeRecordEndsNoHistoryWaitOnACluster(t *testing.T) {
	const topic = "observe-record"
	w := newClusterWait(t, topic, "__kdg_test_observe_record")
	admin, cfg := w.admin, w.cfg
	ctx := t.Context()
	record := func() (enforcer.Record, error) {
		recs, err := admin.LoadRecords(ctx)
		return recs.Agents[2], err
	}
	kafkatest.Eventually(t, 30*time.Second, func() error { return admin.Prepare(ctx) })
	first := w.guard(t, cfg, "pod-a")
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, first)
		r, err := record()
		if err == nil && r.Instance != "pod-a" {
			err = fmt.Errorf("pod-a's record not written yet: %+v", r)
		}
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
		return err
	})
	if v := metric(first.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); v != 1 {
		t.Fatalf("the test needs pod-a's first process waiting for its history: blocked %v", blockedReasons(t, first))
	}

	// pod-a's process dies. The observe-mode instance stands by for its
	// lease, then takes the broker over.
	observe := cfg
	observe.Enabled = false
	b := w.guard(t, observe, "pod-b")
	pass(t, b)
	if v := metric(b.reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Fatalf("the test needs pod-b standing by beside pod-a's lease: protection_standby %v", v)
	}
	var over enforcer.Record
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, b)
		r, err := record()
		if err == nil && r.Instance != "pod-b" {
			err = fmt.Errorf("pod-b has not taken broker 2 over yet: %+v", r)
		}
		if err != nil {
			time.Sleep(250 * time.Millisecond)
			return err
		}
		over = r
		return nil
	})
	if !over.PurgesUnknown {
		t.Errorf("R7.3/the observe-mode instance's record, read back from the topic, does not say purges_unknown: %+v", over)
	}

	// pod-a's next process starts. It stands by while pod-b's record
	// holds a live lease, then takes the broker back: its wait for its
	// history starts there.
	mid := offsets(t, admin, topic, 2)
	next := w.guard(t, cfg, "pod-a")
	started := time.Now()
	wait := cfg.Protection.LeaseDuration + cfg.Interval
	var active time.Time // the start of its first pass that did not stand by
	var purgedAt time.Time
	kafkatest.Eventually(t, 30*time.Second, func() error {
		at := time.Now()
		pass(t, next)
		if active.IsZero() && metric(next.reg, "kafka_disk_guard_protection_standby", nil) == 0 {
			active = at
		}
		if metric(next.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 {
			if after := offsets(t, admin, topic, 2); after[0].LogStart != mid[0].LogStart || after[1].LogStart != mid[1].LogStart {
				t.Fatalf("R7.3/log start offsets moved from %v to %v with no purge", mid, after)
			}
			time.Sleep(200 * time.Millisecond)
			return errors.New("no unexpired data purged yet")
		}
		purgedAt = time.Now()
		return nil
	})
	if active.IsZero() {
		t.Fatal("pod-a's next process purged standing by")
	}
	if d := purgedAt.Sub(active); d < wait {
		t.Errorf("R7.3/pod-a's next process purged %v unexpired bytes %s after it took broker 2 back, within its wait of a lease and a pass (%s): the observe-mode instance's record ended it",
			metric(next.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil), d.Round(time.Millisecond), wait)
	}
	t.Logf("pod-a's next process: stood by %s, purged %s after that (wait %s)", active.Sub(started).Round(time.Millisecond),
		purgedAt.Sub(active).Round(time.Millisecond), wait)
}

// R8.8 on a real broker (TestR8_8InstanceNeverStandsByForItsOwnLeaseStamp):
// pod-a protects and purges; calm, it releases its claims, and its
// record keeps the lease stamp of its purges (Renewed), not renewed. A
// lease later an instance that purges nothing (observe mode:
// purges_unknown) takes the broker over, its record keeping pod-a's
// stamp (the test writes it as the simulator's observe-mode duplicate
// did). The log dir fills: pod-a reads its own stamp back from the topic
// in that record, a lease old on its own clock, does not stand by, and
// protects the topic at once. Taken for the other instance's renewal, it
// stood by a lease more with the log dir full and nothing protecting it
// (seed 6078: broker 1's log dir at 99%, producers still writing).
func TestR8_8InstanceNeverStandsByForItsOwnLeaseStampOnARealBroker(t *testing.T) {
	const (
		topic = "own-stamp"
		own   = "__kdg_test_own_stamp"
		lease = 3 * time.Second
	)
	src, at := purgeData(t, topic)
	at(0.97)
	caps := enforcer.PurgeConfig{MaxPercentPerPass: 2, MaxPercentPerHour: 5, MaxPercentPerDay: 10}
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Purge: caps, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	a := newGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: own, instance: "pod-a"})
	dropTopicACLs(t, a, topic)
	ctx := t.Context()
	record := func() enforcer.Record {
		t.Helper()
		recs, err := a.admin.LoadRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs.Agents[shared.NodeID]
	}
	pass(t, a)
	if metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil) == 0 || len(topicACLs(t, a.admin, topic)) == 0 {
		t.Fatalf("the test needs pod-a protecting and purging: purged %v, bindings %v",
			metric(a.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil), topicACLs(t, a.admin, topic))
	}
	// Calm: pod-a releases its claims.
	at(0.5)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		pass(t, a)
		if r := record(); r.Claims() || len(topicACLs(t, a.admin, topic)) > 0 {
			time.Sleep(250 * time.Millisecond)
			return fmt.Errorf("pod-a has not released its protection yet: %+v", r.Owned)
		}
		return nil
	})
	stamp := record()
	if stamp.Instance != "pod-a" || stamp.Renewed.IsZero() || len(stamp.Purged) == 0 {
		t.Fatalf("the test needs pod-a's record without claims, keeping the lease of its purges: %+v", stamp)
	}
	time.Sleep(time.Until(stamp.Renewed.Add(lease + 200*time.Millisecond)))
	pass(t, a)
	if r := record(); !r.Renewed.Equal(stamp.Renewed) {
		t.Fatalf("the test needs pod-a's stamp a lease old: renewed %v, then %v", stamp.Renewed, r.Renewed)
	}

	// An observe-mode instance takes the broker over: its record keeps
	// pod-a's stamp and purges, and says purges_unknown.
	now := time.Now()
	over := stamp
	over.Instance, over.PurgesUnknown, over.Started, over.Seq, over.Updated, over.Fresh = "pod-b", true, now.Add(-time.Second), 1, now, false
	over.Inherits = []time.Time{stamp.Started}
	if err := a.admin.StoreRecord(ctx, over); err != nil {
		t.Fatal(err)
	}
	// The log dir fills.
	at(0.97)
	pass(t, a)
	if v := metric(a.reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/pod-a stands by (protection_standby %v) for its own stamp, written %s ago, read back from pod-b's record",
			v, time.Since(stamp.Renewed).Round(time.Millisecond))
	}
	if err := produceAs(shared.ClientConfig(), []string{shared.Addr}, topic); !refused(err) {
		t.Errorf("R8.8/the log dir is full and anonymous producers write to %s (bindings %v): %v", topic, topicACLs(t, a.admin, topic), err)
	}
	if r := record(); r.Instance != "pod-a" || !slices.Contains(r.ACLTopics(), topic) {
		t.Errorf("R8.8/broker %d's record after pod-a's pass: instance %q, claims %v; want pod-a's, claiming %s", shared.NodeID, r.Instance, r.ACLTopics(), topic)
	}
}
