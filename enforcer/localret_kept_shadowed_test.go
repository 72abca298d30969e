package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7, R8.8: a local-retention claim an instance kept when the
// other instance's record was found over its own (keepOverwritten) is
// dropped once a read shows it stale: another broker's record holds its
// value on another original (the operator changed the value while the
// ownership topic was lost, and that agent lowered the new one to the
// same number). Kept, it was merged back once the instance acted, after
// the record that showed it stale was lost again, and restored its older
// original over the operator's value (found by the simulation, seed 35428:
// local.retention.bytes of events put back to 104857600 over the
// operator's 209715200).
func TestR7_4R8_8KeptClaimShadowedSinceIsNotWrittenBack(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	older, newer := "100000", "200000"
	e.prot.keptConfigs = []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &older}}
	seen := ledger.NewRecords()
	seen.Agents[1] = Record{BrokerID: 1, Instance: "pod-b"}
	seen.Agents[2] = Record{BrokerID: 2, Configs: []ConfigClaim{{Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400", Orig: &newer}}}
	e.withoutShadowed(nil, seen)
	// The topic is lost again: broker 2's record with it.
	later := ledger.NewRecords()
	later.Agents[1] = Record{BrokerID: 1, Instance: "pod-b"}
	if got := e.mergeKept(later).Agents[1].Configs; len(got) != 0 {
		t.Errorf("R7.4/the kept claim (400 over %s), shown stale by broker 2's claim of 400 over %s, written back once that record was lost: %+v", older, newer, got)
	}
}
