package enforcer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// storeReplyLostOnce is an admin whose first StoreRecord takes effect and
// then fails, as a write that times out while it goes on does.
type storeReplyLostOnce struct {
	*fakeAdmin
	failed bool
}

func (s *storeReplyLostOnce) StoreRecord(ctx context.Context, r Record) error {
	if err := s.fakeAdmin.StoreRecord(ctx, r); err != nil || s.failed {
		return err
	}
	s.failed = true
	return errors.New("write broker-2 to __kafka_disk_guard_protection: context deadline exceeded (the write goes on)")
}

// R8.4, R8.8: the record write of the pass that switches protection on
// times out and takes effect (its reply lost). The agent reads the ledger
// again within an interval and goes on: it renews its lease and its plans
// are applied. Before, its cached records (read before the write) showed
// the log dir unprotected, so every pass took itself for one switching
// protection on, which never waits for a read: no pass read the ledger,
// and lease fencing found the record written since, so no plan was
// applied, the lease was never renewed and unexpired data never purged
// (found on a 3-broker cluster, a first record write slower than the
// 500 ms record timeout:
// TestR7_3R8_7PeerWritesThePurgeHistoryIntoAFreshRecordOnACluster, the
// first process blocked on lease_fenced and purge_history for good).
func TestR8_4RecordWriteWhoseReplyWasLostIsReadBack(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 9 * time.Second}}
	e, reg := enforcerAs(t, 2, cfg, full(), &storeReplyLostOnce{fakeAdmin: f}, clock)
	if err := tryPassAfter(t, e, clock, 0, full()); err == nil {
		t.Fatal("the test needs the first record write to fail")
	}
	first := f.records.Agents[2]
	if !first.Claims() || !f.acls[denyAll("a")] {
		t.Fatalf("the test needs the first pass to protect and its record to take effect: %+v, bindings %v", first, f.acls)
	}
	for range 12 {
		_ = tryPassAfter(t, e, clock, time.Second, full())
	}
	if r := f.records.Agents[2]; !r.Renewed.After(first.Renewed) {
		t.Errorf("R8.4/the lease was not renewed in 12 s after the write whose reply was lost (lease 9 s): renewed %s, first %s", r.Renewed, first.Renewed)
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": string(BlockLeaseFenced)}); v != 0 {
		t.Errorf("R8.8/enforcer_blocked{reason=lease_fenced} %v 12 s after the write whose reply was lost, want 0", v)
	}
}
