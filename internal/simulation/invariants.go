package simulation

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The invariants (issue 20), checked after every step (I1 once faults
// have stopped for a lease plus three passes):
//
//   - I1: nothing the guard set outlives its need by more than a lease
//     plus three passes once faults stop: no binding but the operator's,
//     the operator's quota (or none), the operator's local retention.
//   - I2: nothing an operator set is removed or changed: its bindings
//     stay, its quota stays at its value.
//   - I3: no principal gains an access it did not have: the authorizer's
//     answers for principals x topics x operations with every binding
//     allow nothing the operator's bindings alone would not, but what a
//     principal held before the operator's last ACL change, until the
//     guard re-plans (access.go).
//   - I4: unexpired bytes purged stay within the caps (5% of the log dir
//     an hour, 10% a day, each crossed by at most one segment), across
//     agent restarts.
//   - I5: no DeleteRecords on a tiered or compact-only topic.
//   - I6: protection is in place within two passes of a log dir reaching
//     the protect band, and stays while it is there (an agent alive and
//     enforcing and not standing by for a dead instance's live lease
//     (R8.8), no fault but a broker restart since, no operator lift in
//     the episode, the ledger not reshaped; a broker fenced when the
//     episode began protects from its return).

var (
	gridPrincipals = []string{producer, "User:alice", "User:mallory", "User:bob", "User:admin"}
	gridTopics     = []string{"orders", "events", "compacted", "_schemas", "other"}
	gridOps        = []string{ledger.OpRead, ledger.OpWrite, ledger.OpDescribe, ledger.OpDelete, "ALTER", ledger.OpCreate}
)

// Caps of unexpired bytes purged (enforcer.purge defaults).
const (
	capHour = enforcer.DefaultPurgeMaxPercentPerHour / 100.0
	capDay  = enforcer.DefaultPurgeMaxPercentPerDay / 100.0
	// maxSegment: the simulated topics' largest segment.bytes.
	maxSegment = 8 << 20
)

func (s *sim) fail(inv, format string, args ...any) *Failure {
	return &Failure{Invariant: inv, Message: fmt.Sprintf(format, args...)}
}

// check checks the invariants after a step, in order (I2, I3, I5 and I4,
// I6): the first broken one is the failure.
func (s *sim) check() *Failure {
	acls := s.c.ACLs()
	for _, check := range []func() *Failure{
		func() *Failure { return s.checkOperatorsKept(acls) },
		func() *Failure { return s.checkNoRightGained(acls) },
		s.checkDeletions,
		s.checkProtection,
	} {
		if f := check(); f != nil {
			return f
		}
	}
	return nil
}

// checkOperatorsKept is I2: the operator's bindings, quota and cordon
// stay, and no broker has every log dir cordoned.
func (s *sim) checkOperatorsKept(acls map[ledger.ACL]bool) *Failure {
	c := s.c
	for a := range s.op.acls {
		if !acls[a] && !s.op.busy["acl"] {
			return s.fail("I2", "the operator's binding %v was removed", a)
		}
	}
	if s.op.quota > 0 && !s.op.busy["quota"] && c.Quota() != s.op.quota {
		return s.fail("I2", "the operator's producer quota %d is now %d", s.op.quota, c.Quota())
	}
	if spare := c.SpareLogDir(1); !slices.Contains(c.Cordoned(1), spare) {
		return s.fail("I2", "the operator's cordon of %s was removed (cordoned.log.dirs %v)", spare, c.Cordoned(1))
	}
	for _, id := range []int32{1, 2, 3} {
		// The broker's last uncordoned log dir is never cordoned by
		// the guard.
		if len(c.Cordoned(id)) >= len(c.LogDirs(id)) {
			return s.fail("I2", "every log dir of broker %d is cordoned: %v", id, c.Cordoned(id))
		}
	}
	return nil
}

// checkNoRightGained is I3: no principal may do anything the operator's
// bindings alone would not let it (grid.go).
func (s *sim) checkNoRightGained(acls map[ledger.ACL]bool) *Failure {
	return s.checkGrid(acls)
}

// checkDeletions is I5 (no DeleteRecords on a tiered or compact-only
// partition) and I4 (the unexpired bytes purged stay under the caps).
func (s *sim) checkDeletions() *Failure {
	c := s.c
	for _, d := range c.Deletions {
		if d.Tiered || d.Compact {
			return s.fail("I5", "DeleteRecords on %s-%d (tiered %v, compact-only %v)", d.Topic, d.Partition, d.Tiered, d.Compact)
		}
	}
	for _, id := range []int32{1, 2, 3} {
		var hour, day int64
		for _, d := range c.Deletions {
			if lost, ok := s.forgottenPurges[id]; d.Broker != id || ok && !d.At.After(lost) {
				continue // lost with the ledger beyond any process's reach (forgetPurges)
			}
			if age := s.now.Sub(d.At); age < time.Hour {
				hour += d.Unexpired
			} else if age < 24*time.Hour {
				day += d.Unexpired
			}
		}
		day += hour
		// A cap is crossed by at most one segment (enforcer/plan.go).
		if float64(hour) > capHour*capacity+maxSegment || float64(day) > capDay*capacity+maxSegment {
			return s.fail("I4", "broker %d purged %d unexpired bytes in the last hour, %d in the last day (caps %.0f, %.0f)",
				id, hour, day, capHour*capacity, capDay*capacity)
		}
	}
	return nil
}

// checkProtection is I6: a log dir in the protect band is protected by
// an agent bound to protect it.
func (s *sim) checkProtection() *Failure {
	c := s.c
	if c.OwnershipPartitions() > 1 {
		// A reshaped ledger is lost until repaired: the guard claims
		// nothing new (R8.7), so protects nothing anew.
		s.lastFault[-1] = s.step
	}
	for _, id := range []int32{1, 2, 3} {
		u := c.Usage(id)
		since, in := s.protectSince[id]
		switch {
		case u >= 0.90 && !in:
			s.protectSince[id], since, in = s.step, s.step, true
			s.fencedAtStart[id] = !c.Alive(id)
		case in && s.fencedAtStart[id] && c.Alive(id):
			// A broker fenced (restarting) protects nothing anew (R8.8):
			// the episode counts from its return.
			s.protectSince[id], since = s.step, s.step
			s.fencedAtStart[id] = false
		case u < 0.85:
			delete(s.protectSince, id)
			in = false
		}
		if u < 0.80 && s.agentSeesItsDisk(id) {
			// The episode an operator's lift holds for ends under the
			// purge band's restore bound (enforcer: lowerFrom), for an
			// agent alive to see it: one dead through the dip finds the
			// lift unacknowledged at its restart and honours it.
			s.suppressed[id] = false
		}
		if !in || u < 0.90 || s.step-since < 1 || s.fencedAtStart[id] || !s.mustProtect(id, since) {
			continue
		}
		if what := s.unprotected(id); what != "" {
			return s.fail("I6", "broker %d's log dir at %.1f%% since step %d: %s", id, 100*u, since, what)
		}
	}
	return nil
}

// mustProtect: broker id's agent is bound to have protection in place:
// it has been alive and enforcing since before the log dir entered the
// band, is not standing by for a dead instance's lease (standsBy), no
// fault but a broker restart has touched it since, the operator has not
// lifted protection in this episode, and the guard is installed.
func (s *sim) mustProtect(id int32, since int) bool {
	if s.uninstalled || s.suppressed[id] || s.liftedAt >= since-1 {
		return false
	}
	if f, ok := s.lastFault[id]; ok && f >= since-1 {
		return false
	}
	if f, ok := s.lastFault[-1]; ok && f >= since-1 {
		return false
	}
	for _, a := range s.agents {
		if a.broker == id && a.name == fmt.Sprintf("agent-%d", id) {
			return a.enabled && a.deadTill < 0 && a.since < since && a.clock.offset == 0 && !s.standsBy(a, since)
		}
	}
	return false
}

// standsBy: agent a stands by, in the episode begun at since, for its
// broker's other instance (R8.8), which died with its lease live: a
// takes over a lease after the read that first showed the last renewal,
// or the other instance's record again after a read of its own (a
// takeover carrying the same stamp: seed 69603), on its own clock,
// changing nothing until then: I6 binds it from the
// pass after its takeover's (seed 34072: agent-1b, acting for broker 1, killed a
// pass after its renewal, the log dir reached the protect band three
// passes later, and agent-1 took over at the lease's end, a pass after
// I6 required protection). An instance alive since before the episode
// acts for the broker, bound as a is, unless its clock is off: I6 binds
// no agent with a jumped clock (mustProtect; its snapshot, stamped on the
// cluster's clock, is stale to it: it protects nothing anew and renews
// no lease, spec R8.1), and a stands by for it as for a dead one (seed
// 80610: agent-1b, acting for broker 1, renewed last at step 16, its
// clock jumped 5 minutes at step 17, the log dir reached the protect band
// at step 19, and agent-1 took over at the lease's end). Only for a clock
// ahead (a clock behind leaves the snapshots fresh: that instance acts),
// and only while that instance took no record over since its clock
// jumped (aheadTakeover): one that cannot trust its inputs takes none
// over (the enforcer's followInstance; seed 69603: agent-1b, 2 hours
// ahead, took broker 1 over from agent-1 every lease, and agent-1 stood
// by).
func (s *sim) standsBy(a *agentSim, since int) bool {
	t := a.tracked
	if t.otherRenewed.IsZero() || s.step > t.otherReadAt+int(lease/step) {
		return false
	}
	for _, o := range s.agents {
		if o != a && o.broker == a.broker && (o.deadTill >= 0 || o.since >= since || o.clock != nil && o.clock.offset > 0 && !o.aheadTakeover) {
			return true
		}
	}
	return false
}

// unprotected says what of broker id's protection is missing ("": none).
func (s *sim) unprotected(id int32) string {
	if s.strategy == enforcer.StrategyQuota {
		if s.c.Quota() == 0 {
			return "no producer quota"
		}
		return ""
	}
	for _, t := range s.c.Led(id) {
		if t == "_schemas" {
			continue
		}
		if s.c.Authorize(producer, t, ledger.OpWrite) {
			return fmt.Sprintf("%s may still write to %s", producer, t)
		}
	}
	return ""
}

// unattributeUndecodable: after an uninstall, a broker whose record does
// not decode is left alone by the uninstall's lift (R8.7: its claims are
// unknown), and its agent, stopped, never writes a readable one: what its
// last decodable record claims (compaction may have removed it from the
// topic) is for an operator to decide (protection lift says "Left
// alone"). I1 and I3 both waive it. With the topic lost, which records
// did not decode is what it held when lost: the uninstall's lift fails,
// and the peers that remembered the last decodable record stopped
// (found by the simulation, seed 74353 of the default mix: broker 2's
// record did not decode, compaction had removed its last readable one,
// the topic was reshaped, the uninstall came while it was lost, and I3
// took broker 2's ALLOW READ User:* on events, which the operator's
// DENY READ User:mallory made the producer's only READ, for the guard's
// outliving the operator's change).
func (s *sim) unattributeUndecodable() {
	recs, err := s.c.Records()
	if err != nil {
		for _, id := range slices.Sorted(maps.Keys(s.lost.undecodable)) {
			s.unattribute(id, s.decodable[id])
		}
		return
	}
	for _, id := range slices.Sorted(maps.Keys(recs.Undecodable)) {
		if !recs.UndecodableLift[id] {
			s.unattribute(id, s.decodable[id])
		}
	}
}

// checkEnd checks I1 after the quiet phase.
func (s *sim) checkEnd() *Failure {
	var f *Failure
	if s.uninstalled {
		for _, a := range s.agents {
			s.orphan(a) // stopped by the uninstall
		}
		s.unattributeUndecodable()
	}
	for a := range s.c.ACLs() {
		if !s.op.acls[a] && !s.unattributed[a] {
			f = s.fail("I1", "binding %v left after the faults stopped", a)
			break
		}
	}
	if f == nil && s.c.Quota() != s.op.quota && !s.unattributedQuota[s.c.Quota()] {
		f = s.fail("I1", "producer quota %d left (the operator's: %d)", s.c.Quota(), s.op.quota)
	}
	if v, ok := s.c.Override("events", enforcer.LocalRetentionBytesKey); f == nil && (ok != (s.op.localRet != nil) || ok && v != *s.op.localRet) &&
		!(ok && s.unattributedConfigs["events\x00"+v]) {
		f = s.fail("I1", "local.retention.bytes of events is %q (set %v), the operator's: %s", v, ok, deref(s.op.localRet))
	}
	for _, id := range []int32{1, 2, 3} {
		// A guard's cordon outlives its need: the log dir is under the
		// uncordon bound (75% - 5 points).
		for _, d := range s.c.Cordoned(id) {
			if f == nil && d != s.c.SpareLogDir(1) && s.c.Usage(id) < 0.70 && !s.unattributedCordons[d] {
				f = s.fail("I1", "log dir %s of broker %d still cordoned at %.1f%% after the faults stopped", d, id, 100*s.c.Usage(id))
			}
		}
	}
	if f != nil {
		f.Seed, f.Step, f.Trace = s.opts.Seed, s.step, s.trace
	}
	return f
}

func (s *sim) allowEveryone() bool {
	return s.c.Authorize("User:nobody-has-acls", "__no_acl_topic", ledger.OpRead)
}

func keys(m map[ledger.ACL]bool) []ledger.ACL {
	out := make([]ledger.ACL, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	return out
}

// agentAlive reports whether broker id's own agent is running and
// enforcing.
// agentSeesItsDisk: broker id's agent is alive and its snapshot fresh on
// its clock. The simulation stamps every snapshot with the cluster's
// time, so an agent whose clock jumped forward by more than staleAfter
// (class clock_jump: 5 minutes, 2 hours) reads each one as stale, and a
// stale snapshot keeps protection as it was (enforcer/desired.go): it
// cannot see the disk calm, and an operator's lift holds on (ledger_garbage
// seed 1659). A real agent stamps its snapshots with its own clock, and
// Go's monotonic reading makes their age immune to a wall clock jump:
// the simulated jump is harsher than the real one here.
func (s *sim) agentSeesItsDisk(id int32) bool {
	for _, a := range s.agents {
		if a.broker == id && a.name == fmt.Sprintf("agent-%d", id) {
			return s.agentAlive(id) && (a.clock == nil || a.clock.offset <= enforcer.DefaultStaleAfter)
		}
	}
	return false
}

func (s *sim) agentAlive(id int32) bool {
	for _, a := range s.agents {
		if a.broker == id && a.name == fmt.Sprintf("agent-%d", id) {
			return a.enabled && a.deadTill < 0
		}
	}
	return false
}
