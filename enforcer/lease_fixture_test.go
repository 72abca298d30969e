package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// leaseFixture: one broker's log dir holding partition a-0 (30 closed
// segments of 100 bytes and an open one, offsets 0-310), seen at usage
// used (of 10000 bytes) and calm at 50%; the fakes, one clock and the caps
// (2% a pass, 5% an hour, 10% a day) the lease-fencing tests share. Each
// instance of the agent for broker 1 starts on the calm snapshot.
type leaseFixture struct {
	t          *testing.T
	full, calm *agent.Snapshot
	f          *fakeAdmin
	clock      *monoClock
	cfg        Config
	srcs       map[*Enforcer]*staticSource
}

func newLeaseFixture(t *testing.T, used uint64, interval time.Duration) *leaseFixture {
	C, O := agent.StateClosed, agent.StateOpen
	var segs []agent.Segment
	for i := range 30 {
		segs = append(segs, sized(int64(i)*10, i, C, 100))
	}
	segs = append(segs, sized(300, 30, O, 100))
	full := snap(used, 10000, part("a", 0, 0, 310, segs...))
	return &leaseFixture{t: t, full: full, calm: snap(5000, 10000, part("a", 0, 0, 310, segs...)),
		f: newFakeAdmin(full), clock: &monoClock{wall: t0},
		cfg: Config{Enabled: true, BrokerID: new(int32(1)), Interval: interval,
			Protection: ProtectionConfig{LeaseDuration: time.Minute},
			Purge:      PurgeConfig{MaxPercentPerPass: 2, MaxPercentPerHour: 5, MaxPercentPerDay: 10, OtherBytesPercent: 100}},
		srcs: map[*Enforcer]*staticSource{}}
}

// instance starts an agent instance for broker 1, on the calm snapshot.
func (x *leaseFixture) instance(name string) (*Enforcer, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	src := &staticSource{snap: x.calm, ch: make(chan struct{}, 1)}
	e, err := New(x.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: src,
		Admin: x.f, Clock: x.clock, Evidence: newFakeEvidence(x.full), Instance: name})
	if err != nil {
		x.t.Fatal(err)
	}
	x.srcs[e] = src
	return e, reg
}

// fill shows every instance the full snapshot from now on.
func (x *leaseFixture) fill() {
	for _, src := range x.srcs {
		src.set(x.full)
	}
}

// pass runs one of e's passes at the clock's time.
func (x *leaseFixture) pass(e *Enforcer) {
	x.clock.at(x.full)
	x.clock.at(x.calm)
	_ = e.Reconcile(x.t.Context())
}

// lso is partition a-0's log start offset.
// protectedThenCalm starts pod-a, which protects in the protect band
// and, calm again, releases its claims: its record keeps the lease of its
// purges, not renewed without claims.
func (x *leaseFixture) protectedThenCalm() (*Enforcer, *prometheus.Registry) {
	x.t.Helper()
	a, reg := x.instance("pod-a")
	x.clock.tick(10 * time.Second)
	x.pass(a)
	x.fill()
	for range 3 {
		x.clock.tick(10 * time.Second)
		x.pass(a)
	}
	if !x.f.acls[denyAll("a")] {
		x.t.Fatal("the test needs pod-a's protection in the protect band")
	}
	x.srcs[a].set(x.calm)
	for range 3 {
		x.clock.tick(10 * time.Second)
		x.pass(a)
	}
	return a, reg
}

func (x *leaseFixture) lso() int64 { return x.f.lso[TopicPartition{"a", 0}] }

// purgingWithAStandby starts pod-a and pod-b on x, fills the log dir and
// lets pod-a purge for a minute while pod-b stands by. It fails the test
// unless pod-b stands by and pod-a's log start offset is in [minLSO,
// maxLSO].
func (x *leaseFixture) purgingWithAStandby(minLSO, maxLSO int64) (a, b *Enforcer, regB *prometheus.Registry) {
	x.t.Helper()
	a, _ = x.instance("pod-a")
	b, regB = x.instance("pod-b")
	x.clock.tick(10 * time.Second)
	x.pass(a)
	x.pass(b)
	x.fill()
	for range 6 {
		x.clock.tick(10 * time.Second)
		x.pass(a)
		x.pass(b)
	}
	if lso := x.lso(); lso < minLSO || lso > maxLSO || !b.prot.standby {
		x.t.Fatalf("the test needs pod-a purging, log start offset %d in [%d, %d], and pod-b standing by (%v)", lso, minLSO, maxLSO, b.prot.standby)
	}
	return a, b, regB
}
