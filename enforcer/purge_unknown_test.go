package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: an agent restarted while its purge history is unknown (its
// own record does not decode, or the ownership topic is lost) counts the
// caps as spent: it purges no unexpired data, and says so with
// enforcer_blocked{reason="purge_cap"} (found by the simulation, classes
// ledger_garbage, ledger_reshape and ledger_delete with burst: the new
// process, finding no purge history, purged a second hour's cap). A
// healthy ledger with no record of this broker (a fresh install, or the
// topic deleted while the agent was down) holds the purges for a lease
// and a pass (enforcer_blocked{reason="purge_history"}:
// TestR7_3R8_7NoRecordAtStartWaitsForAPeerToWriteItBack).
func TestR7_3R8_7UnknownPurgeHistoryCountsTheCapsSpent(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(f *fakeAdmin)
		// want: unexpired bytes the restarted process purges (a fresh
		// install's whole hour's cap: nothing tells it of the first
		// process's 200, the limit design.md names).
		want float64
	}{
		{"own record undecodable", func(f *fakeAdmin) {
			delete(f.records.Agents, 1)
			f.records.Undecodable = map[int32]int{1: 1}
		}, 0},
		{"ledger lost", func(f *fakeAdmin) { f.ledgerErr = ledger.ErrLedgerLost }, 0},
		{"no record", func(f *fakeAdmin) { f.records = ledger.NewRecords() }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, s, f, cfg := purgeCapSetup()
			e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
			clock.tick(time.Second)
			clock.at(s)
			if err := e.Reconcile(t.Context()); err != nil {
				t.Fatal(err)
			}
			first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
			if first != 200 {
				t.Fatalf("first pass purged %v, want 200 (the pass's cap)", first)
			}
			tc.lose(f)
			clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
			e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
			for range 6 {
				clock.tick(time.Second)
				clock.at(s)
				_ = e.Reconcile(t.Context())
			}
			got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
			if got != tc.want {
				t.Fatalf("R7.3/the restarted process purged %v unexpired bytes (%v before the restart), want %v", got, first, tc.want)
			}
			reason := "purge_cap"
			if tc.name == "no record" {
				reason = "purge_history" // waiting for a peer to write it back
			}
			if blocked := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": reason}); blocked != 1 {
				t.Fatalf("R8.7/enforcer_blocked{reason=%s} is %v, want 1", reason, blocked)
			}
		})
	}
}

// R8.8, R8.7: while the ownership topic is lost, no read can show which
// instance holds the broker: an agent purges unexpired data only while
// the lease it renewed before is live with its margin, then waits with
// enforcer_blocked{reason="lease_fenced"} (found by the simulation,
// ledger_reshape with duplicate_agent, seed 34: both instances for a
// broker purged while the topic was reshaped).
func TestR8_8NoPurgeOnALapsedLeaseWhileTheLedgerIsLost(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	clock.tick(time.Second)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
	if first != 200 {
		t.Fatalf("first pass purged %v, want 200 (the pass's cap)", first)
	}
	f.ledgerErr = ledger.ErrLedgerLost
	clock.tick(50 * time.Second) // past the lease (1m) minus its margin (15s)
	clock.at(s)
	_ = e.Reconcile(t.Context())
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != first {
		t.Fatalf("R8.8/%v unexpired bytes purged on a lapsed lease while the ledger is lost, want none", got-first)
	}
	if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "lease_fenced"}); b != 1 {
		t.Fatalf("R8.8/enforcer_blocked{reason=lease_fenced} is %v, want 1", b)
	}
}
