package enforcer

import (
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// keepOverwritten keeps what this agent's last written record claimed
// when another instance for the same broker has written over it (spec
// R8.8). Two instances write one record: an instance whose reads failed
// writes from a stale one, and the bindings (and the quota) the other
// claimed leave the ledger while they stay in place. Those no record
// names are remembered as set unrecorded: this agent lifts them like its
// own once it acts again (a standby changes nothing), and until then they
// are the guard's, never an operator's, to every pass of this agent. Its
// config claims (lowered local retention) are kept too, and written back
// into its record once it acts (mergeKept).
// Of the bindings and the quota, what a lift of this broker that the
// record written had not acknowledged covers is not kept: the lift voided
// those claims and its writer (a peer after the lease, an operator)
// released them; what it could not release stays with the record that
// acknowledges it. Kept, an operator's identical binding made after the
// lift would be taken for this agent's and deleted (spec R8.6; found by
// the simulation, ledger_garbage seed 174). A lift that names the other
// instance's record (Lift.Instance) voided that record, not this one:
// what only this one claimed is kept. Nor is a binding a read of the ACLs
// made since the record was written found gone (writtenGone): the read
// that prunes the set unrecorded (pruneUnrecorded) may have come before
// this one saw the record over its own (seed 42119: agent-1 released
// its bindings, its next record, without them, took effect with its reply
// lost, and agent-1b took that one over); nor, likewise, the quota when a
// read of it made since found another value in place (writtenQuotaGone).
// Config claims are kept either way (below). Once per record written.
func (e *Enforcer) keepOverwritten(recs Records) {
	cur := recs.Agents[e.brokerID]
	w := e.prot.written
	if w == nil || w.Instance != e.instance || cur.Instance == "" || cur.Instance == e.instance || w.Updated.Equal(e.prot.overwritten) ||
		tookOverWrite(w, cur, e.instance) {
		return
	}
	e.prot.overwritten = w.Updated
	voided := func(string) bool { return false }
	if l, ok := recs.Lifts[e.brokerID]; ok && l.ID != "" && l.ID != w.Ack && (l.Instance == "" || l.Instance == w.Instance) {
		// A lift of the other instance's record (written over this one's
		// before the lift) released what that record claimed, not this
		// one's claims it lacks: those stay in place, and are kept (seed
		// 22514: an operator's lift of agent-1b's record voided agent-1's
		// claims on its ALLOWs, which no one then released).
		voided = l.Covers
	}
	now := bindingIndex{}
	cur.Bindings(nil, func(a ACL) { now.add(a) })
	n := 0
	w.Bindings(func(topic string) bool { return !voided(topic) }, func(a ACL) {
		if !now.has(a) && !e.prot.unrecorded[a] && !e.prot.writtenGone[a] {
			e.prot.unrecorded[a] = true
			n++
		}
	})
	for _, c := range w.Configs {
		// A config claim is kept even where the lift voided it: its
		// writer may have lifted a record that lacked it (a peer's older
		// copy written back over the one the ownership topic lost, or the
		// other instance's record), and released nothing of it; the
		// planner releases a lifted claim only while the guard's value is
		// in place (keepConfigClaims), so nothing set since is touched
		// (seed 9921). It is kept too where the record over it claims the
		// key on another original: that claim may have been made on this
		// claim's value, taken for the operator's (the other instance
		// restarted while the ledger was lost), and restores it; mergeKept
		// writes the kept claim back if no claim of the record holds the
		// key when this agent acts (seed 7144). A claim on the key with
		// the same original restores what this one would (the other
		// instance took it over, or lowered further on the same operator's
		// value): not kept. One being given up with another value does
		// not: its release ends, restoring nothing, once its own value is
		// not in place (givenUpOver).
		if !sameOriginalClaim(cur, c) && !slices.ContainsFunc(e.prot.keptConfigs, func(k ConfigClaim) bool { return sameKey(k, c) }) {
			e.prot.keptConfigs = append(e.prot.keptConfigs, c)
			n++
		}
	}
	q := max(w.Quota(), w.ReleasingQuota())
	if q > 0 && cur.Quota() != q && cur.ReleasingQuota() != q && !voided("") && !e.prot.writtenQuotaGone {
		e.prot.unrecordedQuota = q
	}
	if n > 0 || e.prot.unrecordedQuota > 0 {
		e.logger.Warn("another agent instance for this broker wrote over this agent's record: what it claimed is kept as set unrecorded, lifted by this agent",
			"broker_id", e.brokerID, "instance", e.instance, "other_instance", cur.Instance, "claims", n, "quota", e.prot.unrecordedQuota)
	}
}

// mergeKept writes the config claims keepOverwritten kept (local
// retention lowered by this agent, its record written over by another
// instance's that lacks them) back into this broker's record as read,
// while this agent acts (not standing by, not in observe mode), and marks
// the record to be written: the planner then restores or keeps them like
// any claim of its own. A lowered value no claim names would be taken for
// an operator's and stay for good (found by the simulation,
// ledger_garbage seed 1125). A kept claim whose value another record's
// claim on another original sets is not written back: two claims with
// different originals never share a value (the operator changed the
// value since, and another agent lowered the new one to the same number:
// the kept claim's original is the older one). Kept until a record
// planned with them is written.
func (e *Enforcer) mergeKept(recs Records) Records {
	if len(e.prot.keptConfigs) == 0 || e.prot.standby || e.dryRun {
		return recs
	}
	recs = recs.Clone()
	cur := recs.Agents[e.brokerID]
	cur.BrokerID = e.brokerID
	cur.Configs = slices.Clone(cur.Configs)
	added := false
	for _, c := range e.prot.keptConfigs {
		if recs.OtherOriginalSets(c.Topic, c.Key, c.Value, c.Orig) {
			continue
		}
		if i, ok := givenUpOver(cur, c); ok {
			// The record's only claim on the key is being given up, on
			// the same original, with another value: the kept claim
			// takes its place, that value as its earlier one (either
			// value in place is the guard's, and its release restores
			// the original).
			c.Prev = strPtr(cur.Configs[i].Value)
			cur.Configs[i] = c
			added = true
			continue
		}
		if !claimsKey(cur, c) {
			cur.Configs = append(cur.Configs, c)
			added = true
		}
	}
	e.prot.keptMerged = true
	if added {
		recs.Agents[e.brokerID] = cur
		e.prot.dirty = true
	}
	return recs
}

// claimsKey reports whether r holds a claim on c's topic config key.
func claimsKey(r Record, c ConfigClaim) bool {
	return slices.ContainsFunc(r.Configs, func(x ConfigClaim) bool { return sameKey(x, c) })
}

func sameKey(a, b ConfigClaim) bool { return a.Topic == b.Topic && a.Key == b.Key }

// sameOriginalClaim reports whether r holds a claim on c's topic config
// key made on c's original, not one being given up with another value
// (givenUpOver).
func sameOriginalClaim(r Record, c ConfigClaim) bool {
	return slices.ContainsFunc(r.Configs, func(x ConfigClaim) bool {
		return sameKey(x, c) && ledger.SameValue(x.Orig, c.Orig) && (!x.Releasing || x.Value == c.Value)
	})
}

// givenUpOver returns the index of r's only claim on c's topic config
// key when it is being given up, made on c's original, with another
// value, and c has no earlier value of its own. Such a claim of the
// record written over this agent's (a peer's copy of an older write
// written into the other instance's record, found by the simulation,
// seeds 64780 and 87491: that instance restarted while the ownership
// topic was lost) restores nothing once its value is not in place
// (keepReleasingConfigs): the value this agent's kept claim set, in no
// record, was taken for an operator's and stayed lowered for good.
func givenUpOver(r Record, c ConfigClaim) (int, bool) {
	i := -1
	for j, x := range r.Configs {
		if !sameKey(x, c) {
			continue
		}
		if i >= 0 || !x.Releasing || x.Value == c.Value || !ledger.SameValue(x.Orig, c.Orig) || c.Prev != nil {
			return 0, false
		}
		i = j
	}
	return i, i >= 0
}

// noteWrittenGone adds to writtenGone the bindings of this agent's last
// written record that in, a read of the topic ACLs made after it was
// written, lacks. Absent at a read, such a binding is back later only
// through another's call (an operator's, the other instance's): this
// agent creates one after a record write, which clears the set, or as set
// unrecorded (protectMore). Kept as set unrecorded when another
// instance's record is found over this one, an operator's identical
// binding made after the read would be taken for this agent's and deleted (seed 42119: agent-1 wrote its claims
// releasing and deleted the bindings; the record without them took effect
// with its reply lost and agent-1b took it over; the pass that read
// agent-1b's record failed its ACL read, the next found the operator's
// {orders literal User:* * WRITE DENY} in place, and deleted it).
func (e *Enforcer) noteWrittenGone(in bindingIndex) {
	e.prot.written.Bindings(nil, func(a ACL) {
		if !in.has(a) {
			if e.prot.writtenGone == nil {
				e.prot.writtenGone = map[ACL]bool{}
			}
			e.prot.writtenGone[a] = true
		}
	})
}

// withoutWrittenGone is w, this agent's last written record, without the
// topics of its ACL claims whose bindings a read of the ACLs made since
// it was written all found gone (writtenGone): the record written again
// from memory after the ownership topic lost it (restoreOwn). Written
// back, such a claim (a releasing one, its bindings deleted by this
// agent, the record without it written with its reply lost) names an
// identical binding an operator made since, while no record claimed it,
// as this agent's: released, or taken back as protection in place (spec
// R8.6; found by the simulation, seed 85469: agent-2 released its DENY
// WRITE User:* bindings, its next records failed or took effect with
// their replies lost, the operator created {compacted literal User:* *
// WRITE DENY}, the topic was lost, and agent-2 wrote its releasing
// claims back; agent-3 then deleted the binding).
func (e *Enforcer) withoutWrittenGone(w *Record) *Record {
	if len(e.prot.writtenGone) == 0 {
		return w
	}
	gone := func(shape *ledger.Shape, topic string) bool {
		bs := shape.Bindings(topic)
		return len(bs) > 0 && !slices.ContainsFunc(bs, func(a ACL) bool { return !e.prot.writtenGone[a] })
	}
	r := *w
	r.Owned = nil
	changed := false
	for _, o := range w.Owned {
		if o.Kind == ledger.OwnedACL && o.Shape != nil {
			kept := slices.DeleteFunc(slices.Clone(o.Topics), func(t string) bool { return gone(o.Shape, t) })
			if len(kept) < len(o.Topics) {
				changed = true
				if len(kept) == 0 {
					continue
				}
				o.Topics = kept
			}
		}
		r.Owned = append(r.Owned, o)
	}
	if !changed {
		return w
	}
	return &r
}

// noteACLsRead takes a read of the topic ACLs: the bindings set
// unrecorded it lacks are forgotten (pruneUnrecorded), those of the last
// written record it lacks noted (noteWrittenGone). The read is indexed
// once, and only when either has something to check.
func (e *Enforcer) noteACLsRead(acls []ACL) {
	if len(e.prot.unrecorded) == 0 && e.prot.written == nil {
		return
	}
	in := bindingIndex{}
	for _, a := range acls {
		in.add(a)
	}
	e.pruneUnrecorded(in)
	if e.prot.written != nil {
		e.noteWrittenGone(in)
	}
}

// noteQuotaRead takes a read of the default producer quota (rate, 0:
// none): the quota set unrecorded is forgotten when another value is in
// place, as pruneUnrecorded forgets bindings, and the last written
// record's quota noted gone (writtenQuotaGone) when it is not in place,
// as noteWrittenGone notes bindings. Remembered, an operator's identical
// quota set later would be taken for this agent's and removed (spec
// R8.6).
func (e *Enforcer) noteQuotaRead(rate int64) {
	if e.prot.unrecordedQuota > 0 && rate != e.prot.unrecordedQuota {
		e.prot.unrecordedQuota = 0
	}
	if w := e.prot.written; w != nil {
		if q := max(w.Quota(), w.ReleasingQuota()); q > 0 && rate != q {
			e.prot.writtenQuotaGone = true
		}
	}
}

// pruneUnrecorded forgets the bindings set unrecorded that a read after
// their creation finds gone: a creation that failed before taking effect,
// one an operator deleted since, or one another instance released after
// writing over this agent's record. Remembered, an operator's identical
// binding made later would be taken for this agent's and deleted (spec
// R8.6; found by the simulation, operator_acls seed 319).
func (e *Enforcer) pruneUnrecorded(in bindingIndex) {
	for a := range e.prot.unrecorded {
		if !in.has(a) {
			delete(e.prot.unrecorded, a)
		}
	}
}
