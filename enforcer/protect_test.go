package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// enforcerAs is an enforcer acting as broker id's agent.
func enforcerAs(t *testing.T, id int32, cfg Config, s *agent.Snapshot, admin Admin, clock Clock) (*Enforcer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.BrokerID = new(id)
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)}, Admin: admin, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg
}

func protectSnaps() (full, calm func() *agent.Snapshot) {
	O := agent.StateOpen
	parts := func() []agent.Partition {
		return []agent.Partition{part("a", 0, 0, 10, seg(0, 1, O)), part("b", 0, 0, 10, seg(0, 1, O))}
	}
	return func() *agent.Snapshot { return snap(950, 1000, parts()...) }, func() *agent.Snapshot { return snap(100, 1000, parts()...) }
}

// R8.4: an ownership topic that takes no writes (under
// min.insync.replicas, or one that cannot be created) never stops
// protection; what was set unrecorded is recorded once the topic takes
// writes again, and lifted like the rest.
func TestR8_4ProtectionFirstWhenTheRecordCannotBeWritten(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.storeErr = errors.New("NOT_ENOUGH_REPLICAS")
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true}, full(), f, clock)
	if err := e.Reconcile(t.Context()); err == nil {
		t.Fatal("no error while the record cannot be written")
	}
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("R8.4/not protected while the record cannot be written: %v", f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "record_failed"}); v != 1 {
		t.Errorf("R8.2/error{record_failed} %v", v)
	}
	// Calm while the topic still takes no writes: nothing is lifted
	// before the smaller record is written.
	pass := func(s *agent.Snapshot) error {
		clock.t = clock.t.Add(time.Second)
		s.Time = clock.t
		e.src.(*staticSource).snap = s
		return e.Reconcile(t.Context())
	}
	if err := pass(calm()); err == nil {
		t.Fatal("no error while the record cannot be written")
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("R8.1/lifted before the smaller record was written")
	}
	f.mu.Lock()
	f.storeErr = nil
	f.mu.Unlock()
	if err := pass(calm()); err != nil {
		t.Fatal(err)
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.4/unrecorded protection not lifted: %v", f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "record_failed"}); v != 0 {
		t.Errorf("error{record_failed} %v after recovery", v)
	}
}

// R8.4: a record write that hangs delays protection at most by
// protection.recordTimeout.
func TestR8_4RecordWriteBoundedByRecordTimeout(t *testing.T) {
	full, _ := protectSnaps()
	f := &slowStore{fakeAdmin: newFakeAdmin(full()), delay: time.Hour}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Protection: ProtectionConfig{RecordTimeout: 50 * time.Millisecond}}, full(), f, &clockAt{t0})
	start := time.Now()
	if err := e.Reconcile(t.Context()); err == nil {
		t.Fatal("no error while the record write hangs")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("R8.4/the pass waited %s for the record", d)
	}
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.4/not protected: %v", f.acls)
	}
}

type slowStore struct {
	*fakeAdmin
	delay time.Duration
}

func (s *slowStore) StoreRecord(ctx context.Context, r Record) error {
	select {
	case <-time.After(s.delay):
		return s.fakeAdmin.StoreRecord(ctx, r)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// R8.1: two agents protect the same topics; one dies. Its peer lifts
// what only the dead agent claims once it saw no renewal for the lease,
// and the dead agent, back and calm, acknowledges the lift.
func TestR8_1PeerLiftsAnExpiredLease(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, reg := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, dead, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	// The peer follows the records; the dead agent renews no more.
	for i := range 30 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
		if v := gather(t, reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); i < 9 && v != 1 {
			t.Fatalf("R8.2/cluster view of broker 2 at +%ds: %v, want 1 while its protection is in place", i+1, v)
		}
		if len(f.acls) == 0 {
			if waited := clock.t.Sub(t0); waited < 10*time.Second || waited > 12*time.Second {
				t.Fatalf("R8.1/lifted after %s, want the 10s lease (+ an interval)", waited)
			}
			break
		}
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.1/expired lease not lifted: %v", f.acls)
	}
	l, ok := f.records.PendingLift(2)
	if !ok || l.Kind != LiftLeaseExpired || !strings.Contains(l.By, "broker 1") {
		t.Fatalf("R8.1/lift %+v %v", l, ok)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if v := gather(t, reg, "kafka_disk_guard_cluster_write_protection", map[string]string{"broker_id": "2"}); v != 0 {
		t.Errorf("R8.2/cluster view of broker 2 after the lift: %v", v)
	}
	// Back and still full: it acknowledges and protects again (a peer's
	// lift is no operator's).
	clock.t = clock.t.Add(time.Second)
	passAt(t, dead, clock, full())
	clock.t = clock.t.Add(time.Second)
	passAt(t, dead, clock, full())
	if _, ok := f.records.PendingLift(2); ok || !f.acls[denyAll("a")] {
		t.Fatalf("R8.1/back and healthy: pending %v, acls %v", ok, f.acls)
	}
}

// R8.1: two agents drop a claim on the same binding at once. Whatever the
// interleaving of their writes and reads, the binding is deleted (the
// later writer sees the earlier one's drop): no DENY is left unclaimed.
func TestR8_1ConcurrentLiftsLeaveNoUnclaimedBinding(t *testing.T) {
	type step struct {
		agent int32
		write bool // write the smaller record; else read and release
	}
	orders := [][]step{
		{{1, true}, {2, true}, {1, false}, {2, false}},
		{{1, true}, {2, true}, {2, false}, {1, false}},
		{{1, true}, {1, false}, {2, true}, {2, false}},
		{{2, true}, {1, true}, {1, false}, {2, false}},
		{{2, true}, {2, false}, {1, true}, {1, false}},
		{{2, true}, {1, true}, {2, false}, {1, false}},
	}
	for i, order := range orders {
		t.Run(fmt.Sprint("R8.1/interleaving ", i), func(t *testing.T) {
			f := newFakeAdmin(snap(0, 1))
			f.acls[denyAll("x")] = true
			f.records = recs(agentRecord(1, owns(shapeDenyAll, "x")), agentRecord(2, owns(shapeDenyAll, "x")))
			for _, s := range order {
				if s.write {
					if err := f.StoreRecord(t.Context(), Record{BrokerID: s.agent}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if _, err := ledger.ReleaseUnclaimed(t.Context(), f, []ACL{denyAll("x")}, 0, nil); err != nil {
					t.Fatal(err)
				}
			}
			if f.acls[denyAll("x")] {
				t.Fatal("a DENY no record claims is left")
			}
		})
	}
}

// R8.2: a cluster without an authorizer: the gauge never says protected,
// the error names the missing authorizer, and deletions are not held back
// as if the broker were unreachable.
func TestR8_2NoAuthorizer(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	f.noAuthz = true
	e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0})
	for range 2 {
		_ = e.Reconcile(t.Context())
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
		t.Errorf("R8.2/active %v without an authorizer", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_wanted", nil); v != 1 {
		t.Errorf("R8.2/wanted %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "no_authorizer"}); v != 1 {
		t.Errorf("R8.2/error{no_authorizer} %v", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "broker_unreachable"}); v != 0 {
		t.Errorf("R8.2/no authorizer reported as broker_unreachable")
	}
	if f.lso[TopicPartition{"a", 0}] != 20 {
		t.Errorf("R8.2/purge held back without an authorizer: %v", f.lso)
	}
}

// R8.2: an operator's default quota in place: the quota strategy does not
// claim it and the gauge does not say protected.
func TestR8_2OperatorQuotaIsNotProtection(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	f.quota = 5000
	e, reg := newTestEnforcer(t, Config{Enabled: true, Protection: ProtectionConfig{Strategy: StrategyQuota}}, full(), f, &clockAt{t0})
	for range 2 {
		_ = e.Reconcile(t.Context())
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
		t.Errorf("R8.2/active %v with an operator's quota", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "operator_quota"}); v != 1 {
		t.Errorf("R8.2/error{operator_quota} %v", v)
	}
	if f.quota != 5000 || f.records.Agents[1].Quota() != 0 {
		t.Errorf("R8.2/operator quota touched or claimed: %d %+v", f.quota, f.records.Agents[1])
	}
}

// R4.4: in observe mode the guard still lifts the protection it set
// earlier (lifting blocks nothing and deletes nothing), and never adds any;
// it lifts once no process has renewed its record for a lease.
func TestR4_4ObserveModeLiftsWhatItSetEarlier(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	f.acls[denyAll("a")], f.acls[denyAll("b")] = true, true
	f.records = recs(agentRecord(1, owns(shapeDenyAll, "a", "b")))
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{}, full(), f, clock)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Not before a lease without renewal (R8.8: another process with the
	// same host name may be renewing it).
	if len(f.acls) != 2 {
		t.Fatalf("R8.8/observe mode lifted a record it did not see unrenewed for a lease: acls %v", f.acls)
	}
	clock.t = clock.t.Add(61 * time.Second)
	for range 2 {
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.acls) != 0 || f.records.Agents[1].Claims() {
		t.Fatalf("R4.4/observe mode kept what it set: acls %v record %+v", f.acls, f.records.Agents[1])
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "protect", "result": "ok"}); v != 0 {
		t.Errorf("R4.4/protect actions %v in observe mode", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "unprotect", "result": "ok"}); v != 2 {
		t.Errorf("R4.4/unprotect actions %v, want 2", v)
	}
}

// R8.1: the operator's lift (protection lift): the claims it covers are
// released unless another live record claims them; bindings no record
// claims are never touched; the agent acknowledges and does not protect
// the lifted scope again in the episode.
func TestR8_1OperatorLift(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	unattributed := denyAll("operators-own")
	f.acls[unattributed] = true
	e, _ := newTestEnforcer(t, Config{Enabled: true}, full(), f, &clockAt{t0})
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.records.Agents[2] = agentRecord(2, owns(shapeDenyAll, "b"))
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 1, By: "operator alice@host", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lifts) != 1 || res.Released.Kept != 1 || !slices.Equal(res.Released.ACLs, []ACL{denyAll("a")}) {
		t.Fatalf("R8.1/lift %+v", res)
	}
	if f.acls[denyAll("a")] || !f.acls[denyAll("b")] || !f.acls[unattributed] {
		t.Fatalf("R8.1/after the lift: %v", f.acls)
	}
	for range 2 {
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if f.acls[denyAll("a")] || f.records.Agents[1].Ack != res.Lifts[0].ID || f.records.Agents[1].Suppressed == nil {
		t.Fatalf("R8.1/the agent protected again or did not acknowledge: acls %v record %+v", f.acls, f.records.Agents[1])
	}
	st := ledger.BuildStatus(ledger.StatusInput{Records: f.records, ACLs: slices.Collect(mapsKeys(f.acls)), Now: t0})
	if !slices.Equal(st.Unattributed, []ACL{unattributed}) {
		t.Errorf("R8.4/unattributed %v", st.Unattributed)
	}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// R8.3: exempt principals and exemption impossible are reported.
func TestR8_3ExemptionImpossibleIsReported(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	f.acls[ledger.LiteralACL("a", AnyPrincipal, OpWrite, PermAllow)] = true
	e, reg := newTestEnforcer(t, Config{Enabled: true, Protection: ProtectionConfig{ExemptPrincipals: []string{"User:connect"}}}, full(), f, &clockAt{t0})
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.3/no DENY on a: %v", f.acls)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "exemption_impossible"}); v != 1 {
		t.Errorf("R8.3/error{exemption_impossible} %v", v)
	}
}

// swallowACLs accepts CreateAcls and keeps nothing (protection that never
// shows when read back).
type swallowACLs struct{ *fakeAdmin }

func (swallowACLs) CreateACLs(context.Context, []ACL) error { return nil }

// R8.2: protection wanted and still not read back an interval later is an
// error, and the gauge never says protected.
func TestR8_2WantedButNotInPlace(t *testing.T) {
	full, _ := protectSnaps()
	f := swallowACLs{newFakeAdmin(full())}
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: 10 * time.Second}, full(), f, clock)
	for i := range 3 {
		clock.t = t0.Add(time.Duration(i) * 6 * time.Second)
		passAt(t, e, clock, full())
		want := 0.0
		if i == 2 {
			want = 1
		}
		if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "not_in_place"}); v != want {
			t.Fatalf("R8.2/pass %d: error{not_in_place} %v, want %v", i, v, want)
		}
		if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
			t.Fatalf("R8.2/active %v while nothing is in place", v)
		}
	}
}

// R8.2: once protection is lifted and nothing is claimed anywhere, the
// gauges say so (the passes after it read no ACLs).
func TestR8_2GaugesAfterTheLift(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true}, full(), f, clock)
	for range 2 {
		passAt(t, e, clock, full())
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_active", nil); v != 1 {
		t.Fatalf("active %v while protected", v)
	}
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, e, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("not lifted: %v", f.acls)
	}
	for _, m := range []string{"kafka_disk_guard_write_protection_active", "kafka_disk_guard_write_protection_wanted", "kafka_disk_guard_cluster_write_protection"} {
		if v := gather(t, reg, m, nil); v != 0 {
			t.Errorf("R8.2/%s %v after the lift", m, v)
		}
	}
}

// R8.1: an operator's lift holds for the episode it was made in. One that
// ends while every pass of the agent fails (its admin calls refused, so
// none plans protection) still ends it: the agent saw its disk calm in its
// snapshots, and the next episode is protected (found by the simulation,
// cordon_faults, seed 462: the lift acknowledged at 92% kept suppressing
// protection at 96% after a dip to 50% the agent went through failing).
func TestR8_1OperatorLiftEndsWithACalmNoPassCouldPlan(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: 10 * time.Second}, full(), f, clock)
	passAt(t, e, clock, full())
	if _, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "operator", Now: clock.t}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		clock.t = clock.t.Add(10 * time.Second)
		passAt(t, e, clock, full())
	}
	if f.acls[denyAll("a")] || f.records.Agents[1].Suppressed == nil {
		t.Fatalf("R8.1/the lift not honoured: acls %v record %+v", f.acls, f.records.Agents[1])
	}
	// The disk calms down while every admin call fails.
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	for range 3 {
		clock.t = clock.t.Add(10 * time.Second)
		s := calm()
		s.Time = clock.t
		e.src.(*staticSource).set(s)
		_ = e.Reconcile(t.Context())
	}
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
	// A new episode.
	for range 2 {
		clock.t = clock.t.Add(10 * time.Second)
		passAt(t, e, clock, full())
	}
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.1/the operator's lift of an earlier episode still suppresses protection: acls %v record %+v", f.acls, f.records.Agents[1])
	}
}
