package enforcer

import (
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7 over R8.5: a binding another agent is releasing is left to a live
// record that still holds it, but not to a stale copy a peer wrote back
// after a loss of the ownership topic (Record.Restored). Broker 2's agent
// gave the bindings up long ago (broker 1's record held them); broker 3's
// agent last read broker 2's record before that and writes it back after
// the loss. Broker 1's agent then gives them up: before the fix its plan
// dropped the releasing claim, the copy holding them; broker 2's agent
// then wrote its own record over the copy, without them, and no record
// named the bindings: left for good (found while fixing seed 77959 of the
// simulation's whole mix: agent-2 wrote back stale copies of broker 1's
// and 3's records).
func TestR8_7CopyAPeerWroteBackHoldsNoBindingAnotherAgentReleases(t *testing.T) {
	full, calm := protectSnaps()
	O := agent.StateOpen
	onlyC := func() *agent.Snapshot { return snap(950, 1000, part("c", 0, 0, 10, seg(0, 1, O))) }
	f := newFakeAdmin(snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, O)), part("b", 0, 0, 10, seg(0, 1, O)), part("c", 0, 0, 10, seg(0, 1, O))))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 30 * time.Second}}
	x, _ := enforcerAs(t, 1, cfg, full(), f, clock)
	y, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	z, _ := enforcerAs(t, 3, cfg, calm(), f, clock)
	step := secondSteps(t, clock)
	step(x, full)
	step(y, full)
	if !f.acls[denyAll("a")] || len(f.records.Agents[2].ACLTopics()) != 2 {
		t.Fatalf("not protected by both: %v %+v", f.acls, f.records.Agents)
	}
	step(z, calm) // broker 3's agent reads broker 2's record, holding a and b
	for range 3 {
		// a and b moved off broker 2, still full: its agent gives them
		// up (left to broker 1's record) and protects c.
		step(y, onlyC)
	}
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"c"}) || !f.acls[denyAll("a")] {
		t.Fatalf("broker 2's claims not left to broker 1's record: %v %+v", f.acls, f.records.Agents[2])
	}
	// The ownership topic is lost; broker 3's agent writes back what it
	// last read: broker 2's record holding a and b.
	f.records = ledger.NewRecords()
	step(z, calm)
	if r := f.records.Agents[2]; !r.Restored || !heldBy(r, denyAll("a")) {
		t.Fatalf("no copy of broker 2's record holding a and b: %+v", r)
	}
	// Broker 1's agent gives them up while the copy holds them.
	for range 3 {
		step(x, calm)
	}
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("R8.5/bindings the copy holds were deleted: %v", f.acls)
	}
	// Broker 2's agent writes its own record over the copy.
	step(y, onlyC)
	if r := f.records.Agents[2]; r.Restored || !slices.Equal(r.ACLTopics(), []string{"c"}) {
		t.Fatalf("broker 2's own record not written over the copy: %+v", r)
	}
	for range 4 {
		step(x, calm)
		step(y, onlyC)
		step(z, calm)
	}
	if f.acls[denyAll("a")] || f.acls[denyAll("b")] {
		t.Fatalf("R8.7/bindings a copy held while broker 1's agent released them were left in no record: %v; records %+v", f.acls, f.records.Agents)
	}
}

// heldBy reports whether r holds binding a (not releasing).
func heldBy(r Record, a ACL) bool {
	held := false
	r.HeldBindings(nil, func(b ACL) { held = held || b == a })
	return held
}

// secondSteps returns a step that advances clock by a second and runs a
// pass of e on the snapshot s makes.
func secondSteps(t *testing.T, clock *clockAt) func(e *Enforcer, s func() *agent.Snapshot) {
	return func(e *Enforcer, s func() *agent.Snapshot) {
		t.Helper()
		clock.t = clock.t.Add(time.Second)
		passAt(t, e, clock, s())
	}
}
