package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

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
