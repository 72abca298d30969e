package enforcer

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// R8.8: a second agent for the same broker left in observe mode, with the
// same instance name as the enforcing one (two sidecars in one pod, host
// networking), lifts nothing while the enforcing agent renews its lease
// (found by the simulation, class duplicate_agent, seed 1: it lifted the
// quota every pass), and lifts once no process has renewed it for a lease.
func TestR8_8ObserveDuplicateWithTheSameInstanceLiftsNothing(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	newAs := func(cfg Config) (*Enforcer, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg.BrokerID = new(int32(1))
		s := full()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: "broker-1-pod"})
		if err != nil {
			t.Fatal(err)
		}
		return e, reg
	}
	active, _ := newAs(Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}})
	observer, reg := newAs(Config{Interval: time.Second})
	passAt(t, active, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, active, clock, full())
		passAt(t, observer, clock, full())
		if !f.acls[denyAll("a")] {
			t.Fatal("R8.8/an observe-mode duplicate with the same instance name lifted the active agent's protection")
		}
	}
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/standby %v", v)
	}
	// The active agent dies: after a lease the observer lifts.
	for range 15 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, observer, clock, full())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.8/not lifted after the lease: %v", f.acls)
	}
}
