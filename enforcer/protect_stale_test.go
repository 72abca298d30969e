package enforcer

import (
	"slices"
	"testing"
	"time"
)

// R8.6: a pass switching protection on plans on the records as last read
// (R8.4: it does not wait for a read). A peer's claim on a binding may
// have been released since, and an operator may have created the same
// binding again: the binding in place is then the operator's, and the
// cached record naming it is no proof of the guard's. Claimed on that
// word, it was deleted on calm (found by the simulation, default mix,
// seed 161: the operator's ALLOW READ User:* on events).
func TestR8_6StaleRecordsAdoptNoOperatorBinding(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.records = recs(agentRecord(2, owns(shapeDenyAll, "a")))
	f.acls[denyAll("a")] = true // broker 2's
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Minute}, calm(), f, clock)
	passAt(t, e, clock, calm()) // reads the records: broker 2 claims a
	// Broker 2 releases its claim and deletes its binding; the operator
	// then freezes topic a with the identical binding.
	f.records = recs(agentRecord(2))
	f.acls[denyAll("a")] = true
	passAfter(t, e, clock, time.Second, full()) // switching on: cached records
	if !f.acls[denyAll("b")] {
		t.Fatal("b not protected")
	}
	if slices.Contains(f.records.Agents[1].ACLTopics(), "a") {
		t.Errorf("R8.6/the operator's binding on a is claimed on stale records: %v", f.records.Agents[1].ACLTopics())
	}
	for range 3 {
		passAfter(t, e, clock, time.Minute, calm())
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("R8.6/the operator's binding was deleted on calm")
	}
	if f.acls[denyAll("b")] {
		t.Fatal("the guard's own binding stayed")
	}
}
