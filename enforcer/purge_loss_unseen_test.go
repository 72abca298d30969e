package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: the ownership topic is deleted and created again, empty,
// between two reads of a peer, which never sees it missing: it finds the
// record of broker 1's agent, which it read before, gone from the topic.
// That is a loss of the topic like one it saw missing, and its record
// says so (Record.LedgerLost). Broker 1's agent purged, then died; the
// peer wrote its record back (a copy, Restored), and an observe-mode
// standby took that copy over, its own record dropping the copy's mark
// (PurgesUnknown, as every observe-mode record). The agent's next process
// takes over from that record and waits for its history; at the wait's
// end, with a record saying the topic was lost within the day, it counts
// the caps as spent instead of purging as a fresh install (found by the
// simulation, seed 23883 of the default mix: 56 MiB purged, 48 MiB in the
// copy, 8 MiB more as a fresh install: 64 MiB in the hour against 51).
func TestR7_3R8_7LossSeenOnlyAsAnEmptiedTopicIsMarkedInTheRecord(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	e, _, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	clock.tick(time.Second)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	full, _ := protectSnaps()
	peer, _ := enforcerAs(t, 2, cfg, full(), f, clock) // it protects: its record is written
	clock.tick(DefaultInterval)
	clock.at(s)
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r, ok := peer.prot.records.Agents[1]; !ok || len(r.Purged) == 0 {
		t.Fatalf("the test needs the peer remembering broker 1's record with its purges: %+v", r)
	}
	// Broker 1's agent dies; the topic is deleted and created again
	// between two reads of the peer.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.mu.Unlock()
	clock.tick(DefaultInterval)
	clock.at(s)
	for range 3 { // its record, renewed, says so
		if err := peer.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		clock.tick(DefaultInterval)
		clock.at(s)
	}
	f.mu.Lock()
	copied, own := f.records.Agents[1], f.records.Agents[2]
	f.mu.Unlock()
	if !copied.Restored {
		t.Fatalf("the test needs the peer writing broker 1's record back: %+v", copied)
	}
	if own.LedgerLost.IsZero() {
		t.Errorf("R7.3/the peer that found a record it read gone from the topic did not say the topic was lost in its record: %+v", own)
	}
	// An observe-mode standby took the copy over: its record holds the
	// copy's purges, not its mark.
	f.mu.Lock()
	obs := copied
	obs.Instance, obs.Restored, obs.PurgesUnknown = "pod-b", false, true
	obs.Updated, obs.Renewed = clock.Now(), clock.Now()
	f.records.Agents[1] = obs
	f.mu.Unlock()
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	for range 20 { // 200 s: the standby's lease, then the wait (a lease and a pass)
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		_ = peer.Reconcile(t.Context())
	}
	if e.prot.standby {
		t.Fatal("the test needs broker 1's new process taking over from the observe-mode record")
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Errorf("R7.3/the new process purged %v unexpired bytes as a fresh install (200 before the loss, the copy's; hour cap 500), want 0 (the caps spent: a peer's record says the topic was lost within the day)", got)
	}
}
