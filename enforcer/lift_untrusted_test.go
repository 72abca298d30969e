package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.1, R7: after a peer lifts this agent's protection (its lease expired),
// the agent protects again only on trusted inputs, and not just in the pass
// that acknowledges the lift: every pass on a stale snapshot until one is
// fresh again, a restart included. Only the acknowledging pass held back,
// the next one put back, from its stale snapshot, what the peers had just
// lifted (found by the simulation, seed 69603: agent-1b, its clock 2 hours
// ahead, protected again right after the peers' lift). A fresh snapshot
// protects again.
func TestR8_1PeersLiftHoldsUntilTheInputsAreTrusted(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAgent := func() *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge,
			Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := full()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: "pod-a"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := newAgent()
	passAt(t, e, clock, full())
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("not protected: %v", f.acls)
	}
	// The agent's clock jumps an hour ahead: its snapshots, stamped by
	// the scans, are stale to it from now on.
	scanned := clock.t
	stalePass := func(e *Enforcer) {
		t.Helper()
		clock.t = clock.t.Add(time.Second)
		s := full()
		s.Time = scanned
		src := e.src.(*staticSource)
		src.mu.Lock()
		src.snap = s
		src.mu.Unlock()
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	clock.t = clock.t.Add(time.Hour)
	for range 3 {
		stalePass(e)
	}
	if r := f.records.Agents[1]; !r.Renewed.Equal(t0) {
		t.Fatalf("the test needs the lease unrenewed on stale inputs: %+v", r)
	}
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 1, By: "agent of broker 2", Reason: "lease not renewed",
		Kind: ledger.LiftLeaseExpired, Now: clock.t})
	if err != nil || len(res.Lifts) != 1 || f.acls[denyAll("a")] || f.acls[denyAll("b")] {
		t.Fatalf("the peer's lift: %+v, %v; bindings %v", res, err, f.acls)
	}
	stalePass(e)
	if r := f.records.Agents[1]; r.Ack != res.Lifts[0].ID {
		t.Fatalf("the lift is not acknowledged: %+v", r)
	}
	check := func(when string) {
		t.Helper()
		if f.acls[denyAll("a")] || f.acls[denyAll("b")] || len(f.records.Agents[1].Held()) > 0 {
			t.Fatalf("R8.1/%s, on a stale snapshot: protection the peer lifted is back: bindings %v, record %+v", when, f.acls, f.records.Agents[1])
		}
	}
	check("the pass that acknowledged the lift")
	for range 5 {
		stalePass(e)
	}
	check("the passes after the acknowledgement")
	// A restart knows it from the ledger.
	e = newAgent()
	for range 5 {
		stalePass(e)
	}
	check("a restart")
	// Fresh snapshots again: the log dir is still full, protected again.
	passAfter(t, e, clock, time.Second, full())
	passAfter(t, e, clock, time.Second, full())
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] || len(f.records.Agents[1].Held()) == 0 {
		t.Fatalf("not protected again on trusted inputs: bindings %v, record %+v", f.acls, f.records.Agents[1])
	}
}
