package enforcer

import (
	"errors"
	"testing"
	"time"
)

// R8.6: the default producer quota set unrecorded (its record write
// failed) is forgotten once a read finds it gone, as the bindings are
// (pruneUnrecorded): remembered, the operator's identical quota set later
// would be taken for this agent's and removed on calm. Kept as set
// unrecorded by keepOverwritten, the quota of a record written over is
// the same case.
func TestR8_6QuotaSetUnrecordedIsForgottenOnceAReadFindsItGone(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024}}
	e, _ := newTestEnforcer(t, cfg, full(), f, clock)
	f.storeErr = errors.New("NOT_ENOUGH_REPLICAS")
	_ = tryPassAfter(t, e, clock, 0, full())
	f.storeErr = nil
	if f.quota != 1024 || f.records.Agents[1].Claims() || e.prot.unrecordedQuota != 1024 {
		t.Fatalf("the test needs the quota set unrecorded: %d %+v %d", f.quota, f.records.Agents[1], e.prot.unrecordedQuota)
	}
	f.quota = 0 // the operator removes it
	passAfter(t, e, clock, time.Second, calm())
	f.quota = 1024 // and sets it again
	for range 3 {
		passAfter(t, e, clock, time.Second, calm())
	}
	if f.quota != 1024 {
		t.Errorf("R8.6/the operator's default producer quota, set after a read found the one set unrecorded gone, was removed: %d", f.quota)
	}
}
