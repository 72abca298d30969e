package enforcer

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: the ownership topic is lost (reshaped) after an agent
// purged; its peer's process starts while the topic is lost, so it never
// read that agent's record; the agent dies, the topic is created again,
// empty, and the agent restarts. No live process remembers its record,
// and no peer writes it back within its wait, but the peer's record says
// the topic was lost within the day (Record.LedgerLost): the restarted
// agent counts the caps as spent instead of purging as a fresh install
// (found by the simulation, seed 2555 of the default mix: broker 2's
// agent purged 56 MiB, the ledger was reshaped, every peer restarted
// during the loss, the agent died, the topic was deleted and created
// again, and the agent's next process purged 16 MiB more as a fresh
// install: 72 MiB in an hour against 51 MiB).
func TestR7_3NoRecordAfterALossNoPeerRememberedCountsTheCapsSpent(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	firstProcessPurges(t, cfg, s, f, clock)
	// The topic is reshaped; broker 2's agent starts while it is lost.
	f.mu.Lock()
	f.ledgerErr = ledger.ErrLedgerLost
	f.mu.Unlock()
	_, calm := protectSnaps()
	peer, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	clock.tick(DefaultInterval)
	clock.at(s)
	_ = peer.Reconcile(t.Context())
	// Agent 1 dies; the topic is deleted and created again, empty.
	f.mu.Lock()
	f.ledgerErr = nil
	f.records = ledger.NewRecords()
	clear(f.acls)
	f.mu.Unlock()
	clock.tick(DefaultInterval)
	clock.at(s)
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r, ok := f.records.Agents[2]; !ok || r.LedgerLost.IsZero() {
		t.Fatalf("R7.3/the peer that found the topic lost did not say so in its record: %+v", r)
	}
	if _, ok := f.records.Agents[1]; ok {
		t.Fatal("the test needs no record of broker 1 written back (no live process remembers it)")
	}
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	for range 16 { // 160 s: past the wait (a lease and a pass)
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		_ = peer.Reconcile(t.Context())
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the new process purged %v unexpired bytes as a fresh install (200 before the loss; hour cap 500), want 0 (the caps spent: a peer's record says the topic was lost within the day)", got)
	}
	if blocked := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_cap"}); blocked != 1 {
		t.Fatalf("R7.3/enforcer_blocked{reason=purge_cap} is %v, want 1", blocked)
	}
}
