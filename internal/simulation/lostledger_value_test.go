package simulation

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// A peer's older copy of a lost record that claims the lost claim's key
// with another value (the owner's earlier lowering) does not bring the
// lost claim back: a lift of the copy restores nothing over the lost
// claim's value. Its writer's process alone remembers it; killed before
// it writes its record again, it takes the claim with it: unattributed
// (R8.4), and I1 waives it, as for a copy without the key (found by the
// simulation, seed 33679 of the default mix: the copy claimed 4751360,
// the lost record 4792320, and I1 took 4792320 for a guard's value left).
// Written again by that process first, the record is done with, and
// nothing is waived.
func TestLostClaimBackOnlyWithAnotherValueInAnOlderCopyIsUnattributed(t *testing.T) {
	for _, rewrites := range []bool{false, true} {
		s := newTestSim(t)
		s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
		s.decodable = map[int32]ledger.Record{}
		v, earlier := "4792320", "4751360"
		if err := s.c.Admin(3, "agent-3").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
			t.Fatal(err)
		}
		started := start.Add(-time.Minute)
		claim := func(value string) []ledger.ConfigClaim {
			return []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: value}}
		}
		lost := ledger.Record{BrokerID: 3, Started: started, Configs: claim(v)}
		if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), lost); err != nil {
			t.Fatal(err)
		}
		s.loseLedger()
		s.lost.holders[3] = map[string]bool{"agent-3": true} // as it wrote it
		s.c.DeleteOwnershipTopic()
		// A peer writes back its older copy, claiming the earlier value.
		if err := s.c.Admin(1, "agent-1").StoreRecord(t.Context(), ledger.Record{BrokerID: 3, Started: started, Restored: true, Configs: claim(earlier)}); err != nil {
			t.Fatal(err)
		}
		s.settleLost()
		if rewrites {
			// Its own write from memory (the claim since dropped).
			if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), ledger.Record{BrokerID: 3, Started: started}); err != nil {
				t.Fatal(err)
			}
			s.settleLost()
		}
		s.forget(&agentSim{name: "agent-3", broker: 3})
		s.settleLost()
		f := s.checkEnd()
		switch {
		case !rewrites && f != nil:
			t.Fatalf("a claim lost with its writer's process, an older copy with another value back: %v", f)
		case rewrites && (f == nil || f.Invariant != "I1"):
			t.Fatalf("the claim of a record its writer wrote again was waived: %v, want I1", f)
		}
	}
}
