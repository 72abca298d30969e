package enforcer

import (
	"errors"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
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

// R7.3, R8.7: a process whose first read finds no record of its own
// cannot tell a fresh install from the ownership topic deleted while it
// was down (created again by its own first read, or a peer's): it purges
// no unexpired data for a lease and a pass
// (enforcer_blocked{reason="purge_history"}), in which a live peer
// writes back the record it remembers; found so, the caps count as
// spent. With no record written back, it purges as a fresh install
// after the wait; in a cluster that lists no other broker (no agent
// could write it back) at once (found by the simulation, ledger_delete, seed 530: the
// topic was deleted in the step broker 2's agent restarted, its first
// read created it, and it purged a second hour's cap: 80 MiB in an hour
// against 51 MiB).
func TestR7_3R8_7NoRecordAtStartWaitsForAPeerToWriteItBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writeBack bool
		alone     bool // the cluster lists no other broker
		// want: unexpired bytes the new process purges over two
		// leases (the hour's cap is 500; its earlier process purged
		// 200).
		want float64
	}{
		{"a peer writes the record back", true, false, 0},
		{"fresh install", false, false, 500},
		// No other broker: no agent could write the record back, and
		// the process does not wait (its first pass purges).
		{"single broker", false, true, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, s, f, cfg := purgeCapSetup()
			firstProcessPurges(t, cfg, s, f, clock)
			lost := f.records.Agents[1]
			if !tc.writeBack {
				lost = Record{}
			}
			// Killed; the topic deleted and created again, empty.
			f.records = ledger.NewRecords()
			if tc.alone {
				f.live = []int32{1}
			}
			clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
			e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
			for pass := range 16 { // 160 s: past the lease (1m) and a pass
				clock.tick(DefaultInterval)
				clock.at(s)
				_ = e.Reconcile(t.Context())
				if pass == 0 && !tc.alone {
					if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
						t.Fatalf("R7.3/the new process purged %v unexpired bytes at its first pass, finding no record of its own, want 0", got)
					}
					if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
						t.Fatalf("R7.3/enforcer_blocked{reason=purge_history} is %v, want 1", b)
					}
				}
				if pass == 2 && tc.writeBack {
					// A peer writes back the record it remembers.
					f.mu.Lock()
					lost.Restored = true
					if cur, ok := f.records.Agents[1]; ok {
						lost.Owned = cur.Owned // (the new process's claims; none here)
					}
					f.records.Agents[1] = lost
					f.mu.Unlock()
				}
			}
			if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != tc.want {
				t.Fatalf("R7.3/the new process purged %v unexpired bytes (200 before the restart; hour cap 500), want %v", got, tc.want)
			}
		})
	}
}

// R8.8, R8.7: an instance standing by whose active instance's record
// vanishes (the ownership topic deleted and created again) goes on
// standing by for the lease it last saw renewed: a missing record is a
// lost ledger, not a lease run out, and the active process writes its
// record back from memory meanwhile (found by the simulation,
// ledger_delete with duplicate_agent, seeds 261 and 1097: the standby
// took over at once, with no purge history, beside the running instance
// that had purged 40 MiB, and 64 MiB went in an hour against 51 MiB).
func TestR7_3R8_7StandbyKeepsStandingByWhenTheRecordVanishes(t *testing.T) {
	x := newLeaseFixture(t, 9500, 10*time.Second)
	a, regA := x.instance("pod-a")
	b, regB := x.instance("pod-b")
	x.fill()
	x.clock.tick(time.Second)
	x.pass(a)
	if got := gather(t, regA, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 200 {
		t.Fatalf("pod-a purged %v, want 200 (the pass's cap)", got)
	}
	x.pass(b)
	if !b.prot.standby {
		t.Fatal("pod-b does not stand by beside pod-a's live lease")
	}
	x.f.mu.Lock()
	x.f.records = ledger.NewRecords() // deleted, created again
	x.f.mu.Unlock()
	for range 3 {
		x.clock.tick(10 * time.Second)
		x.pass(b)
		if !b.prot.standby {
			t.Fatal("R8.8/pod-b took over when pod-a's record vanished, within pod-a's lease")
		}
		x.pass(a)
	}
	if got := gather(t, regB, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R8.8/pod-b purged %v unexpired bytes beside pod-a", got)
	}
	if r := x.f.records.Agents[1]; r.Instance != "pod-a" {
		t.Fatalf("R8.7/broker 1's record names %q, want pod-a's written back from memory", r.Instance)
	}
}

// R7.3, R8.7: the wait for this agent's record counts on one ownership
// topic: a topic created again within the wait (deleted by an operator
// and created again by a peer, a duplicate or this agent) starts it again,
// since no peer has had a lease and a pass to write the record back into
// it (found by the simulation, seed 59828 of the default mix: the topic
// was deleted and created again between two of the waiting agent's
// reads, its wait ended on the new, empty topic, and it purged a second
// hour's cap before the peer's write-back landed: 64 MiB in an hour
// against 51 MiB).
func TestR7_3R8_7HistoryWaitStartsAgainOnATopicCreatedAgain(t *testing.T) {
	clock, s, f, cfg := purgeCapSetup()
	f.records.Topic = "topic-1"
	firstProcessPurges(t, cfg, s, f, clock)
	lost := f.records.Agents[1]
	// Killed; the topic deleted and created again, empty.
	f.records = ledger.NewRecords()
	f.records.Topic = "topic-2"
	// The new process's writes fail until its first wait's end (the
	// topic under-replicated): it has written nothing a loss could take,
	// as the agent of the seed, whose calls failed meanwhile.
	f.storeErr = errors.New("not enough replicas")
	clock = &monoClock{wall: clock.wall.Add(10 * time.Second)}
	e, reg, _ := evidenceEnforcer(t, cfg, s, f, newFakeEvidence(s), clock)
	for pass := range 16 { // 160 s: past the lease (1m) and a pass, twice
		clock.tick(DefaultInterval)
		clock.at(s)
		_ = e.Reconcile(t.Context())
		f.mu.Lock()
		switch pass {
		case 4: // 50 s: within the wait (it ends at 80 s), the topic is created again
			f.records = ledger.NewRecords()
			f.records.Topic = "topic-3"
		case 7: // 80 s: the first wait's end; the writes land again
			f.storeErr = nil
		case 8: // 90 s: a peer that remembers the record writes it back
			lost.Restored = true
			f.records.Agents[1] = lost
		}
		f.mu.Unlock()
		if pass == 7 { // 80 s: the first wait's end
			if b := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "purge_history"}); b != 1 {
				t.Errorf("R7.3/enforcer_blocked{reason=purge_history} is %v a lease and a pass after the first read, the topic created again 30 s before, want 1", b)
			}
		}
	}
	if got := gather(t, reg, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); got != 0 {
		t.Fatalf("R7.3/the new process purged %v unexpired bytes (200 before the restart; hour cap 500), want 0: its wait ended on a topic no peer had had a lease and a pass to write the record back into", got)
	}
}
