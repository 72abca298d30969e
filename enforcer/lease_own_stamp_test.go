package enforcer

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"time"
)

// R8.8: an instance stands by only for a lease the other instance
// renewed. Taking over, a second instance keeps the lease of the record
// it writes over: a record naming it may carry the stamp (Renewed) this
// process wrote itself, a lease ago. That stamp, in the record of an
// instance that purges nothing (PurgesUnknown: observe mode, or waiting
// for its purge history), is no renewal of the other's; the lease counts
// from this process's write, on its own clock,
// and this process, its log dir full, protects at once (found by the
// simulation, seed 6078: an observe-mode duplicate took broker 1 over with
// the active instance's stamp, and that instance, enforcing, stood by a
// lease more with its log dir at 99%, nothing protecting it).
func TestR8_8InstanceNeverStandsByForItsOwnLeaseStamp(t *testing.T) {
	x, _, reg := takenOverWithOwnStamp(t, true)
	f := x.f
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/pod-a stands by (standby %v) for its own stamp, written a lease ago", v)
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-a's log dir is full and unprotected: it stood by for a lease no other instance renewed")
	}
}

// R8.8, R7.3: the other instance that took the broker over with this
// process's stamp had established its purge history (its record does not
// say PurgesUnknown): it acts, and may purge under that record, whose
// purges reach this process only through the record. This process stands
// by as for any other instance's record, and takes over later with its
// purges counted (found by the simulation, seed 9389 of the whole mix:
// agent-1 took broker 1 back at once from agent-1b, which had just taken
// it over with agent-1's stamp; agent-1b purged 8 MiB, the ownership
// topic was lost before agent-1 read that record, and agent-1 purged
// 8 MiB more on its own history only: 64 MiB in the hour against a
// 51.2 MiB cap).
func TestR8_8InstanceStandsByForAnActingInstanceWithItsOwnStamp(t *testing.T) {
	x, _, reg := takenOverWithOwnStamp(t, false)
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 1 {
		t.Errorf("R8.8/pod-a does not stand by (standby %v) for an instance that took the broker over with pod-a's stamp and may purge", v)
	}
	if r := x.f.records.Agents[1]; r.Instance != "pod-b" {
		t.Errorf("R8.8/pod-a wrote over the record of pod-b, which acts for the broker: %+v", r)
	}
}

// takenOverWithOwnStamp: pod-a protects, calms down (its record without
// claims keeps its stamp a lease), another instance, pod-b, takes the
// record over with pod-a's stamp (purgesUnknown: pod-b had not
// established its purge history, as in observe mode), the log dir fills,
// and pod-a runs a pass.
func takenOverWithOwnStamp(t *testing.T, purgesUnknown bool) (*leaseFixture, *Enforcer, *prometheus.Registry) {
	t.Helper()
	x := newLeaseFixture(t, 9700, 10*time.Second)
	f, clock, pass := x.f, x.clock, x.pass
	a, reg := x.protectedThenCalm()
	stamp := f.records.Agents[1].Renewed
	if r := f.records.Agents[1]; r.Claims() || stamp.IsZero() || r.Instance != "pod-a" {
		t.Fatalf("the test needs pod-a's record without claims, with its lease: %+v", r)
	}
	for range 6 {
		clock.tick(10 * time.Second)
		pass(a)
	}
	if got := f.records.Agents[1].Renewed; !got.Equal(stamp) {
		t.Fatalf("the test needs pod-a's stamp a lease old: renewed %v, then %v", stamp, got)
	}
	// The other instance takes the broker over: its record names it and
	// keeps pod-a's stamp.
	r := f.records.Agents[1]
	r.Instance, r.PurgesUnknown = "pod-b", purgesUnknown
	f.records.Agents[1] = r
	// The log dir fills again.
	x.fill()
	clock.tick(10 * time.Second)
	pass(a)
	return x, a, reg
}

// R8.8 (found by the simulation, seed 53479 of the default mix): the
// other instance holds broker 1's record with no claims and purges
// nothing (PurgesUnknown: an observe-mode duplicate, as agent-1b there,
// which had taken the record over while agent-1 was dead), its stamp a
// lease and more old. The enforcing instance's process restarts: it has
// no memory of that stamp. Its log dir fills the next pass. A record that
// claims nothing and under which nothing is purged fences nothing: the
// new process acts at once and protects (before the fix it stood by a
// lease from its first read, with its log dir at 99% and nothing
// protecting it).
func TestR8_8NewProcessDoesNotStandByForARecordThatClaimsAndPurgesNothing(t *testing.T) {
	x, _, _ := takenOverWithOwnStamp(t, true)
	f := x.f
	// Calm again: pod-a releases; pod-b, observing, writes the record
	// without claims under its name, still with the old stamp.
	for e := range x.srcs {
		x.srcs[e].set(x.calm)
	}
	for e := range x.srcs {
		for range 3 {
			x.clock.tick(10 * time.Second)
			x.pass(e)
		}
	}
	r := f.records.Agents[1]
	r.Instance, r.PurgesUnknown, r.Owned, r.Configs, r.LogDirs = "pod-b", true, nil, nil, nil
	f.records.Agents[1] = r
	if r.Claims() || r.Renewed.IsZero() {
		t.Fatalf("the test needs pod-b's record without claims, with a lease stamp: %+v", r)
	}
	if f.acls[denyAll("a")] {
		t.Fatal("the test needs the protection released on calm")
	}
	// pod-a's process restarts and reads the record; the log dir fills.
	a2, reg2 := x.instance("pod-a")
	x.clock.tick(10 * time.Second)
	x.pass(a2)
	x.fill()
	x.clock.tick(10 * time.Second)
	x.pass(a2)
	if v := gather(t, reg2, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/pod-a's new process stands by (standby %v) for a record that claims and purges nothing", v)
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-a's log dir is full and unprotected: its new process stood by for a record that claims and purges nothing")
	}
}
