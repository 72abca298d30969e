package enforcer

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7, R8.8: an instance that took its broker's record over from the
// other instance and claimed more under it keeps those claims when the
// ownership topic is lost and a peer writes back its older copy of the
// other instance's record (and lifts it, the lease it followed unrenewed):
// the copy names a write this process took over, so its own memory wins
// and its record is written again, and what the copy lacks (the lift's
// writer released nothing of it) stays claimed, released by this agent
// when calm. Before the fix the copy was taken for the other instance
// writing over this one's record, what the lift covered was dropped, and
// the binding on b, still in place, was in no record: the operator's for
// good (found by the simulation, seed 19856: agent-1b's {bursts literal
// User:* * WRITE DENY} left after the faults).
func TestR8_7TakenOverRecordRestoredByAPeerKeepsTheClaimsMadeSince(t *testing.T) {
	full, calm := protectSnaps()
	onlyA := func() *agent.Snapshot { return snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, agent.StateOpen))) }
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	instance := func(name string, s *agent.Snapshot) *Enforcer {
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	tick := func() { clock.t = clock.t.Add(time.Second) }
	podA := instance("pod-a", onlyA())
	for range 3 {
		passAt(t, podA, clock, onlyA())
		tick()
	}
	copyA := f.records.Agents[1] // as the peers read it
	if !f.acls[denyAll("a")] || copyA.Instance != "pod-a" || copyA.Seq == 0 || !slices.Equal(copyA.ACLTopics(), []string{"a"}) {
		t.Fatalf("the test needs pod-a's record claiming topic a: %+v", copyA)
	}
	// pod-a dies; pod-b stands by for its lease, then takes the record
	// over and protects topic b too.
	podB := instance("pod-b", full())
	for range 15 {
		tick()
		passAt(t, podB, clock, full())
	}
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !slices.Equal(r.ACLTopics(), []string{"a", "b"}) || !f.acls[denyAll("b")] {
		t.Fatalf("the test needs pod-b's record claiming topics a and b: %+v", r)
	}
	// The topic is lost and created again; a peer writes back pod-a's
	// record as it last read it, and lifts it (its lease unrenewed): it
	// releases the binding on a, which the copy claims; the copy lacks
	// the one on b.
	f.records = ledger.NewRecords()
	copyA.Restored = true
	f.records.Agents[1] = copyA
	f.records.Lifts[1] = Lift{ID: "lease_expired-19856", BrokerID: 1, Kind: LiftLeaseExpired, By: "agent of broker 2", At: clock.t,
		Reason: "lease not renewed"}
	delete(f.acls, denyAll("a"))
	tick()
	passAt(t, podB, clock, full())
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !slices.Contains(r.ACLTopics(), "b") {
		t.Errorf("R8.7/pod-b's binding on b, in place, is in no record after the peer's copy and lift: %+v", r)
	}
	for range 5 {
		tick()
		passAt(t, podB, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Errorf("R8.7/bindings left when calm: %v", f.acls)
	}
}
