package enforcer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeReplyLostFor is an admin whose first StoreRecord of a record that
// lose matches takes effect and then fails (its reply lost).
type storeReplyLostFor struct {
	*fakeAdmin
	lose func(Record) bool
	lost bool
}

func (s *storeReplyLostFor) StoreRecord(ctx context.Context, r Record) error {
	if err := s.fakeAdmin.StoreRecord(ctx, r); err != nil || s.lost || !s.lose(r) {
		return err
	}
	s.lost = true
	return errors.New("write broker-1 to __kafka_disk_guard_protection: context deadline exceeded (the write goes on)")
}

// R8.8, R4.4: an observe-mode instance stands by for a record with claims
// it did not write (two agents for one broker may share a host name), but
// a record naming its instance and its process's start is its own write,
// one whose reply was lost: it does not stand by for it. It did (found by
// the simulation, seed 12392: the observe-mode second instance took
// broker 1 over, its write of the record giving the claims up lost its
// reply, it stood by for its own record, the ownership topic was lost,
// and it took the broker over again from nothing: the claim being given
// up, a lowered local retention, left the ledger with its value in place).
func TestR4_4R8_8ObserveInstanceNeverStandsByForItsOwnWriteWhoseReplyWasLost(t *testing.T) {
	x := newLeaseFixture(t, 9700, 10*time.Second)
	f, clock, pass := x.f, x.clock, x.pass
	a, _ := x.instance("pod-a")
	x.fill()
	for range 3 {
		clock.tick(10 * time.Second)
		pass(a)
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("the test needs pod-a's protection in the protect band")
	}
	// pod-a stops; pod-b, observing, takes broker 1 over after the lease
	// and gives the claims up: that write's reply is lost.
	admin := &storeReplyLostFor{fakeAdmin: f, lose: func(r Record) bool { return r.Instance == "pod-b" && r.Claims() }}
	cfg := x.cfg
	cfg.Enabled = false
	reg := prometheus.NewRegistry()
	src := &staticSource{snap: x.full, ch: make(chan struct{}, 1)}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src,
		Admin: admin, Clock: clock, Evidence: newFakeEvidence(x.full), Instance: "pod-b"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20 && !admin.lost; i++ {
		clock.tick(10 * time.Second)
		pass(b)
	}
	if r := f.records.Agents[1]; !admin.lost || r.Instance != "pod-b" || !r.Claims() {
		t.Fatalf("the test needs pod-b's record with the claims given up written, its reply lost: lost %v, %+v", admin.lost, r)
	}
	clock.tick(10 * time.Second)
	pass(b)
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/pod-b stands by (standby %v) for its own record, written by this process (its reply lost)", v)
	}
	for range 3 {
		clock.tick(10 * time.Second)
		pass(b)
	}
	if r := f.records.Agents[1]; r.Claims() || f.acls[denyAll("a")] {
		t.Errorf("R4.4/pod-b did not give up the claims it took over: %+v, binding in place %v", r, f.acls[denyAll("a")])
	}
}
