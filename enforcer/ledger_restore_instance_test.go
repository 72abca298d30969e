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
