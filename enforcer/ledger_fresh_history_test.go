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
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: 10 * time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: time.Minute}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, old, clock, full())
	passAfter(t, peer, clock, time.Second, calm())
	f.records = ledger.NewRecords() // the topic deleted and created again
	back, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	passAfter(t, back, clock, 7*time.Second, full())
	passAfter(t, back, clock, time.Second, calm())
	clock.t = t0.Add(11 * time.Second)
	passAt(t, peer, clock, calm())
	if r := f.records.Agents[2]; !r.Restored || len(r.ACLTopics()) != 2 {
		t.Fatalf("the test needs the peer writing the earlier process's claims into the Fresh record, marked Restored: %+v", r)
	}
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
