package enforcer

import (
	"testing"
	"time"
)

// R7.3, R8.7: a record a peer wrote back after the ownership topic lost it
// is as that peer last read it: purges its agent recorded after that read
// are not in it. The agent's next process, finding its record so restored
// (Record.Restored), counts the caps as spent instead of trusting the
// copy's history (found by the simulation, ledger_delete, seed 1271:
// broker 3's agent purged 24 MiB twice, was killed, the topic deleted, a
// peer wrote back its record as read between the two purges, and the new
// process purged 16 MiB more: 64 MiB in an hour against 51 MiB).
func TestR7_3R8_7RecordAPeerWroteBackCountsTheCapsSpent(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	var copied Record // the record as a peer read it after the first pass
	for pass := range 2 {
		clock.tick(time.Second)
		clock.at(s)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		if pass == 0 {
			copied = f.records.Agents[1]
		}
	}
	first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)
	if first != 400 {
		t.Fatalf("two passes purged %v, want 400 (twice the pass's cap)", first)
	}
	// Killed; the topic deleted and created again; a peer writes back
	// the copy it read after the first pass (200 purged, not 400).
	copied.Restored = true
	f.records.Agents[1] = copied
	clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
	e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	for range 6 {
		clock.tick(time.Second)
		clock.at(s)
		_ = e.Reconcile(t.Context())
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the process restored from a peer's copy purged %v unexpired bytes (%v before the restart; hour cap 500), want 0", got, first)
	}
	if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); b != 1 {
		t.Fatalf("R7.3/enforcer_blocked{reason=purge_cap} is %v, want 1", b)
	}
	if r := f.records.Agents[1]; r.Restored {
		t.Fatalf("R8.7/the agent's own write left its record marked as a peer's copy")
	}
}
