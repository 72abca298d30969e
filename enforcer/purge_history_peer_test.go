package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: a process whose first read finds no record of its own waits
// a lease and a pass for a peer to write its record back; an empty topic
// at the end of that wait is no evidence of a fresh install: no peer has
// had a pass on the topic as it is. The wait goes on until a peer's own
// record shows (peerWrote: with the loss its agent saw, the caps count as
// spent), at most a day (then no purge of an earlier process is in either
// window). Found by the simulation, seed 59828 of the default mix:
// agent-1 restarted, its first read found the topic missing and created
// it; agent-2 wrote agent-1's record back (40 MiB purged) a step later,
// but agent-1's reads failed until the topic had been deleted and created
// again, empty; its read after the lease and a pass found it so, and it
// purged 24 MiB as a fresh install: 64 MiB in the hour against 51 MiB.
func TestR7_3R8_7EmptyTopicAtTheWaitsEndIsNoFreshInstall(t *testing.T) {
	for _, tc := range []struct {
		name string
		// peer: broker 2's agent writes its own record at the 13th pass
		// (saying the topic was lost, as its agent saw).
		peer bool
		// want: unexpired bytes the new process purges (its earlier
		// process purged 200; the hour's cap is 500, the pass's 200).
		want float64
	}{
		{"a peer's record shows the loss late", true, 0},
		{"no peer's record for a day", false, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, s, f, cfg := purgeCapSetup()
			e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
			clock.tick(time.Second)
			clock.at(s)
			if err := e.Reconcile(t.Context()); err != nil {
				t.Fatal(err)
			}
			if first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); first != 200 {
				t.Fatalf("first pass purged %v, want 200 (the pass's cap)", first)
			}
			// Killed; the topic deleted and created again, empty; the
			// peers' passes fail (they write nothing) past the new
			// process's lease and a pass.
			f.records = ledger.NewRecords()
			clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
			e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
			for pass := range 20 { // 200 s: the lease (1m) and a pass, twice over
				clock.tick(DefaultInterval)
				clock.at(s)
				if pass == 12 && tc.peer {
					f.mu.Lock()
					f.records.Agents[2] = Record{BrokerID: 2, Instance: "agent-2", Started: clock.wall, Updated: clock.wall, Renewed: clock.wall, LedgerLost: clock.wall.Add(-time.Minute)}
					f.mu.Unlock()
				}
				_ = e.Reconcile(t.Context())
				if pass == 11 {
					if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
						t.Fatalf("R7.3/the new process purged %v unexpired bytes past its wait with the topic empty (no peer's record in it), want 0", got)
					}
					if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
						t.Fatalf("R7.3/enforcer_blocked{reason=purge_history} is %v with the topic empty past the wait, want 1", b)
					}
				}
			}
			if tc.peer {
				if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); b != 1 {
					t.Fatalf("R7.3/enforcer_blocked{reason=purge_cap} is %v once a peer's record says the topic was lost, want 1 (the caps counted spent)", b)
				}
			} else {
				if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
					t.Fatalf("R7.3/the new process purged %v unexpired bytes within the day with no peer's record, want 0", got)
				}
				clock.tick(24 * time.Hour)
				for range 6 {
					clock.tick(DefaultInterval)
					clock.at(s)
					_ = e.Reconcile(t.Context())
				}
			}
			if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != tc.want {
				t.Fatalf("R7.3/the new process purged %v unexpired bytes, want %v", got, tc.want)
			}
		})
	}
}
