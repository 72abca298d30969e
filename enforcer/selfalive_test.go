package enforcer

import (
	"testing"
	"time"
)

// R8.8: "broker gone" is timed on the monotonic clock, like leases: a
// forward jump of the agent's wall clock while its broker is fenced for a
// restart does not make the broker gone (which drops its protection); a
// lease of elapsed time does, and the broker listed again ends it.
func TestR8_8SelfGoneOnTheMonotonicClock(t *testing.T) {
	clock := &clockAt{t0}
	jc := &jumpClock{base: clock, start: t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 30 * time.Second}}
	full, _ := protectSnaps()
	e, _ := enforcerAs(t, 2, cfg, full(), newFakeAdmin(full()), jc)
	e.learnBrokerID()
	e.prot.live = map[int32]bool{1: true, 3: true}
	if notAlive, gone := e.selfAlive(jc.Now()); !notAlive || gone {
		t.Fatalf("fenced: not alive %v, gone %v", notAlive, gone)
	}
	jc.offset = time.Hour
	clock.t = clock.t.Add(time.Second)
	if _, gone := e.selfAlive(jc.Now()); gone {
		t.Fatal("R8.8/a forward jump of the wall clock made a fenced broker gone")
	}
	jc.offset = -time.Hour
	clock.t = clock.t.Add(time.Second)
	if _, gone := e.selfAlive(jc.Now()); gone {
		t.Fatal("R8.8/a backward jump of the wall clock made a fenced broker gone")
	}
	clock.t = clock.t.Add(30 * time.Second)
	if _, gone := e.selfAlive(jc.Now()); !gone {
		t.Fatal("R8.8/a broker missing for a lease of elapsed time is not gone")
	}
	e.prot.live[2] = true
	if notAlive, gone := e.selfAlive(jc.Now()); notAlive || gone {
		t.Fatalf("listed again: not alive %v, gone %v", notAlive, gone)
	}
}
