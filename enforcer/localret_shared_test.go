package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.5, R7.4: a lifted claim whose own value is in place stays in the
// record (releasing) while another live record holds the key, so the
// value in place stays one a claim names, with the operator's value it
// lowered. Found by the simulation, tiered_shared with call faults,
// seed 99: broker 3 lowered a topic with no override, an operator then
// set 200 MiB, which broker 3 never read (its passes failed), and broker
// 1 lowered that. The operator's lift of the topic was written for
// broker 1 before broker 3; broker 1 dropped its claim without handing
// the key back (broker 3's live claim held it), and its value was then
// no claim's: broker 3's claim, lifted in turn, took it for an
// operator's and left it lowered for good.
func TestR8_5LiftedConfigClaimKeepsItsOriginalWhileAnotherHoldsTheKey(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Minute}}
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(870), f, clock)
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(1020), f, clock)
	passAt(t, b3, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" {
		t.Fatalf("broker 3 did not lower: %q", v)
	}
	const operators = "209715200"
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = operators
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	passAt(t, b1, clock, tieredSnap(1020))
	if v, _ := localRetention(f, "tiered"); v != "300" {
		t.Fatalf("broker 1 did not lower the operator's value: %q", v)
	}
	// The operator's lift of the topic, written for broker 1 only (its
	// write for broker 3 failed).
	lift := func(id int32) {
		t.Helper()
		if err := f.StoreLift(t.Context(), Lift{ID: ledger.NewLiftID(LiftOperator, clock.t), BrokerID: id, Kind: LiftOperator,
			By: "alice", At: clock.t, Topics: []string{"tiered"}}); err != nil {
			t.Fatal(err)
		}
	}
	lift(1)
	clock.t = clock.t.Add(time.Second)
	passAt(t, b1, clock, tieredSnap(1020))
	if v, _ := localRetention(f, "tiered"); v != "300" {
		t.Fatalf("R8.5/broker 1's lowered value replaced while broker 3's claim holds the key: %q", v)
	}
	if cs := f.records.Agents[1].ReleasingConfigs(); len(cs) != 1 {
		t.Fatalf("R8.5/broker 1's record holds %+v, want its claim releasing", f.records.Agents[1].Configs)
	}
	// Nothing to hand back (broker 3's claim names another original):
	// the releasing claim waits, with no write or release every pass
	// (after the one that gives up the topic's DENY binding, lifted too).
	clock.t = clock.t.Add(time.Second)
	passAt(t, b1, clock, tieredSnap(1020))
	f.mu.Lock()
	writes := f.writes
	f.mu.Unlock()
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, b1, clock, tieredSnap(1020))
	}
	f.mu.Lock()
	more := f.writes - writes
	f.mu.Unlock()
	if more != 0 {
		t.Errorf("%d writes in 3 passes of broker 1 waiting for broker 3's claim", more)
	}
	// The operator's lift written for broker 3 too, then broker 3's pass:
	// the operator's 200 MiB is back.
	lift(3)
	clock.t = clock.t.Add(time.Second)
	passAt(t, b3, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != operators {
		t.Fatalf("R7.4/local.retention.bytes %q after both claims were lifted, want the operator's %s", v, operators)
	}
	// Read back restored, both claims leave the records (two-phase
	// release).
	clock.t = clock.t.Add(time.Second)
	passAt(t, b1, clock, tieredSnap(1020))
	passAt(t, b3, clock, tieredSnap(870))
	for _, id := range []int32{1, 3} {
		if cs := f.records.Agents[id].Configs; len(cs) != 0 {
			t.Errorf("R8.5/broker %d's record still holds %+v", id, cs)
		}
	}
	if v, _ := localRetention(f, "tiered"); v != operators {
		t.Fatalf("R7.4/local.retention.bytes %q, want the operator's %s", v, operators)
	}
}

// R8.5, R7.4: a claim never takes a value that a claim made on another
// operator's value holds: with one number set by both, the value in
// place would not say which original to restore. Found by the
// simulation, tiered_shared with call faults, seed 3: brokers 2 and 3
// lowered a topic with no override, an operator set 200 MiB, and broker
// 1 lowered that to broker 2's number. Broker 2, calm, took the value for
// its own and handed the key back to broker 3's lower value; broker 1
// then read a value of a claim made on no override, and the override
// was deleted in the end, over the operator's 200 MiB.
func TestR8_5ClaimsOnDifferentOriginalsNeverShareAValue(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Minute}}
	b1, _ := enforcerAs(t, 1, cfg, tieredSnap(870), f, clock)
	b2, _ := enforcerAs(t, 2, cfg, tieredSnap(870), f, clock)
	b3, _ := enforcerAs(t, 3, cfg, tieredSnap(1020), f, clock)
	passAt(t, b2, clock, tieredSnap(870))
	passAt(t, b3, clock, tieredSnap(1020))
	if v, _ := localRetention(f, "tiered"); v != "300" {
		t.Fatalf("brokers 2 and 3 did not lower: %q", v)
	}
	const operators = "209715200"
	f.mu.Lock()
	f.configs["tiered"][LocalRetentionBytesKey] = operators
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	passAt(t, b1, clock, tieredSnap(870))
	v1, _ := localRetention(f, "tiered")
	if v1 == operators || v1 == "400" {
		t.Errorf("R8.5/broker 1 set %q: broker 2's value, claimed on no override", v1)
	}
	// Calm, in turn: the operator's 200 MiB is what comes back.
	for i := range 3 {
		clock.t = clock.t.Add(time.Second)
		for _, e := range []*Enforcer{b2, b1, b3} {
			passAt(t, e, clock, tieredSnap(100))
		}
		if v, _ := localRetention(f, "tiered"); i == 0 && v != v1 && v != operators {
			t.Fatalf("R8.5/broker 1's value %s, made on the operator's 200 MiB, replaced by %q", v1, v)
		}
	}
	if v, set := localRetention(f, "tiered"); v != operators {
		t.Fatalf("R8.5/local.retention.bytes %q (set %v) after every agent calmed, want the operator's %s", v, set, operators)
	}
	for _, id := range []int32{1, 2, 3} {
		if cs := f.records.Agents[id].Configs; len(cs) != 0 {
			t.Errorf("R8.5/broker %d's record still holds %+v", id, cs)
		}
	}
}
