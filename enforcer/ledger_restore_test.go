package enforcer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7 (issue 20, point 3; simulation class ledger_delete, seed 7): the
// ownership topic is deleted while broker 2's agent is dead, and created
// again, empty. Broker 1's agent remembers broker 2's record and writes
// it back, so the dead agent's bindings are still its claims: the peer
// lifts them after the lease, and the agent restarted from nothing finds
// its record. Before the fix they were in no record: unattributed, left
// in place for good.
func TestR8_7PeerWritesBackARecordTheLedgerLost(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, dead, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm()) // it reads broker 2's record
	// Broker 2's agent dies; the topic is deleted and created again.
	f.records = ledger.NewRecords()
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/the peer did not write back the lost record of broker 2: %+v", f.records.Agents)
	}
	// A restart from nothing finds its claims.
	back, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	for range 4 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the restarted agent's bindings outlived the lost ledger: %v", f.acls)
	}
}

// R8.7: with the agent dead for good, the peer lifts the record it wrote
// back once the lease expires.
func TestR8_7PeerLiftsARecordItWroteBack(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, dead, clock, full())
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	f.records = ledger.NewRecords()
	for range 20 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the dead agent's bindings outlived the lost ledger: %v", f.acls)
	}
}

// R8.7: a copy of this agent's record that a peer wrote back, older than
// the one the agent wrote last, is replaced by the agent's own memory.
func TestR8_7OwnMemoryWinsOverAnOlderCopy(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	e, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	passAt(t, e, clock, full())
	old := f.records.Agents[2]
	for range 3 {
		clock.t = clock.t.Add(4 * time.Second)
		passAt(t, e, clock, full())
	}
	newer := f.records.Agents[2]
	if !old.Updated.Before(newer.Updated) {
		t.Fatalf("record not renewed: %v, %v", old.Updated, newer.Updated)
	}
	old.Owned = nil // the older copy names less
	f.records.Agents[2] = old
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, full())
	if got := f.records.Agents[2]; len(got.ACLTopics()) != 2 || got.Updated.Before(newer.Updated) {
		t.Fatalf("R8.7/the older copy stayed: %+v", got)
	}
}

// R8.7 over R8.4 (simulation class ledger_reshape, seed 6): a log dir
// switching protection on uses the cached records (it never waits for a
// read), except when the last read found the ledger lost: nothing is
// claimed then, since what is set would be in no record the agents can
// read (a reshaped topic takes the record in partition 0, and its repair
// deletes it). Before the fix the switching-on pass protected on the
// records cached before the loss.
func TestR8_7NothingClaimedWhileTheLedgerIsLost(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(calm())
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: 10 * time.Second}, calm(), f, clock)
	passAt(t, e, clock, calm())
	clock.t = clock.t.Add(10 * time.Second)
	f.ledgerErr = ledger.ErrLedgerLost // reshaped
	if err := e.Reconcile(t.Context()); err == nil {
		t.Fatal("no error while the ledger is lost")
	}
	clock.t = clock.t.Add(time.Second)
	s := full()
	s.Time = clock.t
	e.src.(*staticSource).snap = s
	_ = e.Reconcile(t.Context())
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/claimed while the ledger is lost: %v", f.acls)
	}
	// Back: protection follows within the pass.
	f.ledgerErr = nil
	clock.t = clock.t.Add(time.Second)
	s = full()
	s.Time = clock.t
	e.src.(*staticSource).snap = s
	_ = e.Reconcile(t.Context())
	if !f.acls[denyAll("a")] {
		t.Fatalf("R8.4/not protected once the ledger is back: %v", f.acls)
	}
}

// R8.7 (simulation class ledger_garbage, seed 16): only the broker's lift
// does not decode (garbage, or a newer guard's lift); its record does, so
// its claims are known. An operator's lift (the uninstall hook) lifts them:
// the lift it writes replaces the undecodable value. Before the fix the
// broker was left alone and what it set stayed after the uninstall. A
// record that does not decode still leaves its broker alone.
func TestR8_7OperatorLiftReplacesAnUndecodableLift(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	e, _ := newTestEnforcer(t, Config{Enabled: true}, full(), f, &clockAt{t0})
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	ledger.ApplyRecord(f.records, []byte(ledger.LiftKey(1)), []byte("\x00garbage\xff"))
	if f.records.Undecodable[1] != 1 || !f.records.UndecodableLift[1] {
		t.Fatalf("undecodable %v, lift only %v", f.records.Undecodable, f.records.UndecodableLift)
	}
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{All: true, By: "uninstall", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Untouchable) != 0 || len(res.Lifts) != 1 || len(f.acls) != 0 {
		t.Fatalf("R8.7/an undecodable lift held the uninstall's lift: %+v, acls %v", res, f.acls)
	}

	g := newFakeAdmin(full())
	e2, _ := newTestEnforcer(t, Config{Enabled: true}, full(), g, &clockAt{t0})
	if err := e2.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	ledger.ApplyRecord(g.records, []byte(ledger.LiftKey(1)), []byte("\x00garbage\xff"))
	ledger.ApplyRecord(g.records, []byte(ledger.RecordKey(1)), []byte(`{"v":99}`))
	if g.records.UndecodableLift[1] {
		t.Fatal("a broker whose record does not decode is taken for lift-only")
	}
	res, err = ledger.LiftProtection(t.Context(), g, ledger.LiftRequest{All: true, By: "uninstall", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Untouchable, []int32{1}) || len(g.acls) == 0 {
		t.Fatalf("R8.7/an undecodable record's claims were lifted: %+v, acls %v", res, g.acls)
	}
}

// R8.7 (simulation class ledger_delete, seed 77): a release reads the
// records again (ReleaseUnclaimed); when the topic was deleted and created
// again since this agent's last read, that read lacks the records it lost.
// They are put back from memory first: before the fix the agent took the
// recreated topic's content for its memory, its own claims fell out of it,
// and what they named stayed in place unclaimed for good.
func TestR8_7ReleaseReadKeepsWhatTheLedgerLost(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true}, full(), f, clock)
	passAt(t, e, clock, full())
	if len(e.clusterRecord().ACLTopics()) != 2 {
		t.Fatalf("not protected: %+v", e.clusterRecord())
	}
	f.records = ledger.NewRecords() // deleted, created again
	if _, err := e.release(t.Context(), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.clusterRecord().ACLTopics(); len(got) != 2 || !e.prot.dirty {
		t.Fatalf("R8.7/the agent's claims fell out of its memory at a release: %v (dirty %v)", got, e.prot.dirty)
	}
}

// liveFails fails the brokers' list while fail is set.
type liveFails struct {
	*fakeAdmin
	fail bool
}

func (l *liveFails) LiveBrokers(ctx context.Context) ([]int32, error) {
	if l.fail {
		return nil, errors.New("LiveBrokers: REQUEST_TIMED_OUT")
	}
	return l.fakeAdmin.LiveBrokers(ctx)
}

// R8.7 (simulation class ledger_reshape, seeds 134, 216, 295): an agent's
// memory of its peers' records is the last read of the topic that
// succeeded, even when its pass then failed (the brokers' list unread).
// Before the fix only a read whose whole pass succeeded counted, and a
// peer's claim made since was written back by nobody once the topic was
// lost and repaired.
func TestR8_7MemoryIsTheLastSuccessfulRead(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	passAt(t, dead, clock, full())
	la := &liveFails{fakeAdmin: f, fail: true}
	peer, _ := enforcerAs(t, 1, cfg, calm(), la, clock)
	clock.t = clock.t.Add(time.Second)
	_ = peer.Reconcile(t.Context()) // the records read, the brokers' list not
	f.records = ledger.NewRecords() // deleted, created again
	la.fail = false
	clock.t = clock.t.Add(time.Second)
	s := calm()
	s.Time = clock.t
	peer.src.(*staticSource).snap = s
	_ = peer.Reconcile(t.Context())
	if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/the peer did not write back broker 2's lost record: %+v", f.records.Agents)
	}
}

// R8.7 (simulation class ledger_delete, seed 304): broker 2's agent
// restarts while the ownership topic is lost and created again; it
// writes its new record (Fresh: it found none of its own) before any peer
// writes its old one back, and a peer never writes a record over one
// that is there. The peer, remembering the old record (not Fresh) with
// claims the new one lacks, writes them into it; the agent adopts them
// as its own and releases them on calm. Before the fix the bindings
// looked like the operator's and stayed for good.
func TestR8_7RestartedAgentAdoptsTheClaimsAPeerRemembers(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 20 { // past a lease: its records are no longer Fresh
		passAt(t, old, clock, full())
		clock.t = clock.t.Add(time.Second)
	}
	if !f.acls[denyAll("a")] || f.records.Agents[2].Fresh {
		t.Fatalf("not protected, or still Fresh: %+v", f.records.Agents[2])
	}
	passAt(t, peer, clock, calm()) // it reads broker 2's record
	// Broker 2's agent dies; the topic is deleted and created again; the
	// agent restarts and writes a record before the peer's next pass.
	f.records = ledger.NewRecords()
	back, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	clock.t = clock.t.Add(time.Second)
	passAt(t, back, clock, full())
	if r := f.records.Agents[2]; !r.Fresh || len(r.ACLTopics()) != 0 {
		t.Fatalf("the restarted agent's first record: %+v", r)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/the peer did not write the remembered claims back: %+v", f.records.Agents[2])
	}
	for range 4 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the restarted agent's earlier bindings were forgotten: %v", f.acls)
	}
}

// R8.7 (simulation class ledger_delete, seed 339): the ownership topic is
// deleted while broker 2's agent is dead, and created again holding only
// an undecodable lift under broker 2's key. The lift says nothing of what
// broker 2 claims (its record decodes wherever it is found), so the peer
// writes broker 2's record back as for any other lost record, and the
// dead agent's bindings are lifted after the lease. Before the fix the
// undecodable lift held the write-back: the record stayed lost, the
// restarted agent found nothing, and its cordon was left for good.
func TestR8_7PeerWritesBackARecordBesideAnUndecodableLift(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	passAt(t, dead, clock, full())
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm()) // it reads broker 2's record
	// Broker 2's agent dies; the topic is deleted and created again, and
	// an undecodable lift lands under broker 2's key.
	f.records = ledger.NewRecords()
	ledger.ApplyRecord(f.records, []byte(ledger.LiftKey(2)), []byte("\x00garbage\xff"))
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm())
	if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
		t.Fatalf("R8.7/an undecodable lift kept the peer from writing back broker 2's lost record: %+v", f.records.Agents)
	}
	for range 20 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the dead agent's bindings outlived the lost ledger: %v", f.acls)
	}
}

// R8.7 (simulation class ledger_delete, seed 1704): broker 2's agent dies,
// the ownership topic is deleted and created again, and an undecodable
// value lands under broker 2's record key. The peer does not write the
// lost record back (what broker 2 claims is unknown while its latest
// value does not decode), but remembers it: when broker 2's restarted
// agent writes a decodable record, the peer writes the earlier process's
// claims into it, and the agent releases them on calm. Before the fix
// the peer forgot the record at its first read of the undecodable value,
// and the bindings (in the simulation a cordon) stayed for good.
func TestR8_7PeerRemembersALostRecordBehindAnUndecodableOne(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 20 { // past a lease: its records are no longer Fresh
		passAt(t, old, clock, full())
		clock.t = clock.t.Add(time.Second)
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	passAt(t, peer, clock, calm()) // it reads broker 2's record
	// Broker 2's agent dies; the topic is deleted and created again with
	// an undecodable value under broker 2's record key.
	f.records = ledger.NewRecords()
	ledger.ApplyRecord(f.records, []byte(ledger.RecordKey(2)), []byte(`{"v":99,"broker_id":2}`))
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, calm())
	}
	if _, ok := f.records.Agents[2]; ok {
		t.Fatalf("a record was written over broker 2's undecodable one: %+v", f.records.Agents[2])
	}
	back, _ := enforcerAs(t, 2, cfg, calm(), f, clock)
	for range 20 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the restarted agent's earlier bindings were forgotten behind an undecodable record: %v", f.acls)
	}
}

// R8.7 (seed 20371, whole mix): the ownership topic is lost while broker
// 2's agent dies and restarts; the restarted agent writes its record
// (without its earlier process's claims) into the topic created again,
// and an undecodable value lands on top of it before the peer's first
// read. The fold keeps the restarted agent's record under the
// undecodable value; the peer does not write over it but keeps the
// earlier process's record in memory, and writes its claims into the
// broker's record once that decodes again: the agent releases them on
// calm. Before the fix the peer's memory took the restarted agent's
// record for broker 2's, the earlier claims were forgotten, and (in the
// simulation) a lowered local retention was left for good.
func TestR8_7PeerRemembersALostRecordBehindAnUndecodableValueOverANewRecord(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 20 { // past a lease: its records are no longer Fresh
		passAt(t, old, clock, full())
		clock.t = clock.t.Add(time.Second)
	}
	if !f.acls[denyAll("a")] {
		t.Fatal("not protected")
	}
	passAt(t, peer, clock, calm()) // it reads broker 2's record
	// Broker 2's agent dies; the topic is deleted and created again; the
	// restarted agent writes its record, then an undecodable value lands
	// under broker 2's record key.
	f.records = ledger.NewRecords()
	back, _ := enforcerAs(t, 2, cfg, full(), f, clock)
	clock.t = clock.t.Add(time.Second)
	passAt(t, back, clock, full())
	if r, ok := f.records.Agents[2]; !ok || r.Claims() {
		t.Fatalf("the restarted agent wrote no record of its own, or one with claims: %v %+v", ok, r)
	}
	ledger.ApplyRecord(f.records, []byte(ledger.RecordKey(2)), []byte(`{"v":99,"broker_id":2}`))
	clock.t = clock.t.Add(time.Second)
	passAt(t, peer, clock, calm()) // its first read since the loss
	for range 20 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, back, clock, calm())
		passAt(t, peer, clock, calm())
	}
	if len(f.acls) != 0 {
		t.Fatalf("R8.7/the restarted agent's earlier bindings were forgotten behind an undecodable value over its new record: %v", f.acls)
	}
}
