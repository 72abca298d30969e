package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7 with R8.8 (simulation class ledger_reshape with duplicate_agent,
// seed 50): two instances for broker 1; pod-a protects, pod-b reads its
// record and stands by. The ownership topic is reshaped; pod-a dies and
// restarts while it is lost (so the new process knows none of its
// earlier claims), and the topic is repaired (deleted, created again
// empty). pod-b is the only process that remembers the record: it
// writes it back (into pod-a's new record when that is there first), and
// the bindings are lifted on calm. Before the fix pod-b skipped its own
// broker's key, where only its own writes are restored: no record named
// the bindings, they looked like the operator's and stayed for good.
func TestR8_7SecondInstanceWritesBackTheRecordTheLedgerLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		// firstWrite: the restarted pod-a writes its new record before
		// pod-b's first pass on the repaired topic.
		firstWrite bool
	}{{"record missing", false}, {"new record first", true}} {
		t.Run(tc.name, func(t *testing.T) {
			full, calm := protectSnaps()
			f := newFakeAdmin(full())
			clock := &clockAt{t0}
			newAs := func(instance string) *Enforcer {
				cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
				e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{
					Snapshots: &staticSource{snap: calm(), ch: make(chan struct{}, 1)}, Admin: f, Clock: clock,
					Evidence: newFakeEvidence(calm()), Instance: instance})
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			a, b := newAs("pod-a"), newAs("pod-b")
			for range 15 { // past a lease: pod-a's records are no longer Fresh
				passAt(t, a, clock, full())
				passAt(t, b, clock, full())
				clock.t = clock.t.Add(time.Second)
			}
			if r := f.records.Agents[1]; !f.acls[denyAll("a")] || r.Instance != "pod-a" || r.Fresh {
				t.Fatalf("the test needs pod-a protecting, not Fresh: %v %+v", f.acls, r)
			}
			// Reshaped: pod-a dies and restarts; both read the lost ledger.
			f.ledgerErr = ledger.ErrLedgerLost
			a = newAs("pod-a")
			for range 3 {
				_ = tryPassAfter(t, a, clock, time.Second, calm())
				_ = tryPassAfter(t, b, clock, 0, calm())
			}
			// Repaired: deleted and created again, empty.
			f.ledgerErr, f.records = nil, ledger.NewRecords()
			clock.t = clock.t.Add(time.Second)
			if tc.firstWrite {
				_ = tryPassAfter(t, a, clock, 0, calm())
				if r, ok := f.records.Agents[1]; !ok || !r.Fresh || len(r.ACLTopics()) != 0 {
					t.Fatalf("the test needs pod-a's new record, Fresh and without claims: %+v", f.records.Agents)
				}
			}
			_ = tryPassAfter(t, b, clock, 0, calm())
			if !f.records.Agents[1].Claims() {
				t.Fatalf("R8.7/pod-b did not write back the record the ledger lost: %+v", f.records.Agents[1])
			}
			for range 30 {
				_ = tryPassAfter(t, a, clock, time.Second, calm())
				_ = tryPassAfter(t, b, clock, 0, calm())
			}
			if len(f.acls) != 0 {
				t.Errorf("R8.7/bindings left after the repair, claimed by a record only pod-b remembered: %v", f.acls)
			}
		})
	}
}

// R8.7 (simulation class ledger_reshape, seeds 141, 261, 349, 596, 902,
// 1032, 1152, 1159, 1314, 1382, 1391: the cordons, quota, bindings and
// lowered local retention of an agent restarted shortly before the loss):
// broker 2's agent restarts, finds no record of its own and claims within
// a lease of that read, so its record is Fresh. The ledger is lost and
// the agent restarts again; its new process writes a Fresh record without
// those claims. The peer remembers the earlier process's Fresh record and
// writes its claims into the new one (the records name the process's
// start, Record.Started). Before the fix a peer never wrote back the
// claims of a Fresh record: they were the operator's for good.
func TestR8_7PeerWritesBackTheClaimsOfAnEarlierFreshProcess(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, old, clock, full())
	if !f.acls[denyAll("a")] || !f.records.Agents[2].Fresh {
		t.Fatalf("the test needs broker 2 protected by a Fresh record: %v %+v", f.acls, f.records.Agents[2])
	}
	passAfter(t, peer, clock, time.Second, calm()) // it reads broker 2's Fresh record
	// The topic is deleted and created again; broker 2's agent restarts
	// and writes its new record before the peer's next pass.
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	back, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	passAfter(t, back, clock, time.Second, full())
	if r := f.records.Agents[2]; !r.Fresh || len(r.ACLTopics()) != 0 {
		t.Fatalf("the test needs the restarted agent's first record Fresh, without claims: %+v", r)
	}
	passAfter(t, peer, clock, time.Second, calm())
	if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/the peer did not write back the claims of the earlier Fresh process: %+v", f.records.Agents[2])
	}
	for range 4 {
		passAfter(t, back, clock, time.Second, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the earlier process's bindings were forgotten: %v", f.acls)
	}
}

// R8.7 with R8.8 (simulation class ledger_reshape with duplicate_agent,
// seeds 725, 1081, 1224, 1715): broker 1's record, written by instance
// pod-b, is lost with the ledger while pod-b dies; the other instance,
// pod-a, restarts and writes a Fresh record first. The peer writes the
// claims it remembers into it although another instance wrote them: both
// are broker 1's agent, and pod-a would have taken them over with the
// record anyway (R8.8). Before the fix the peer wrote back only claims of
// the same instance: the bindings stayed, the operator's for good.
func TestR8_7PeerWritesAnotherInstancesClaimsIntoTheFreshRecord(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(instance string) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{
			Snapshots: &staticSource{snap: calm(), ch: make(chan struct{}, 1)}, Admin: f, Clock: clock,
			Evidence: newFakeEvidence(calm()), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b := newAs("pod-b")
	peer, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	for range 15 { // past a lease: pod-b's records are no longer Fresh
		passAt(t, b, clock, full())
		clock.t = clock.t.Add(time.Second)
	}
	if r := f.records.Agents[1]; !f.acls[denyAll("a")] || r.Instance != "pod-b" || r.Fresh {
		t.Fatalf("the test needs pod-b protecting, not Fresh: %v %+v", f.acls, r)
	}
	passAt(t, peer, clock, calm()) // it reads broker 1's record
	// pod-b dies; the topic is deleted and created again; pod-a starts
	// and writes its record first.
	f.records = ledger.NewRecords()
	a := newAs("pod-a")
	passAfter(t, a, clock, time.Second, full())
	if r := f.records.Agents[1]; r.Instance != "pod-a" || !r.Fresh || len(r.ACLTopics()) != 0 {
		t.Fatalf("the test needs pod-a's first record, Fresh and without claims: %+v", r)
	}
	passAfter(t, peer, clock, time.Second, calm())
	if got := f.records.Agents[1].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/the peer did not write pod-b's claims into pod-a's record: %+v", f.records.Agents[1])
	}
	for range 4 {
		passAfter(t, a, clock, time.Second, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/pod-b's bindings were forgotten: %v", f.acls)
	}
}
