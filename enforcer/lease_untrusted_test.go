package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// R8.8 with R8.1 and R7: an instance that cannot trust its inputs (its
// snapshot stale to it: its clock jumped ahead of the scans') protects
// nothing anew and renews no lease. It does not take its broker's record
// over from the other instance, even once that record's lease ran out
// (a record without claims keeps the stamp of its purges, renewed by
// none): it stands by, changing nothing, and the other instance, healthy,
// keeps acting and protects its log dir at once when it fills (found by
// the simulation, seed 69603: agent-1b, its clock 2 hours ahead, took
// broker 1's record over from agent-1 every lease, and agent-1 stood by a
// lease each time, its log dir at 99% and nothing protecting it). Once
// its inputs are trusted again it takes over as usual, from an instance
// that stopped renewing.
func TestR8_8InstanceThatCannotTrustItsInputsTakesNoRecordOver(t *testing.T) {
	x := newLeaseFixture(t, 9700, 10*time.Second)
	f, clock, pass := x.f, x.clock, x.pass
	a, _ := x.protectedThenCalm()
	if r := f.records.Agents[1]; r.Claims() || r.Renewed.IsZero() || r.Instance != "pod-a" {
		t.Fatalf("the test needs pod-a's record without claims, with the lease of its purges: %+v", r)
	}
	// pod-b starts, its clock 2 hours ahead: the snapshots, stamped on
	// the scans' clock, are stale to it (and the purges it counts fall in
	// buckets 2 hours later: taking over, it writes its record).
	regB := prometheus.NewRegistry()
	b, err := New(x.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), regB, Deps{Snapshots: &staticSource{snap: x.calm, ch: make(chan struct{}, 1)},
		Admin: f, Clock: aheadClock{clock, 2 * time.Hour}, Evidence: newFakeEvidence(x.full), Instance: "pod-b"})
	if err != nil {
		t.Fatal(err)
	}
	x.srcs[b] = b.src.(*staticSource)
	for range 9 { // a lease and a half
		clock.tick(10 * time.Second)
		pass(a)
		pass(b)
	}
	if r := f.records.Agents[1]; r.Instance != "pod-a" {
		t.Errorf("R8.8/pod-b, its snapshot stale, took broker 1's record over from pod-a: %+v", r)
	}
	if v := gather(t, regB, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-b, its snapshot stale, does not stand by (standby %v)", v)
	}
	// pod-a's log dir fills: pod-a, never made to stand by, protects.
	x.fill()
	clock.tick(10 * time.Second)
	pass(a)
	pass(b)
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-a's log dir is full and unprotected: it stood by for pod-b, which cannot trust its inputs")
	}
	// pod-b's inputs are trusted again; pod-a stops: pod-b takes over
	// once pod-a's lease runs out.
	b.clock = aheadClock{clock, 0}
	for range 9 {
		clock.tick(10 * time.Second)
		pass(b)
	}
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-b, its inputs trusted again, did not take over from pod-a, stopped a lease and more (protected: %v): %+v", f.acls[denyAll("a")], r)
	}
}

// aheadClock is c, its wall clock d ahead.
type aheadClock struct {
	c *monoClock
	d time.Duration
}

func (a aheadClock) Now() time.Time         { return a.c.wall.Add(a.d) }
func (a aheadClock) Elapsed() time.Duration { return a.c.mono }
