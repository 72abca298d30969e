package enforcer

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7 with R8.8 (simulation, seeds 61012 and 65964): broker 2's
// active instance lowers a tiered topic's local retention and dies; the
// broker's other instance, in observe mode, takes its record over at a
// read, but its pass fails before it writes (nothing lifted), and the
// ownership topic is deleted and created again. The observe-mode
// instance writes its record on the empty topic first. That record names
// no write of the dead instance (it holds none of its claims), so the
// peer that remembers the dead instance's record writes its claim back,
// and the value is restored. Before the fix the record named the dead
// instance's write as taken over: the peer wrote nothing back, and the
// value stayed lowered in no record.
func TestR7_4R8_7ObserveInstanceNamesNoWriteTheTopicLostBeforeItsLift(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	as := func(name string, enabled bool) *Enforcer {
		c := cfg
		c.Enabled, c.BrokerID = enabled, new(int32(2))
		e, err := New(c, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(),
			Deps{Snapshots: &staticSource{snap: tieredSnap(870), ch: make(chan struct{}, 1)}, Admin: f, Clock: clock, Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	calm := func() *agent.Snapshot { return tieredSnap(100) }
	active := as("pod-a", true)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, active, clock, tieredSnap(870))
	passAt(t, peer, clock, calm())
	clock.t = clock.t.Add(time.Second)
	observe := as("pod-b", false) // started later: another process
	for range 20 {
		passAt(t, active, clock, tieredSnap(870))
		passAt(t, observe, clock, tieredSnap(870))
		passAt(t, peer, clock, calm())
		clock.t = clock.t.Add(time.Second)
	}
	if v, ok := localRetention(f, "tiered"); !ok || len(f.records.Agents[2].ConfigClaims()) != 1 || f.records.Agents[2].Instance != "pod-a" {
		t.Fatalf("the test needs pod-a's claim on the lowered value %q: %+v", v, f.records.Agents[2])
	}
	// pod-a dies; pod-b takes its record over at the read of the pass
	// that finds the lease run out, and fails the write of that pass.
	for observe.prot.standby {
		clock.t = clock.t.Add(time.Second)
		f.storeErr = errors.New("NOT_ENOUGH_REPLICAS")
		_ = tryPassAfter(t, observe, clock, 0, tieredSnap(870))
		f.storeErr = nil
		if observe.prot.standby {
			passAt(t, peer, clock, calm())
		}
	}
	if r := f.records.Agents[2]; r.Instance != "pod-a" || len(r.ConfigClaims()) != 1 {
		t.Fatalf("the test needs pod-a's record, unlifted, when pod-b takes it over: %+v", r)
	}
	f.mu.Lock()
	f.records = ledger.NewRecords() // deleted and created again
	f.mu.Unlock()
	passAfter(t, observe, clock, time.Second, tieredSnap(870))
	if r := f.records.Agents[2]; r.Instance != "pod-b" || r.Claims() {
		t.Fatalf("the test needs pod-b's record, without claims, on the empty topic: %+v", r)
	}
	for range 30 {
		passAt(t, peer, clock, calm())
		passAfter(t, observe, clock, time.Second, calm())
	}
	if v, ok := localRetention(f, "tiered"); ok {
		t.Errorf("R7.4/local.retention.bytes of tiered is %q, want the operator's (not set): the dead instance's claim was in no record", v)
	}
	for id, r := range f.records.Agents {
		if len(r.Configs) > 0 {
			t.Errorf("R8.5/broker %d's record still holds %+v", id, r.Configs)
		}
	}
}
