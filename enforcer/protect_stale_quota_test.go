package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.6: the quota strategy's case of TestR8_6StaleRecordsAdoptNoOperatorBinding.
// A pass switching protection on plans on the records as last read
// (R8.4). A peer's claim on the default producer quota may have been
// released since, and an operator may have set the same value again: the
// quota in place is then the operator's, and the cached record naming it
// is no proof of the guard's. Claimed on that word, it would be removed
// on calm.
func TestR8_6StaleRecordsAdoptNoOperatorQuota(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	peer := agentRecord(2, ledger.QuotaOwned(1024))
	peer.Strategy = StrategyQuota
	f.records = recs(peer)
	f.quota = 1024 // broker 2's
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Minute, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}
	e, _ := newTestEnforcer(t, cfg, calm(), f, clock)
	passAt(t, e, clock, calm()) // reads the records: broker 2 claims the quota
	// Broker 2 releases its claim and removes its quota; the operator then
	// sets the identical quota.
	released := agentRecord(2)
	released.Strategy = StrategyQuota
	f.records = recs(released)
	f.quota = 1024
	passAfter(t, e, clock, time.Second, full()) // switching on: cached records
	if q := f.records.Agents[1].Quota(); q != 0 {
		t.Errorf("R8.6/the operator's quota is claimed on stale records: %d", q)
	}
	for range 3 {
		passAfter(t, e, clock, time.Minute, calm())
	}
	if f.quota != 1024 {
		t.Fatalf("R8.6/the operator's quota was removed on calm: %d", f.quota)
	}
}
