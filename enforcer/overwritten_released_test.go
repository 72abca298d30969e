package enforcer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// storeReplyLost is an admin whose StoreRecord, while lose is set, takes
// effect and then fails, as a write that times out while it goes on does.
type storeReplyLost struct {
	*fakeAdmin
	lose bool
}

func (s *storeReplyLost) StoreRecord(ctx context.Context, r Record) error {
	if err := s.fakeAdmin.StoreRecord(ctx, r); err != nil || !s.lose {
		return err
	}
	return errors.New("write broker-1 to __kafka_disk_guard_protection: context deadline exceeded (the write goes on)")
}

// R8.6, R8.8: an instance whose record the other instance for its broker
// wrote over keeps its last written record's bindings as set unrecorded
// (keepOverwritten), but not one a read of the ACLs made since that
// record was written found gone (here: released by this instance, its
// next record, without it, written with its reply lost and taken over by
// the other instance): an operator's identical binding made since would
// be taken for this instance's and deleted. Found by the simulation, seed
// 42119: agent-1 wrote its claims releasing and deleted its DENY WRITE
// User:* bindings; its next record took effect with its reply lost;
// agent-1b took broker 1 over; agent-1, keeping the releasing claims of
// its last confirmed record, deleted the operator's {orders literal
// User:* * WRITE DENY}.
func TestR8_6R8_8OverwrittenInstanceKeepsNoBindingAReadFoundGone(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(instance string, admin Admin) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
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
	second := newAs("pod-b", f)            // another process start
	passAfter(t, second, clock, 0, full()) // stands by
	if !f.acls[denyAll("a")] || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("a not protected by pod-a: %v %+v", f.acls, f.records.Agents[1])
	}
	passAfter(t, first, clock, time.Second, calm()) // the claims written releasing, the bindings deleted
	if f.acls[denyAll("a")] || !f.records.Agents[1].Claims() {
		t.Fatalf("the test needs pod-a's bindings released, its record still naming them releasing: %v %+v", f.acls, f.records.Agents[1])
	}
	lossy.lose = true
	if err := tryPassAfter(t, first, clock, time.Second, calm()); err == nil {
		t.Fatal("the test needs pod-a's next record write to fail")
	}
	lossy.lose = false
	if r := f.records.Agents[1]; r.Instance != "pod-a" || r.Claims() {
		t.Fatalf("the test needs pod-a's record without the claims in the topic (the write whose reply was lost): %+v", r)
	}
	// Broker 2's agent protects topic c: pod-b, which claims nothing,
	// reads the ledger, takes broker 1 over and writes its record.
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
	// The operator freezes topic a: no record claims the binding.
	f.acls[denyAll("a")] = true
	for range 5 {
		passAfter(t, peer, clock, time.Second, fullC())
		passAfter(t, first, clock, 0, calm())
		passAfter(t, second, clock, 0, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.6/the operator's binding %v, made after pod-a released its identical claim, was deleted", denyAll("a"))
	}
}

// R8.6, R8.7: the record written again from memory after the ownership
// topic lost it names no binding a read of the ACLs made since it was
// written found gone (writtenGone). Here the agent wrote its claim
// releasing and deleted the binding; its next record, without the
// claim, took effect with its reply lost; the operator then made the
// identical binding while no record claimed it, and the topic was
// deleted and created again. Written back from the last confirmed
// record, the releasing claim took the operator's binding for this
// agent's, and it was deleted. Found by the simulation, seed 85469
// (agent-2's releasing DENY WRITE User:* claims written back; the
// operator's {compacted literal User:* * WRITE DENY} deleted).
func TestR8_6R8_7WrittenBackRecordNamesNoBindingAReadFoundGone(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	lossy := &storeReplyLost{fakeAdmin: f}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
	s := calm()
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
		Admin: lossy, Clock: clock, Evidence: newFakeEvidence(s)})
	if err != nil {
		t.Fatal(err)
	}
	passAt(t, e, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatalf("a not protected: %v", f.acls)
	}
	passAfter(t, e, clock, time.Second, calm()) // the claims written releasing, the bindings deleted
	if f.acls[denyAll("a")] || len(f.records.Agents[1].Releasing()) == 0 {
		t.Fatalf("the test needs the bindings released, the record still naming them releasing: %v %+v", f.acls, f.records.Agents[1])
	}
	lossy.lose = true
	if err := tryPassAfter(t, e, clock, time.Second, calm()); err == nil {
		t.Fatal("the test needs the next record write to fail")
	}
	lossy.lose = false
	if r := f.records.Agents[1]; r.Claims() {
		t.Fatalf("the test needs the record without the claims in the topic (the write whose reply was lost): %+v", r)
	}
	// The operator freezes topic a: no record claims the binding. Then
	// the ownership topic is deleted and created again.
	f.acls[denyAll("a")] = true
	f.records = ledger.NewRecords()
	for range 5 {
		passAfter(t, e, clock, time.Second, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.6/the operator's binding %v, made after this agent released its identical claim, was deleted (record %+v)", denyAll("a"), f.records.Agents[1])
	}
	if r := f.records.Agents[1]; r.Claims() {
		t.Errorf("R8.6/the record written back claims the operator's binding: %+v", r)
	}
}
