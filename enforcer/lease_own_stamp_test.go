package enforcer

import (
	"testing"
	"time"
)

// R8.8: an instance stands by only for a lease the other instance
// renewed. Taking over, a second instance keeps the lease of the record
// it writes over: a record naming it may carry the stamp (Renewed) this
// process wrote itself, a lease ago. That stamp is no renewal of the
// other's; the lease counts from this process's write, on its own clock,
// and this process, its log dir full, protects at once (found by the
// simulation, seed 6078: an observe-mode duplicate took broker 1 over with
// the active instance's stamp, and that instance, enforcing, stood by a
// lease more with its log dir at 99%, nothing protecting it).
func TestR8_8InstanceNeverStandsByForItsOwnLeaseStamp(t *testing.T) {
	x := newLeaseFixture(t, 9700, 10*time.Second)
	f, clock, pass := x.f, x.clock, x.pass
	a, reg := x.instance("pod-a")
	clock.tick(10 * time.Second)
	pass(a)
	x.fill()
	for range 3 {
		clock.tick(10 * time.Second)
		pass(a)
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("the test needs pod-a's protection in the protect band")
	}
	// Calm: pod-a releases its claims; its record keeps the lease of its
	// purges, not renewed without claims.
	x.srcs[a].set(x.calm)
	for range 3 {
		clock.tick(10 * time.Second)
		pass(a)
	}
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
	r.Instance = "pod-b"
	f.records.Agents[1] = r
	// The log dir fills again.
	x.fill()
	clock.tick(10 * time.Second)
	pass(a)
	if v := gather(t, reg, "kafka_disk_guard_protection_standby", nil); v != 0 {
		t.Errorf("R8.8/pod-a stands by (standby %v) for its own stamp, written a lease ago", v)
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-a's log dir is full and unprotected: it stood by for a lease no other instance renewed")
	}
}
