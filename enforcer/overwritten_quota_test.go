package enforcer

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R8.6, R8.8: the quota strategy's case of
// TestR8_6R8_8OverwrittenInstanceKeepsNoBindingAReadFoundGone. pod-a
// claims the default producer quota, writes its claim releasing and
// removes the quota; its next record, without the claim, takes effect
// with its reply lost, and pod-b takes broker 1 over. A read of the quota
// made since pod-a's last confirmed record found it gone: kept as set
// unrecorded (keepOverwritten), the operator's identical quota set since
// would be taken for pod-a's and removed.
func TestR8_6R8_8OverwrittenInstanceKeepsNoQuotaAReadFoundGone(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(instance string, admin Admin) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, BrokerID: new(int32(1)),
			Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024, LeaseDuration: 10 * time.Second}}
		s := calm()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	lossy := &storeReplyLost{fakeAdmin: f}
	first := newAs("pod-a", lossy)
	passAt(t, first, clock, full())
	clock.t = clock.t.Add(time.Second)
	second := newAs("pod-b", f)
	passAfter(t, second, clock, 0, full()) // stands by
	if f.quota != 1024 || f.records.Agents[1].Quota() != 1024 || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("the quota not set and claimed by pod-a: %d %+v", f.quota, f.records.Agents[1])
	}
	passAfter(t, first, clock, time.Second, calm()) // the claim written releasing, the quota removed
	if f.quota != 0 || f.records.Agents[1].ReleasingQuota() != 1024 {
		t.Fatalf("the test needs pod-a's quota removed, its record still naming it releasing: %d %+v", f.quota, f.records.Agents[1])
	}
	lossy.lose = true
	if err := tryPassAfter(t, first, clock, time.Second, calm()); err == nil {
		t.Fatal("the test needs pod-a's next record write to fail")
	}
	lossy.lose = false
	if r := f.records.Agents[1]; r.Instance != "pod-a" || r.Claims() {
		t.Fatalf("the test needs pod-a's record without the claim in the topic (the write whose reply was lost): %+v", r)
	}
	// Broker 2's agent protects topic c with bindings: pod-b, which claims
	// nothing, reads the ledger, takes broker 1 over and writes its record.
	fullC := func() *agent.Snapshot { return snap(950, 1000, part("c", 0, 0, 10, seg(0, 1, agent.StateOpen))) }
	peer, _ := enforcerAs(t, 2, Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}, fullC(), f, clock)
	lost := f.records.Agents[1]
	for i := 0; f.records.Agents[1].Instance != "pod-b"; i++ {
		if i == 15 {
			t.Fatalf("the test needs pod-b's record over pod-a's: %+v", f.records.Agents[1])
		}
		passAfter(t, peer, clock, time.Second, fullC())
		passAfter(t, second, clock, 0, calm())
	}
	if r := f.records.Agents[1]; r.InheritsSeq.Of(lost.Started) != lost.Seq {
		t.Fatalf("the test needs pod-b's record to take over pod-a's write whose reply was lost (seq %d): %+v", lost.Seq, r)
	}
	// The operator sets the same default producer quota: no record claims it.
	f.quota = 1024
	for range 5 {
		passAfter(t, peer, clock, time.Second, fullC())
		passAfter(t, first, clock, 0, calm())
		passAfter(t, second, clock, 0, calm())
	}
	if f.quota != 1024 {
		t.Errorf("R8.6/the operator's default producer quota 1024, set after pod-a released its identical claim, was removed: %d", f.quota)
	}
}

// R8.6: the default producer quota set unrecorded (its record write
// failed) is forgotten once a read finds it gone, as the bindings are
// (pruneUnrecorded): remembered, the operator's identical quota set later
// would be taken for this agent's and removed on calm. Kept as set
// unrecorded by keepOverwritten, the quota of a record written over is
// the same case.
func TestR8_6QuotaSetUnrecordedIsForgottenOnceAReadFindsItGone(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}
	e, _ := newTestEnforcer(t, cfg, full(), f, clock)
	f.storeErr = errors.New("NOT_ENOUGH_REPLICAS")
	_ = tryPassAfter(t, e, clock, 0, full())
	f.storeErr = nil
	if f.quota != 1024 || f.records.Agents[1].Claims() || e.prot.unrecordedQuota != 1024 {
		t.Fatalf("the test needs the quota set unrecorded: %d %+v %d", f.quota, f.records.Agents[1], e.prot.unrecordedQuota)
	}
	f.quota = 0 // the operator removes it
	passAfter(t, e, clock, time.Second, calm())
	f.quota = 1024 // and sets it again
	for range 3 {
		passAfter(t, e, clock, time.Second, calm())
	}
	if f.quota != 1024 {
		t.Errorf("R8.6/the operator's default producer quota, set after a read found the one set unrecorded gone, was removed: %d", f.quota)
	}
}
