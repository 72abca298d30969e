package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: an agent restarted while the ownership topic was lost
// (deleted, created again) writes its first record, Fresh, before any
// peer can write its lost record back, and a peer never writes a record
// over one that is there. The peer that remembers the lost record writes
// its purge history into the Fresh one, as it does the claims, marked
// Restored; the agent then counts the caps as spent instead of purging
// as a fresh install after its wait (found by the simulation,
// ledger_delete, seeds 232, 1427, 1533 and 1825: a second hour's cap
// went, 64 to 72 MiB in an hour against 51 MiB).
func TestR7_3R8_7PeerWritesThePurgeHistoryIntoAFreshRecord(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	_, calm := protectSnaps()
	peer, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	clock.tick(time.Second)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if first := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); first != 200 {
		t.Fatalf("first pass purged %v, want 200 (the pass's cap)", first)
	}
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Killed; the topic deleted and created again, empty; the agent
	// restarts and writes its first record before the peer's next pass.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	clear(f.acls) // (lifted meanwhile: the new process claims its own)
	f.mu.Unlock()
	e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	clock.tick(DefaultInterval)
	clock.at(s)
	_ = e.Reconcile(t.Context())
	if r := f.records.Agents[1]; !r.Fresh || len(r.Purged) != 0 || len(r.ACLTopics()) != 1 {
		t.Fatalf("the test needs the restarted agent's first record Fresh, with its claim and no purges: %+v", r)
	}
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := f.records.Agents[1]; len(r.Purged) != 1 || r.Purged[0].Bytes != 200 || !r.Restored {
		t.Fatalf("R7.3/the peer did not write the purge history it remembers into the Fresh record: %+v", r)
	}
	for range 16 { // 160 s: past the wait (a lease and a pass)
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		_ = peer.Reconcile(t.Context())
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the new process purged %v unexpired bytes (200 before the restart; hour cap 500), want 0 (the caps spent: its history came from a peer's copy)", got)
	}
}

// R7.3, R8.7 with R8.8: an instance standing by writes back the peers'
// records the ownership topic lost, as any agent does: when the active
// instance of its broker is dead, it may be the only live process that
// remembers them (found by the simulation, ledger_delete with
// duplicate_agent, seed 1427: broker 1's active instance was dead, the
// standby skipped broker 3's record, broker 3's restarted agent wrote a
// Fresh record without its purge history and purged a second hour's cap,
// 72 MiB against 51 MiB).
func TestR7_3R8_7StandbyWritesThePeersRecordsTheLedgerLost(t *testing.T) {
	x := newLeaseFixture(t, 9500, 10*time.Second)
	a, _ := x.instance("pod-a")
	b, _ := x.instance("pod-b")
	x.fill()
	// Broker 2's agent purged in the last hour; its record says so.
	x.f.mu.Lock()
	peer := Record{BrokerID: 2, Instance: "agent-2", Renewed: x.clock.wall, LeaseMs: time.Minute.Milliseconds(), Updated: x.clock.wall,
		Started: x.clock.wall.Add(-time.Hour),
		Purged:  []PurgeBucket{{LogDir: "/data/kafka-2", End: x.clock.wall.Truncate(ledger.PurgeBucketWidth).Add(ledger.PurgeBucketWidth), Bytes: 400}}}
	x.f.records.Agents[2] = peer
	x.f.mu.Unlock()
	x.clock.tick(time.Second)
	x.pass(a)
	x.pass(b)
	if !b.prot.standby {
		t.Fatal("the test needs pod-b standing by beside pod-a's live lease")
	}
	// pod-a dies; the topic is deleted and created again; broker 2's
	// agent restarts and writes its first record (Fresh, no history).
	x.f.mu.Lock()
	x.f.records = ledger.NewRecords()
	x.f.records.Agents[2] = Record{BrokerID: 2, Instance: "agent-2", Fresh: true, Started: x.clock.wall, Updated: x.clock.wall}
	x.f.mu.Unlock()
	x.clock.tick(10 * time.Second)
	x.pass(b)
	if !b.prot.standby {
		t.Fatal("the test needs pod-b still standing by (pod-a's lease, last seen renewed, runs)")
	}
	if r := x.f.records.Agents[2]; !ledger.SamePurges(r.Purged, peer.Purged) || !r.Restored {
		t.Fatalf("R7.3/the standby did not write broker 2's purge history it remembers into broker 2's Fresh record: %+v", r)
	}
}

// R7.3, R8.7 (simulation class ledger_delete, seed 930): the agent
// restarted while the ownership topic was lost found no record of its
// own, no peer wrote one back within its wait (their calls failed), and
// it purged as a fresh install. A peer then writes its earlier process's
// claims into its record (Record.WrittenBack: the record is past its
// Fresh window): it was no fresh install, and what that process purged
// while the ledger was lost is in no record. The caps count as spent, as
// for a record a peer wrote back at the first read. Before the fix the
// agent took the claims and went on purging: 64 MiB in an hour against
// 51 MiB.
func TestR7_3R8_7EarlierProcessWrittenBackAfterTheWaitCountsTheCapsSpent(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	_, calm := protectSnaps()
	peer, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	clock.tick(time.Second)
	clock.at(s)
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	// It protected topic z too (its partitions since moved away).
	f.mu.Lock()
	r := f.records.Agents[1]
	r.Owned = append(r.Owned, owns(shapeDenyAll, "z"))
	f.records.Agents[1], f.acls[denyAll("z")] = r, true
	f.mu.Unlock()
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Killed; the topic deleted and created again, empty; the agent
	// restarts, and the peer reads nothing until the agent's wait ended.
	f.mu.Lock()
	f.records = ledger.NewRecords()
	delete(f.acls, denyAll("a"))
	f.mu.Unlock()
	clock.tick(time.Second)
	e, reg, _ = evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	var before float64
	for range 20 { // past the wait (a lease and a pass), to its first purge
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		if before = gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); before > 0 {
			break
		}
	}
	if r := f.records.Agents[1]; r.Fresh || before == 0 || before >= 500 {
		t.Fatalf("the test needs the new process's record past its Fresh window and its hour cap not spent: %v %+v", before, r)
	}
	if err := peer.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := f.records.Agents[1]; len(r.WrittenBack) != 1 {
		t.Fatalf("the test needs the peer writing the earlier process's claims into the record: %+v", r)
	}
	for range 6 {
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		_ = peer.Reconcile(t.Context())
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != before {
		t.Fatalf("R7.3/the new process purged %v unexpired bytes more once its earlier process's claims were written back (that process purged 200; hour cap 500), want 0", got-before)
	}
}
