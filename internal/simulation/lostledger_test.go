package simulation

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// A lost record that claims a further lowering of a local retention
// (Value, with the guard's earlier value as Prev) was written before the
// new value was set: the value in place may still be Prev, which the
// record names as the guard's. Unattributed, both are waived (found by
// the simulation: ledger_reshape, seed 1092, where a StoreRecord failed
// after taking effect, so the lower value was never set, and the
// uninstall came while the topic was reshaped).
func TestUnattributedLoweringWaivesTheEarlierValue(t *testing.T) {
	s := newTestSim(t)
	s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
	earlier := "14532608"
	if err := s.c.Admin(1, "agent-1").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &earlier); err != nil {
		t.Fatal(err)
	}
	if f := s.checkEnd(); f == nil || f.Invariant != "I1" {
		t.Fatalf("a guard's local retention left: %v, want I1", f)
	}
	s.unattribute(1, ledger.Record{BrokerID: 1, Configs: []ledger.ConfigClaim{{Topic: "events",
		Key: enforcer.LocalRetentionBytesKey, Value: "6348800", Prev: &earlier}}})
	if f := s.checkEnd(); f != nil {
		t.Fatalf("an unattributed lowering's earlier value in place: %v", f)
	}
}

// An agent that restarts while its record does not decode and no
// decodable one is left cannot know what its earlier process claimed (its
// peers never write over an undecodable value): that is unattributed, for
// an operator to decide, and I1 waives it; while its record still
// decodes, nothing is waived (found by the simulation: ledger_garbage,
// seed 610).
func TestRestartOverAnUndecodableRecordIsUnattributed(t *testing.T) {
	s := newTestSim(t)
	s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
	v := "14532608"
	if err := s.c.Admin(2, "agent-2").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
		t.Fatal(err)
	}
	s.decodable = map[int32]ledger.Record{2: {BrokerID: 2, Configs: []ledger.ConfigClaim{{Topic: "events",
		Key: enforcer.LocalRetentionBytesKey, Value: v}}}}
	a := &agentSim{name: "agent-2", broker: 2, enabled: true}
	s.undecodableRestart(a) // no record at all: nothing to waive
	if f := s.checkEnd(); f == nil || f.Invariant != "I1" {
		t.Fatalf("a guard's local retention left: %v, want I1", f)
	}
	s.c.AppendOwnershipRecord(ledger.RecordKey(2), []byte("garbage"))
	s.undecodableRestart(a)
	if f := s.checkEnd(); f != nil {
		t.Fatalf("the claims of a record that does not decode, at its agent's restart: %v", f)
	}
}

// Every unattributed quota value is waived, not only the last one (found
// by the simulation: ledger_reshape, seed 1953: broker 1's lost record
// claimed 2048, then an agent's unrecorded 1024 replaced that waiver).
func TestUnattributedQuotasAreASet(t *testing.T) {
	s := newTestSim(t)
	s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
	s.unattributedQuota = map[int64]bool{}
	if err := s.c.Admin(1, "agent-1").SetDefaultProducerQuota(t.Context(), 2048); err != nil {
		t.Fatal(err)
	}
	s.unattribute(1, ledger.Record{BrokerID: 1, Owned: []ledger.Owned{ledger.QuotaOwned(2048)}})
	s.unattribute(2, ledger.Record{BrokerID: 2, Owned: []ledger.Owned{ledger.QuotaOwned(1024)}})
	if f := s.checkEnd(); f != nil {
		t.Fatalf("an unattributed quota in place: %v", f)
	}
}

// While the ledger is lost, protection status cannot show the guard's
// claims, and the agents still remember theirs (written back when it
// returns): the operator adds a binding identical to the guard's only once
// status can show no claim on it, as docs/operating.md says. Before, the
// simulated operator added it while status failed, and the guard's release
// of its remembered claim took it away (found by the simulation:
// ledger_reshape seeds 140, 671, 1303, 1536 and 1588, I2).
func TestOperatorWaitsForTheLedgerBeforeAddingAGuardsBinding(t *testing.T) {
	s := newTestSim(t)
	deny := ledger.LiteralACL("compacted", ledger.AnyPrincipal, ledger.OpWrite, ledger.PermDeny)
	if s.op.guards(deny) {
		t.Fatal("a binding no record claims, not in place, with the ledger readable: want the operator to add it")
	}
	s.c.RecreateOwnershipTopic(3)
	if !s.op.guards(deny) {
		t.Fatal("the ledger reshaped: want the operator to wait")
	}
	s.c.DeleteOwnershipTopic()
	if !s.op.guards(deny) {
		t.Fatal("the ledger deleted: want the operator to wait")
	}
}

// The ownership topic created again after a loss is not back until the
// records the agents remember are written back: empty, it shows no claim,
// yet a peer's copy of a lost record claiming the binding comes back with
// it (docs/operating.md). The operator waits until it is back, then adds
// the binding once status shows no claim on it. Before, the simulated
// operator added it on the empty topic, the peer wrote back broker 3's
// record claiming it, and the last agent to give that claim up deleted
// the operator's binding (found by the simulation: seed 34239, I2).
func TestOperatorWaitsForLostRecordsWrittenBackBeforeAddingAGuardsBinding(t *testing.T) {
	s := newTestSim(t)
	s.decodable = map[int32]ledger.Record{}
	deny := ledger.LiteralACL("orders", ledger.AnyPrincipal, ledger.OpWrite, ledger.PermDeny)
	shape := ledger.Shape{Deny: []string{ledger.AnyPrincipal}}
	// Broker 3's agent records its claim; its creation fails before
	// taking effect.
	claim := ledger.Record{BrokerID: 3, Owned: []ledger.Owned{{Kind: ledger.OwnedACL, Shape: &shape, Topics: []string{"orders"}}}}
	if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	s.loseLedger()
	s.lost.holders[3] = map[string]bool{"agent-1": true} // as it read it
	s.c.DeleteOwnershipTopic()
	s.c.RecreateOwnershipTopic(1) // an agent creates it again, empty
	s.settleLost()
	if !s.op.guards(deny) {
		t.Fatal("the topic created again, a lost record claiming the binding not yet written back: want the operator to wait")
	}
	// The peer writes it back: the claim shows.
	if err := s.c.Admin(1, "agent-1").StoreRecord(t.Context(), ledger.Record{BrokerID: 3, Restored: true, Owned: claim.Owned}); err != nil {
		t.Fatal(err)
	}
	s.settleLost()
	if !s.op.guards(deny) {
		t.Fatal("a record claims the binding: want the operator to wait")
	}
	// Broker 3's claim given up: status shows no claim on it.
	if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), ledger.Record{BrokerID: 3}); err != nil {
		t.Fatal(err)
	}
	s.settleLost()
	if s.op.guards(deny) {
		t.Fatal("the ledger back, no claim on the binding: want the operator to add it")
	}
}

// After the uninstall, what a record that does not decode claims is
// unattributed (the operator's lift --all leaves it, R8.7); the ownership
// topic deleted afterwards (compaction had left no decodable value under
// the key) takes with it what said which records do not decode, and
// nothing changes in the cluster: the waiver stays (found by
// the simulation: ledger_delete, seed 1813, where I1 took broker 2's
// lowered local.retention.bytes, kept by the uninstall's lift, for a
// guard's left once the topic was deleted after the uninstall).
func TestUndecodableClaimsStayUnattributedWhenTheLedgerGoesAfterTheUninstall(t *testing.T) {
	s := newTestSim(t)
	s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
	v := "4792320"
	if err := s.c.Admin(2, "agent-2").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Admin(2, "agent-2").StoreRecord(t.Context(), ledger.Record{BrokerID: 2, Configs: []ledger.ConfigClaim{{Topic: "events",
		Key: enforcer.LocalRetentionBytesKey, Value: v}}}); err != nil {
		t.Fatal(err)
	}
	s.decodable = map[int32]ledger.Record{}
	s.settleLost() // the last decodable record
	for range 2 {  // compaction leaves no decodable value under the key
		s.c.AppendOwnershipRecord(ledger.RecordKey(2), []byte("garbage"))
	}
	s.uninstalled = true
	s.loseLedger()
	s.c.DeleteOwnershipTopic()
	s.settleLost()
	if f := s.checkEnd(); f != nil {
		t.Fatalf("the claims of a record that did not decode at the uninstall, the topic deleted since: %v", f)
	}
}

// An uninstall while the topic is lost leaves what a record that did not
// decode at the loss claims, as it would with the topic there (R8.7,
// "Left alone"): its agent's last decodable record's bindings are
// unattributed, and I3 and I1 waive them (found by the simulation, seed
// 74353 of the default mix: broker 2's record did not decode, compaction
// had removed its last readable one, the topic was reshaped, the
// operator's DENY READ User:mallory made the ALLOW READ User:* of broker
// 2's absence shape on events the producer's only READ, and once settled
// I3 took it for the guard's binding outliving the operator's change).
func TestUndecodableClaimsStayUnattributedWhenTheUninstallFindsTheLedgerLost(t *testing.T) {
	s := newTestSimSeed(t, 3)
	if !s.allowEveryone() {
		t.Fatal("the test needs allow.everyone.if.no.acl.found (seed 3's cluster)")
	}
	var allows []ledger.ACL
	for _, op := range ledger.OpsButWrite {
		allows = append(allows, ledger.LiteralACL("events", ledger.AnyPrincipal, op, ledger.PermAllow))
	}
	agent2 := s.c.Admin(2, "agent-2")
	if err := agent2.CreateACLs(t.Context(), allows); err != nil {
		t.Fatal(err)
	}
	if err := agent2.StoreRecord(t.Context(), ledger.Record{BrokerID: 2, Owned: ledger.OwnedFromBindings(allows)}); err != nil {
		t.Fatal(err)
	}
	s.decodable = map[int32]ledger.Record{}
	s.settleLost() // the last decodable record
	for range 2 {  // compaction leaves no decodable value under the key
		s.c.AppendOwnershipRecord(ledger.RecordKey(2), []byte("garbage"))
	}
	s.loseLedger()
	s.c.RecreateOwnershipTopic(3)
	s.settleLost()
	s.op.createACL(t.Context(), ledger.LiteralACL("events", "User:mallory", ledger.OpRead, ledger.PermDeny))
	s.uninstalled = true
	for _, a := range s.agents {
		s.forget(a)
	}
	s.quiet, s.step = true, s.opts.Steps+settleSteps
	if !s.settled() {
		t.Fatal("the test needs the settling passes done")
	}
	if !s.c.Authorize(producer, "events", ledger.OpRead) {
		t.Fatal("the test needs the producer's READ on events through broker 2's ALLOW READ User:*")
	}
	if f := s.check(); f != nil {
		t.Errorf("broker 2's bindings, its record undecodable when the topic was lost before the uninstall: %v", f)
	}
	s.loseLedger()
	s.c.DeleteOwnershipTopic() // the operator deletes the reshaped topic
	s.settleLost()
	if f := s.checkEnd(); f != nil {
		t.Errorf("broker 2's bindings once the reshaped topic is deleted: %v", f)
	}
}

// A lost record whose claims no live agent remembers is lost for good
// even when a record of its broker is back in the topic: a peer's older
// copy, read before the owner's last write, lacks them. They are
// unattributed (R8.4), and I1 waives them (found by the simulation:
// ledger_delete, seed 321: broker 3's agent lowered local.retention.bytes
// further and died, the topic was deleted before any peer read that
// record, a peer wrote back its older copy, and I1 took the lowered value
// for a guard's left). While an agent remembers them, nothing is waived.
func TestLostClaimsBackOnlyInAnOlderCopyAreUnattributed(t *testing.T) {
	for _, remembered := range []bool{false, true} {
		s := newTestSim(t)
		s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
		s.decodable = map[int32]ledger.Record{}
		v := "4915200"
		if err := s.c.Admin(3, "agent-3").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
			t.Fatal(err)
		}
		lost := ledger.Record{BrokerID: 3, Configs: []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: v}}}
		if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), lost); err != nil {
			t.Fatal(err)
		}
		s.loseLedger()
		if remembered {
			s.lost.holders[3] = map[string]bool{"agent-1": true}
		}
		s.c.DeleteOwnershipTopic()
		// A peer writes back its older copy of broker 3's record.
		if err := s.c.Admin(1, "agent-1").StoreRecord(t.Context(), ledger.Record{BrokerID: 3}); err != nil {
			t.Fatal(err)
		}
		s.settleLost()
		f := s.checkEnd()
		switch {
		case !remembered && f != nil:
			t.Fatalf("claims lost with the ledger, remembered by no live agent, an older copy back: %v", f)
		case remembered && (f == nil || f.Invariant != "I1"):
			t.Fatalf("claims a live agent remembers were waived: %v, want I1", f)
		}
	}
}

// A lost record whose claims its writer's process alone remembers is not
// done with when a peer's older copy comes back: until that process
// writes its record again, its memory is the only place the claims are.
// Killed first, it takes them with it: unattributed (R8.4), and I1 waives
// them (found by the simulation: ledger_delete, seed 595: broker 3's
// agent lowered local.retention.bytes, the topic was reshaped before any
// peer read that record, a peer's older copy came back, and the agent's
// own write failed before it was killed). Written again by that process
// first, the record is done with, and nothing is waived.
func TestLostClaimsTheirDeadWriterAloneRememberedAreUnattributed(t *testing.T) {
	for _, rewrites := range []bool{false, true} {
		s := newTestSim(t)
		s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
		s.decodable = map[int32]ledger.Record{}
		v := "13672448"
		if err := s.c.Admin(3, "agent-3").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
			t.Fatal(err)
		}
		started := start.Add(-time.Minute)
		lost := ledger.Record{BrokerID: 3, Started: started, Configs: []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: v}}}
		if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), lost); err != nil {
			t.Fatal(err)
		}
		s.loseLedger()
		s.lost.holders[3] = map[string]bool{"agent-3": true} // as it wrote it
		s.c.DeleteOwnershipTopic()
		// A peer writes back its older copy of broker 3's record.
		if err := s.c.Admin(1, "agent-1").StoreRecord(t.Context(), ledger.Record{BrokerID: 3, Started: started, Restored: true}); err != nil {
			t.Fatal(err)
		}
		s.settleLost()
		if rewrites {
			// Its own write from memory (the claim since dropped).
			if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), ledger.Record{BrokerID: 3, Started: started}); err != nil {
				t.Fatal(err)
			}
			s.settleLost()
		}
		s.forget(&agentSim{name: "agent-3", broker: 3})
		s.settleLost()
		f := s.checkEnd()
		switch {
		case !rewrites && f != nil:
			t.Fatalf("claims lost with their writer's process, an older copy back: %v", f)
		case rewrites && (f == nil || f.Invariant != "I1"):
			t.Fatalf("claims of a record its writer wrote again were waived: %v, want I1", f)
		}
	}
}

// A peer's memory of another agent's record is what its last successful
// read returned, and the copies it wrote back since: a copy it wrote back
// before that read is forgotten (the enforcer remembers the records as
// read). Before, the simulation counted such a copy as remembered when its
// claims happened to match the lost record's, and a claim no live agent
// remembered was not waived (found by the simulation, seed 5087: broker
// 2's agent wrote back broker 3's record with its cordon claim, then read
// the record without it; broker 3's agent cordoned again, the topic was
// reshaped and the agent killed: I1 took the cordon for a guard's left).
func TestPeerMemoryIsTheLastReadNotAnEarlierWriteBack(t *testing.T) {
	s := newTestSim(t)
	s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
	s.decodable = map[int32]ledger.Record{}
	ctx := t.Context()
	dir := s.c.LogDirs(3)[0]
	started := start.Add(-time.Minute)
	cordoned := func(seq uint64) ledger.Record {
		return ledger.Record{BrokerID: 3, Instance: "agent-3", Started: started, Seq: seq, Owned: []ledger.Owned{ledger.CordonClaim(dir)}}
	}
	peer := s.agents[1].tracked // agent-2's
	copy1 := cordoned(1)
	copy1.Restored = true
	if err := peer.StoreRecord(ctx, copy1); err != nil { // a write-back
		t.Fatal(err)
	}
	owner := s.c.Admin(3, "agent-3")
	if err := owner.StoreRecord(ctx, ledger.Record{BrokerID: 3, Instance: "agent-3", Started: started, Seq: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.LoadRecords(ctx); err != nil { // reads the record without the claim
		t.Fatal(err)
	}
	if err := owner.CordonLogDir(ctx, 3, dir); err != nil {
		t.Fatal(err)
	}
	if err := owner.StoreRecord(ctx, cordoned(3)); err != nil { // read by no peer
		t.Fatal(err)
	}
	s.loseLedger()
	if s.lost.holders[3]["agent-2"] {
		t.Fatalf("agent-2 counted as remembering broker 3's lost record (holders %v): its last read lacks the claim", s.lost.holders[3])
	}
	s.c.DeleteOwnershipTopic()
	s.settleLost()
	if f := s.checkEnd(); f != nil {
		t.Fatalf("a cordon claim no live agent remembers, lost with the ledger: %v", f)
	}
}

// The two instances of broker 1's agent (duplicate_agent), started in one
// step, are two processes to the ledger: their records name different
// process starts (Record.Started). Started on the step's exact time, they
// named the same one, and a peer that remembered agent-1b's record, lost
// with the ownership topic, took agent-1's record written from memory
// over it for the same process's (Record.Inherited), so it never wrote
// agent-1b's local retention claim back (found by the simulation, seed
// 6399: agent-1b's lowered value left over the operator's 209715200).
func TestSecondInstanceStartedInTheSameStepIsAnotherProcess(t *testing.T) {
	s, first, second := newDuplicateSim(t)
	s.c.SetFill(1, capacity*97/100-int64(s.c.Usage(1)*capacity))
	next := func(agents ...*agentSim) {
		s.step++
		s.now = s.now.Add(step)
		s.c.Step(s.now, producer)
		for _, a := range agents {
			s.pass(a)
		}
	}
	next(first, second)
	own, ok := first.tracked.stored[1]
	if !ok || own.Instance != "agent-1" {
		t.Fatalf("the test needs agent-1's record: %+v", own)
	}
	// agent-1 dies; agent-1b takes over after its lease.
	first.deadTill = 1 << 30
	for range int(lease/step) + 3 {
		next(second)
	}
	taken, ok := second.tracked.stored[1]
	if !ok || taken.Instance != "agent-1b" {
		t.Fatalf("the test needs agent-1b's record: %+v", taken)
	}
	if taken.Started.Equal(own.Started) {
		t.Errorf("agent-1 and agent-1b, started in one step, name one process start %v", own.Started)
	}
}

// A lost record not back yet stays lost when a later loss finds its key
// holding another record that lacks its claims: the broker's next process
// wrote that one while the topic was briefly back, before any peer that
// remembered the first could read it and write its claims in. Each keeps
// its own holders: when the last agent that remembers the first dies, its
// claims are in no record and no memory, unattributed (R8.4), and I1
// waives them; while it lives, nothing is waived. Before, the second loss
// replaced the first record (and its holders) with the second, and the
// first one's claims were neither tracked nor waived (found by the
// simulation, seed 23945: agent-2's DENY WRITE on bursts, compacted and
// events, its record lost when the topic was reshaped; its restarted
// process wrote a fresh record with a local retention claim into the
// topic created again, agent-1's reads failed meanwhile, the topic was
// reshaped again and agent-1, which alone remembered the bindings, was
// killed: I1 took {bursts literal User:* * WRITE DENY} for a guard's left).
func TestLostRecordReplacedBeforeItWasBackKeepsItsHolders(t *testing.T) {
	for _, dies := range []bool{false, true} {
		s := newTestSim(t)
		s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
		s.decodable = map[int32]ledger.Record{}
		ctx := t.Context()
		deny := ledger.LiteralACL("bursts", ledger.AnyPrincipal, ledger.OpWrite, ledger.PermDeny)
		owner := s.c.Admin(2, "agent-2")
		if err := owner.CreateACLs(ctx, []ledger.ACL{deny}); err != nil {
			t.Fatal(err)
		}
		first := ledger.Record{BrokerID: 2, Instance: "agent-2", Started: start.Add(-time.Hour), Seq: 8,
			Owned: []ledger.Owned{{Kind: ledger.OwnedACL, Shape: &ledger.Shape{Deny: []string{ledger.AnyPrincipal}}, Topics: []string{"bursts"}}}}
		if err := owner.StoreRecord(ctx, first); err != nil {
			t.Fatal(err)
		}
		s.loseLedger()
		s.lost.holders[2] = map[string]bool{"agent-1": true} // as it read it
		s.c.DeleteOwnershipTopic()
		s.settleLost()
		// The broker's next process writes a fresh record with another
		// claim into the topic created again; no peer that remembers the
		// first reads it before the topic is lost again.
		second := ledger.Record{BrokerID: 2, Instance: "agent-2", Started: start, Seq: 2, Fresh: true,
			Configs: []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: "5775360"}}}
		if err := owner.StoreRecord(ctx, second); err != nil {
			t.Fatal(err)
		}
		s.settleLost()
		s.loseLedger()
		s.lost.holders[2] = map[string]bool{"agent-3": true}
		s.c.RecreateOwnershipTopic(3)
		s.settleLost()
		if dies {
			s.forget(&agentSim{name: "agent-1", broker: 1})
			s.settleLost()
		}
		f := s.checkEnd()
		switch {
		case dies && f != nil:
			t.Fatalf("the claims of a lost record whose last holder died, its key holding a later record since: %v", f)
		case !dies && (f == nil || f.Invariant != "I1"):
			t.Fatalf("claims a live agent remembers were waived: %v, want I1", f)
		}
	}
}
