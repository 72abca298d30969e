package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.3, R8.7: the peer's write-back of
// TestR8_7FreshRecordKeepsThePeersWriteBackWithinAnInterval is marked
// Restored (the copy may lack purges recorded after the peer's read):
// the restarted agent, waiting for its purge history (restoreHistory),
// counts its caps as spent once it reads it. Switching protection on (a
// topic more) within the interval of the peer's write, it writes its
// record before it reads the ledger again, keeping the claims the peer
// wrote into it (lease fencing, readLeaseHolder); that write cleared the
// mark, so the next read found only the agent's own record, and after
// its wait the agent purged as a fresh install. The mark now stays until
// the agent's read has counted the caps; its next writes clear it.
func TestR7_3R8_7FreshAgentSwitchingOnKeepsThePeersRestoredMark(t *testing.T) {
	back, f, clock, cfg, full := restartedWithPeersCopy(t)
	// Within the interval: switching on, with a topic more to protect.
	O := agent.StateOpen
	more := func() *agent.Snapshot {
		s := full()
		s.LogDirs[0].Partitions = append(s.LogDirs[0].Partitions, new(part("c", 0, 0, 10, seg(0, 1, O))))
		return s
	}
	passAfter(t, back, clock, time.Second, more())
	if r := f.records.Agents[2]; !r.Restored || len(r.ACLTopics()) != 3 {
		t.Errorf("R7.3/the switching-on write dropped the peer's Restored mark before the agent read it: %+v", r)
	}
	for range 2 {
		passAfter(t, back, clock, cfg.Interval, more())
	}
	if r := f.records.Agents[2]; len(r.Purged) == 0 || r.Restored {
		t.Errorf("R7.3/the restarted agent did not count its purge caps as spent once it read its record (or its own writes left the mark): %+v", r)
	}
}

// restartedWithPeersCopy: broker 2's agent protected topics a and b and
// restarted after the ownership topic was deleted and created again; its
// new process switched protection on (every binding in place), then off
// for a pass, and within its interval the peer wrote the earlier
// process's claims into its Fresh record, marked Restored.
func restartedWithPeersCopy(t *testing.T) (back *Enforcer, f *fakeAdmin, clock *clockAt, cfg Config, full func() *agent.Snapshot) {
	t.Helper()
	full, calm := protectSnaps()
	f = newFakeAdmin(full())
	clock = &clockAt{t0}
	cfg = Config{Enabled: true, Interval: 10 * time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: time.Minute}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, old, clock, full())
	passAfter(t, peer, clock, time.Second, calm())
	f.records = ledger.NewRecords() // the topic deleted and created again
	back, _ = enforcerAs(t, 2, cfg, full(), f, clock)
	passAfter(t, back, clock, 7*time.Second, full())
	passAfter(t, back, clock, time.Second, calm())
	clock.t = t0.Add(11 * time.Second)
	passAt(t, peer, clock, calm())
	if r := f.records.Agents[2]; !r.Restored || len(r.ACLTopics()) != 2 {
		t.Fatalf("the test needs the peer writing the earlier process's claims into the Fresh record, marked Restored: %+v", r)
	}
	return back, f, clock, cfg, full
}

// R7.3, R8.7: a restarted agent whose switch-on finds every binding it
// wants already in place (its earlier process's, which its cached
// records do not attribute: R8.6 counts them as an operator's) creates
// nothing and writes no record. Every pass was taken for one switching
// on, which uses the cached records, so for a lease it never read the
// peer's write-back of its earlier record: it did not take back that
// process's claims, and its wait for the purge history ended as a fresh
// install, no cap counted as spent (found while testing
// TestR7_3R8_7FreshAgentSwitchingOnKeepsThePeersRestoredMark). The
// cached records now serve a switch-on for one interval; then the
// ledger is read when due.
func TestR7_3R8_7SwitchOnWithEverythingInPlaceReadsThePeersWriteBack(t *testing.T) {
	back, f, clock, cfg, full := restartedWithPeersCopy(t)
	// Switching on again, every binding in place: nothing to create.
	passAfter(t, back, clock, time.Second, full())
	for range 2 {
		passAfter(t, back, clock, cfg.Interval, full())
	}
	if w := back.prot.written; w == nil || len(w.ACLTopics()) != 2 {
		t.Errorf("R8.7/two intervals after switching on, the agent has not taken back its earlier process's claims: %+v", w)
	}
	if r := f.records.Agents[2]; len(r.Purged) == 0 || r.Restored || !back.prot.purgesRestored {
		t.Errorf("R7.3/two intervals after switching on, the agent has not counted its purge caps as spent from the peer's copy: %+v", r)
	}
}
