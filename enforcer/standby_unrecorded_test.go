package enforcer

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.3, R8.8: an instance standing by for its broker takes back the
// bindings it set unrecorded that its plan no longer wants, while the
// other instance renews its lease. No record names them: the other
// instance and the peers take them for an operator's (R8.6), so no one
// else ever releases them, and the other instance's renewals kept this
// one standing by while the absence shape's ALLOW READ User:* outlived
// the operator's binding on the topic and the disk's calm (found by the
// simulation, seed 20627: agent-1 protected unrecorded, stood by behind
// agent-1b, and User:producer still read orders through agent-1's ALLOW
// after the operator's ALLOW READ User:alice). pod-a protects a and b
// with the absence shape; pod-b, from a stale read, writes over pod-a's
// record and protects with DENY WRITE User:*; pod-a stands by.
func TestR8_8StandbyReleasesWhatItSetUnrecordedAndNoLongerWants(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
	clock := &clockAt{t0}
	newAs := func(instance string, admin Admin) *Enforcer {
		cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
		s := calm()
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: admin, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	stale := &staleRecords{fakeAdmin: f}
	first, second := newAs("pod-a", f), newAs("pod-b", stale)
	passAt(t, second, clock, calm()) // reads the empty ledger
	empty, err := f.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	readA, readB := ledger.LiteralACL("a", AnyPrincipal, OpRead, PermAllow), ledger.LiteralACL("b", AnyPrincipal, OpRead, PermAllow)
	passAfter(t, first, clock, time.Second, full())
	if !f.acls[readA] || !f.acls[readB] || f.records.Agents[1].Instance != "pod-a" {
		t.Fatalf("a and b not protected by pod-a with the absence shape: %v %+v", f.acls, f.records.Agents[1])
	}
	stale.old = &empty
	_ = tryPassAfter(t, second, clock, time.Second, full())
	stale.old = nil
	if r := f.records.Agents[1]; r.Instance != "pod-b" || !f.acls[denyAll("a")] {
		t.Fatalf("the test needs pod-b's record over pod-a's, and its DENY WRITE User:* on a: %+v %v", r, f.acls)
	}
	both := func(n int, s func() *agent.Snapshot) {
		for range n {
			passAfter(t, first, clock, 500*time.Millisecond, s())
			passAfter(t, second, clock, 500*time.Millisecond, s())
		}
	}
	both(2, full)
	if !first.prot.standby || !f.acls[readA] {
		t.Fatalf("the test needs pod-a standing by, its ALLOWs in place: standby %v, %v", first.prot.standby, f.acls)
	}
	// The operator's binding on a: its shape is DENY WRITE User:* alone.
	alice := ledger.LiteralACL("a", "User:alice", OpRead, PermAllow)
	f.acls[alice] = true
	both(2, full)
	if !first.prot.standby {
		t.Fatal("the test needs pod-a standing by behind pod-b")
	}
	if f.acls[readA] {
		t.Errorf("R8.3/pod-a's ALLOW READ User:* on a left by the standby after the operator's %v: everyone reads a", alice)
	}
	if !f.acls[readB] {
		t.Errorf("R8.8/pod-a's ALLOW READ User:* on b, the absence shape still wanted, released: %v", f.acls)
	}
	// Calm: pod-b releases its DENYs (the record that does renews its
	// lease); in pod-a's next pass, still standing by, nothing of the
	// guard's is left.
	passAfter(t, second, clock, 500*time.Millisecond, calm())
	passAfter(t, first, clock, 500*time.Millisecond, calm())
	if !first.prot.standby {
		t.Fatal("the test needs pod-a still standing by, pod-b's lease live")
	}
	for a := range f.acls {
		if a != alice {
			t.Errorf("R8.8/binding %v left once both instances are calm, pod-a standing by", a)
		}
	}
}

// R8.8 with I6: a standby's DENY WRITE User:* set unrecorded stays while
// another agent's log dir is in the protect band: that agent took it for
// an operator's, wanted in its shape, protection in place (R8.6), and
// created none of its own (found by the simulation, seed 2300: agent-1b,
// standing by, deleted its DENYs while broker 3's log dir was at 92%,
// and orders was writable). pod-a protects a unrecorded (its record's
// write fails) and stands by behind pod-b, which claims b; broker 2's
// agent protects a through pod-a's DENY. a's partition then leaves broker
// 1: pod-a's plan gives its DENY up.
func TestR8_8StandbyKeepsAnUnrecordedDenyAPeerProtectsWith(t *testing.T) {
	O := agent.StateOpen
	a, b := part("a", 0, 0, 10, seg(0, 1, O)), part("b", 0, 0, 10, seg(0, 1, O))
	f := newFakeAdmin(snap(950, 1000, a, b))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}, BrokerID: new(int32(1))}
	newAs := func(instance string) *Enforcer {
		s := snap(100, 1000, a, b)
		e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)},
			Admin: f, Clock: clock, Evidence: newFakeEvidence(s), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first, second := newAs("pod-a"), newAs("pod-b")
	peer, _ := enforcerAs(t, 2, cfg, snap(100, 1000, a), f, clock)
	f.storeErr = errors.New("NOT_ENOUGH_REPLICAS")
	_ = tryPassAfter(t, first, clock, time.Second, snap(950, 1000, a))
	f.storeErr = nil
	if !f.acls[denyAll("a")] || f.records.Agents[1].Instance == "pod-a" {
		t.Fatalf("the test needs pod-a's DENY on a, unrecorded: %v %+v", f.acls, f.records.Agents[1])
	}
	for range 3 {
		passAfter(t, second, clock, 500*time.Millisecond, snap(950, 1000, a, b))
		passAfter(t, peer, clock, 0, snap(950, 1000, a))
		passAfter(t, first, clock, 500*time.Millisecond, snap(950, 1000, a))
	}
	if r := f.records.Agents[1]; !first.prot.standby || r.Instance != "pod-b" || !slices.Contains(r.ACLTopics(), "b") || slices.Contains(r.ACLTopics(), "a") ||
		f.records.Agents[2].Claims() || len(f.records.Agents[2].LogDirs) == 0 {
		t.Fatalf("the test needs pod-a standing by behind pod-b (claiming b, not a), broker 2's agent protecting through pod-a's DENY: standby %v, %+v, %+v",
			first.prot.standby, r, f.records.Agents[2])
	}
	// a's partition leaves broker 1.
	passAfter(t, second, clock, 500*time.Millisecond, snap(950, 1000, b))
	passAfter(t, first, clock, 500*time.Millisecond, snap(950, 1000, b))
	if !first.prot.standby {
		t.Fatal("the test needs pod-a standing by")
	}
	if !f.acls[denyAll("a")] {
		t.Errorf("R8.8/pod-a, standing by, deleted its DENY WRITE User:* on a while broker 2's log dir is in the protect band: %v", f.acls)
	}
	// Every log dir calm: nothing of the guard's is left.
	for range 12 {
		passAfter(t, second, clock, 500*time.Millisecond, snap(100, 1000, b))
		passAfter(t, peer, clock, 0, snap(100, 1000, a))
		passAfter(t, first, clock, 500*time.Millisecond, snap(100, 1000, b))
	}
	if len(f.acls) != 0 {
		t.Errorf("R8.8/bindings left once every log dir is calm: %v", f.acls)
	}
}
