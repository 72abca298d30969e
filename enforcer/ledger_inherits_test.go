package enforcer

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// inheritsSetup: broker 2's agent protects topics a and b past its Fresh
// window, and the peers (brokers 1 and 3) read its record; then the
// ownership topic is deleted and created again while broker 2's agent is
// dead, and its new process starts, its log dir holding topic c only (it never held a or b).
func inheritsSetup(t *testing.T) (f *fakeAdmin, clock *clockAt, cfg Config, peer, peer3, back *Enforcer, onlyC, calm func() *agent.Snapshot) {
	t.Helper()
	full, calm := protectSnaps()
	onlyC = func() *agent.Snapshot { return snap(950, 1000, part("c", 0, 0, 10, seg(0, 1, agent.StateOpen))) }
	f = newFakeAdmin(full())
	clock = &clockAt{t0}
	cfg = Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ = enforcerAs(t, 1, cfg, calm(), f, clock)
	peer3, _ = enforcerAs(t, 3, cfg, calm(), f, clock)
	for range 20 { // past a lease: its records are no longer Fresh
		passAt(t, old, clock, full())
		clock.t = clock.t.Add(time.Second)
	}
	if !f.acls[denyAll("b")] || f.records.Agents[2].Fresh {
		t.Fatalf("the test needs broker 2 protecting topic b, its record not Fresh: %v %+v", f.acls, f.records.Agents[2])
	}
	passAt(t, peer, clock, calm()) // they read broker 2's record
	passAt(t, peer3, clock, calm())
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	back, _ = enforcerAs(t, 2, cfg, onlyC(), f, clock)
	return f, clock, cfg, peer, peer3, back, onlyC, calm
}

// R8.7 (issue 20; simulation class ledger_delete, seeds 384 and 930):
// broker 2's agent restarts while the ownership topic is lost, and
// its calls keep failing: the peers' reads fail too (here: they make
// none), and its new process's record is written after its Fresh window
// (a lease from its first read). The peer remembers the earlier
// process's claims on topics a and b; the record it finds names another process
// (Started) that did not inherit it (Inherits), so it writes the claim
// into it, Fresh or not, and the agent adopts it and releases it when
// calm. Before the fix only a Fresh record took an earlier process's
// claims: the binding on b stayed, the operator's for good.
func TestR8_7PeerWritesClaimsIntoARecordWrittenAfterTheFreshWindow(t *testing.T) {
	f, clock, _, peer, _, back, onlyC, calm := inheritsSetup(t)
	for range 15 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, onlyC())
	}
	if r := f.records.Agents[2]; r.Fresh || !slices.Equal(r.ACLTopics(), []string{"c"}) {
		t.Fatalf("the test needs the new process's record past its Fresh window, claiming topic c only: %+v", r)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("R8.7/the peer did not write the earlier process's claim into a record written after the Fresh window: %+v", f.records.Agents[2])
	}
	for range 4 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the earlier process's binding outlived it: %v", f.acls)
	}
	if r := f.records.Agents[2]; len(r.Inherits) != 1 || r.Claims() {
		t.Errorf("R8.7/the agent's record does not name the earlier process it inherited, or still claims: %+v", r)
	}
}

// R8.7 (issue 20): the agent writes its record over the peer's write-in
// from a plan made before it (a pass that read the ledger before the
// peer wrote). The peer keeps the earlier process's record in memory
// until a record of the broker names that process, and writes its claims
// again at its next read; once the agent has taken them (Inherits), the
// peer forgets them.
func TestR8_7PeerKeepsAnEarlierProcessesRecordUntilItsSuccessorInheritsIt(t *testing.T) {
	f, clock, _, peer, _, back, onlyC, calm := inheritsSetup(t)
	for range 15 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, onlyC())
	}
	own := f.records.Agents[2]
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("R8.7/the peer did not write the earlier process's claim into the record: %+v", f.records.Agents[2])
	}
	// The agent's write, planned before the peer's: over it.
	own.Updated = clock.t
	f.records.Agents[2] = own
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("R8.7/the peer forgot the earlier process's claim once it was written over: %+v", f.records.Agents[2])
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, back, clock, onlyC()) // it adopts the claim
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if len(peer.prot.earlier) != 0 {
		t.Errorf("R8.7/the peer still keeps the earlier process's record after its successor inherited it: %+v", peer.prot.earlier)
	}
	for range 4 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the earlier process's binding outlived it: %v", f.acls)
	}
}

// R8.7 (issue 20): the agent took its earlier process's claims on topics a and b
// (a peer wrote it into its Fresh record) and released it; another peer,
// whose last read was before the ledger was lost, still remembers the
// earlier process's record. Its next read finds the new process's record
// naming the earlier one (Inherits): it writes nothing back. Before the
// fix it wrote the released claim into the record (still Fresh), the
// agent took it again, and released it again: deleting the binding an
// operator had created on b since.
func TestR8_7PeerNeverWritesBackClaimsTheSuccessorReleased(t *testing.T) {
	f, clock, _, peer, peer3, back, onlyC, calm := inheritsSetup(t)
	clock.t = clock.t.Add(time.Second)
	passAt(t, back, clock, onlyC())
	if r := f.records.Agents[2]; !r.Fresh || !slices.Equal(r.ACLTopics(), []string{"c"}) {
		t.Fatalf("the test needs the new process's Fresh record claiming topic c only: %+v", r)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("the test needs the peer writing the earlier process's claim into the record: %+v", f.records.Agents[2])
	}
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
	}
	if r := f.records.Agents[2]; r.Claims() || len(f.acls) != 0 {
		t.Fatalf("the test needs the agent's claims released: %+v %v", r, f.acls)
	}
	// An operator protects topic b with the same binding.
	f.acls[denyAll("b")] = true
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer3, clock, calm())
	if r := f.records.Agents[2]; r.Claims() {
		t.Errorf("R8.7/a peer wrote back a claim the successor had released: %+v", r)
	}
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer3, clock, calm())
	}
	if !f.acls[denyAll("b")] {
		t.Fatalf("R8.7/the operator's binding was deleted as the guard's: %v", f.acls)
	}
}

// R8.7 with R8.8 (simulation class ledger_delete, seed 1452): broker 2's
// active instance dies; a peer lifts its claims after its lease (the
// bindings deleted), and the broker's other instance, in observe mode,
// acknowledges the lift in a record of its own, written over the dead
// instance's. It names the dead instance's process as inherited (it
// adopts nothing), so the peer that remembers the dead instance's record
// writes none of its claims into the observe-mode record. Before the fix
// it wrote them, and the observe-mode instance lifted them again: the
// binding an operator had created on b since was deleted.
func TestR8_7ObserveModeInstanceInheritsTheRecordItWritesOver(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	as := func(name string, enabled bool, s *agent.Snapshot) *Enforcer {
		c := cfg
		c.Enabled, c.BrokerID = enabled, new(int32(2))
		e, err := New(c, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(),
			Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)}, Admin: f, Clock: clock, Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	active := as("pod-a", true, full())
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 20 {
		passAt(t, active, clock, full())
		passAt(t, peer, clock, calm())
		clock.t = clock.t.Add(time.Second)
	}
	if !f.acls[denyAll("b")] || f.records.Agents[2].Instance != "pod-a" {
		t.Fatalf("the test needs broker 2's active instance protecting topic b: %v %+v", f.acls, f.records.Agents[2])
	}
	observe := as("pod-b", false, full())
	for range 30 { // the active instance dead: past its lease, the peer lifts its claims
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
		passAt(t, observe, clock, full())
	}
	r := f.records.Agents[2]
	if r.Instance != "pod-b" || f.acls[denyAll("b")] {
		t.Fatalf("the test needs the observe-mode instance's record over the lifted one, the bindings deleted: %v %+v", f.acls, r)
	}
	f.acls[denyAll("b")] = true // the operator's, since
	for range 4 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
		passAt(t, observe, clock, full())
	}
	if r := f.records.Agents[2]; r.Claims() {
		t.Errorf("R8.7/a peer wrote claims of the instance the observe-mode one took over from into its record: %+v", r)
	}
	if !f.acls[denyAll("b")] {
		t.Fatalf("R8.7/the operator's binding was deleted as the guard's: %v", f.acls)
	}
}

// twoWritesRead: broker 2's agent claims topic a (past a lease, so its
// records are no longer Fresh); peer 1 reads that write; the agent claims
// b too; peer 3 reads the later write. The start both tests of a later
// write against an older copy share.
type twoWritesRead struct {
	f            *fakeAdmin
	clock        *clockAt
	cfg          Config
	calm         func() *agent.Snapshot
	peer1, peer3 *Enforcer
}

func peersReadTwoWrites(t *testing.T) twoWritesRead {
	t.Helper()
	full, calm := protectSnaps()
	onlyA := func() *agent.Snapshot { return snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, agent.StateOpen))) }
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	two, _ := enforcerAs(t, 2, cfg, onlyA(), f, clock)
	peer1, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	peer3, _ := enforcerAs(t, 3, cfg, calm(), f, clock)
	for range 20 { // past a lease: its records are no longer Fresh
		passAt(t, two, clock, onlyA())
		clock.t = clock.t.Add(time.Second)
	}
	passAt(t, peer1, clock, calm()) // reads the claim on a
	clock.t = clock.t.Add(time.Second)
	passAt(t, two, clock, full()) // claims b too
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b"}) || !f.acls[denyAll("b")] {
		t.Fatalf("the test needs broker 2 protecting a and b: %+v %v", f.records.Agents[2], f.acls)
	}
	passAt(t, peer3, clock, calm()) // reads the claims on a and b
	return twoWritesRead{f: f, clock: clock, cfg: cfg, calm: calm, peer1: peer1, peer3: peer3}
}

// R8.7 (issue 20; simulation, seed 2938): a peer wrote back its copy of
// broker 2's record, read before that agent's last claim; another peer
// read the record after it. That peer writes its later copy back (the
// same process's, a higher write count: Record.Seq), so the claim is in
// the record and lifted after the lease. Before the fix it took the
// older copy for the record: the claim was in no record, and what it
// names stayed in place for good.
func TestR8_7PeerWritesBackALaterCopyOverAnOlderOne(t *testing.T) {
	x := peersReadTwoWrites(t)
	f, clock, calm, peer1, peer3 := x.f, x.clock, x.calm, x.peer1, x.peer3
	// The ownership topic is lost; broker 2's agent is dead from now on.
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer1, clock, calm())
	if r := f.records.Agents[2]; !r.Restored || !slices.Equal(r.ACLTopics(), []string{"a"}) {
		t.Fatalf("the test needs broker 1's older copy of broker 2's record written back: %+v", r)
	}
	passAt(t, peer3, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("R8.7/broker 3 left the older copy of broker 2's record in place, its claim on b in no record: %+v", f.records.Agents[2])
	}
	for range 15 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer1, clock, calm())
		passAt(t, peer3, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/broker 2's protection outlived its lease: %v", f.acls)
	}
}

// R8.7 (issue 20; simulation, seed 5562): broker 2's agent claims topic
// b after peer 1's last read and before peer 3's; the ownership topic is
// lost and the agent restarts. Peer 1 writes back its older copy of the
// record (topic a only), and the new process takes that copy over before
// peer 3 reads the ledger: its record names the earlier process as
// inherited, and which write of it (Record.InheritsSeq). Peer 3, which
// remembers a later write of that process, writes the claim on b into
// the record; the agent adopts it and releases it when calm. Before the
// fix peer 3 took the record's Inherits for the whole earlier process:
// the claim on b was in no record, and the binding stayed for good.
func TestR8_7PeerWritesALaterWriteIntoTheRecordOfASuccessorThatTookAnOlderCopy(t *testing.T) {
	x := peersReadTwoWrites(t)
	f, clock, cfg, calm, peer1, peer3 := x.f, x.clock, x.cfg, x.calm, x.peer1, x.peer3
	// The ownership topic is lost; broker 2's agent restarts.
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	back, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	passAt(t, peer1, clock, calm())
	if r := f.records.Agents[2]; !r.Restored || !slices.Equal(r.ACLTopics(), []string{"a"}) {
		t.Fatalf("the test needs broker 1's older copy of broker 2's record written back: %+v", r)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, back, clock, calm())
	if r := f.records.Agents[2]; !r.Started.Equal(back.prot.started) || len(r.Inherits) != 1 || slices.Contains(r.ACLTopics(), "b") {
		t.Fatalf("the test needs the new process's record naming the earlier process, without the claim on b: %+v", r)
	}
	passAt(t, peer3, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Contains(got, "b") {
		t.Fatalf("R8.7/broker 3 did not write the later claim on b into the record of the process that took over an older copy: %+v", f.records.Agents[2])
	}
	for range 6 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer1, clock, calm())
		passAt(t, peer3, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the earlier process's binding on b outlived it: %v", f.acls)
	}
	if r := f.records.Agents[2]; r.Claims() || len(peer3.prot.earlier) != 0 {
		t.Errorf("R8.7/the record still claims, or the peer still keeps the earlier process's record: %+v %+v", r, peer3.prot.earlier)
	}
}

// R8.7 (issue 20): as above, but the new process released the claim on a
// it took over with the older copy before peer 3 wrote the later write in,
// and an operator has protected topic a with the same binding since. The
// agent takes the claim on b over, not the one on a again: the
// operator's binding stays (R8.6).
func TestR8_7SuccessorNeverTakesAgainWhatItReleasedFromAnOlderCopy(t *testing.T) {
	full, calm := protectSnaps()
	onlyA := func() *agent.Snapshot { return snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, agent.StateOpen))) }
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	two, _ := enforcerAs(t, 2, cfg, onlyA(), f, clock)
	peer1, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	peer3, _ := enforcerAs(t, 3, cfg, calm(), f, clock)
	for range 20 {
		passAt(t, two, clock, onlyA())
		clock.t = clock.t.Add(time.Second)
	}
	passAt(t, peer1, clock, calm())
	clock.t = clock.t.Add(time.Second)
	passAt(t, two, clock, full())
	passAt(t, peer3, clock, calm())
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	back, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	passAt(t, peer1, clock, calm()) // the older copy: a only
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
	}
	if r := f.records.Agents[2]; f.acls[denyAll("a")] || slices.Contains(r.ACLTopics(), "a") || len(r.Inherits) != 1 {
		t.Fatalf("the test needs the new process's claim on a, taken over, released: %v %+v", f.acls, r)
	}
	f.acls[denyAll("a")] = true // the operator's, since
	passAt(t, peer3, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); !slices.Contains(got, "b") {
		t.Fatalf("the test needs broker 3 writing the later write in: %+v", f.records.Agents[2])
	}
	for range 6 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer3, clock, calm())
	}
	if !f.acls[denyAll("a")] || f.acls[denyAll("b")] {
		t.Fatalf("R8.6/the operator's binding on a was deleted as the guard's, or the guard's on b stayed: %v", f.acls)
	}
}
