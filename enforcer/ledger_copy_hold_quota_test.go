package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7 over R8.5, the quota strategy's side of
// TestR8_7CopyAPeerWroteBackHoldsNoBindingAnotherAgentReleases. Broker
// 2's agent gave the default producer quota up long ago (left to broker
// 1's record, which holds the same value); broker 3's agent last read
// broker 2's record before that and writes it back after a loss of the
// ownership topic. Broker 1's agent then gives the quota up: the copy
// still claims it, so the quota stays, and broker 1's claim is left to
// the copy. Broker 2's agent, its memory claiming nothing, takes the copy
// over as its own and releases the quota: nothing is left in no record.
func TestR8_7QuotaLeftToACopyAPeerWroteBackIsReleasedByTheCopysAgent(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{Strategy: StrategyQuota, ProducerByteRate: 1024, LeaseDuration: 30 * time.Second}}
	x, _ := enforcerAs(t, 1, cfg, full(), f, clock)
	y, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	z, _ := enforcerAs(t, 3, cfg, calm(), f, clock)
	step := secondSteps(t, clock)
	step(x, full)
	step(y, full)
	if f.quota != 1024 || f.records.Agents[1].Quota() != 1024 || f.records.Agents[2].Quota() != 1024 {
		t.Fatalf("not protected by both: quota %d, records %+v", f.quota, f.records.Agents)
	}
	step(z, calm) // broker 3's agent reads broker 2's record, claiming the quota
	for range 3 {
		step(y, calm)
	}
	if r := f.records.Agents[2]; r.Quota() != 0 || r.ReleasingQuota() != 0 || f.quota != 1024 {
		t.Fatalf("broker 2's claim not left to broker 1's record: quota %d, %+v", f.quota, r)
	}
	f.records = ledger.NewRecords() // the ownership topic is lost
	step(z, calm)
	if r := f.records.Agents[2]; !r.Restored || r.Quota() != 1024 {
		t.Fatalf("no copy of broker 2's record claiming the quota: %+v", r)
	}
	for range 3 {
		step(x, calm)
	}
	if f.quota != 1024 {
		t.Fatalf("R8.5/the quota the copy claims was removed: %d", f.quota)
	}
	for range 4 {
		step(y, calm)
		step(x, calm)
		step(z, calm)
	}
	if f.quota != 0 || f.records.Agents[2].Claims() {
		t.Fatalf("R8.7/a quota left to a copy was not released: %d; records %+v", f.quota, f.records.Agents)
	}
}
