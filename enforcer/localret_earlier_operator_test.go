package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7 (found by the simulation, seed 40631 of the default mix):
// broker 1's agent lowered events' local.retention.bytes (original "not
// set"); the ownership topic was lost, the operator set 209715200 while
// no agent read the configs, and broker 1's agent restarted. Broker 3's
// agent remembers broker 1's earlier process's record (writeEarlier).
// Once the topic is back, broker 1's new process lowers the operator's
// value (its claim's original 209715200). The earlier process's claim is
// stale: written back and adopted, it restored "not set" over the
// operator's value. A peer that finds the value in place set by a claim
// lowered from an operator's value that is neither the earlier claim's
// value nor its original forgets that claim; a claim lowered from the
// earlier claim's own value is the guard's chain, and it is kept.
func TestR7_4R8_7EarlierProcessClaimTheOperatorChangedNotWrittenBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		newOrig  string // the original of broker 1's new claim
		wantKept bool
	}{
		{"operator's value under the new claim", "209715200", false},
		{"the earlier claim's value under the new claim", "4833280", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAdmin(tieredSnap(100))
			clock := &clockAt{t0}
			cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
			b3, _ := enforcerAs(t, 3, cfg, tieredSnap(100), f, clock)
			earlier := ledger.Record{BrokerID: 1, Instance: "agent-1", Started: t0.Add(-time.Hour), Seq: 3,
				Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "4833280"}}}
			b3.rememberEarlier(1, earlier)
			if len(b3.prot.earlier[1]) != 1 {
				t.Fatalf("the test needs broker 3 remembering broker 1's earlier record: %+v", b3.prot.earlier)
			}
			recs := ledger.NewRecords()
			recs.Agents[1] = ledger.Record{BrokerID: 1, Instance: "agent-1", Started: t0, Seq: 1,
				Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "13221888", Orig: strPtr(tc.newOrig)}}}
			b3.forgetOperatorChanged(recs, map[string]*string{"tiered": strPtr("13221888")})
			kept := len(b3.prot.earlier[1]) == 1 && len(b3.prot.earlier[1][0].Configs) == 1
			if kept != tc.wantKept {
				t.Errorf("R8.7/broker 3 keeps broker 1's earlier claim (4833280 on \"not set\") to write back: %v, want %v (value in place 13221888, lowered from %s): %+v",
					kept, tc.wantKept, tc.newOrig, b3.prot.earlier[1])
			}
		})
	}
}
