package enforcer

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// restoreLost writes back the records the ownership topic lost: it was
// deleted (or reshaped, and repaired by deleting it) and created again,
// empty. Records are never deleted from the topic (no tombstone is ever
// written under a broker's key), so a record this agent read or wrote
// that the topic no longer holds was lost with it (spec R8.7: never "no
// records"). Every agent remembers every record it last read or wrote:
//
//   - its own is written again from memory (the next record write);
//   - a peer's is written back at once, as this agent last read it, so
//     that agent, restarted from nothing while the ledger was lost, finds
//     its claims at its first read, and, dead, has them lifted after its
//     lease like any other claims (found by the simulation, classes
//     ledger_delete and ledger_reshape).
//
// A copy a peer restored may be older than what the agent itself wrote
// last (the peer read before the agent's last write): the agent's own
// memory wins, and its record is written again. Observe mode writes
// nothing. An agent standing by writes back its broker's record as the
// other instance wrote it (that instance may have restarted while the
// ledger was lost: then no other process of the broker remembers its
// claims; ledger_reshape with duplicate_agent, seed 50), and the peers'
// records as any agent does (the active instance may be dead: then the
// standby may be the only live process that remembers them;
// ledger_delete with duplicate_agent, seed 1427). Nothing is restored
// while no agent that read the records lives: what they claimed is then
// unattributed (R8.4), shown as the operator's, for an operator to decide
// (docs/operating.md).
func (e *Enforcer) restoreLost(ctx context.Context, recs Records) Records {
	prev := e.prot.remembered
	if prev == nil {
		prev = e.prot.records
	}
	defer func() { e.remember(prev, recs) }()
	cloned := false
	set := func(id int32, r Record) {
		if !cloned {
			recs, cloned = recs.Clone(), true
		}
		recs.Agents[id] = r
	}
	get := func(id int32) (Record, bool) { r, ok := recs.Agents[id]; return r, ok }
	prev = e.withoutShadowed(prev, recs) // localret_lost.go
	e.noteLoss(prev, recs)
	e.restoreOwn(prev, get, set)
	if prev == nil || e.dryRun {
		return recs
	}
	for _, id := range slices.Sorted(maps.Keys(prev.Agents)) {
		r := prev.Agents[id]
		switch {
		case id == e.brokerID && !otherInstance(r, e.instance):
			continue // this agent's own record: restoreOwn
		case recs.Undecodable[id] > 0 && !recs.UndecodableLift[id]:
			// Its record does not decode: what it claims now is unknown.
			// Only its lift undecodable, the record is as lost as any
			// other (ledger_delete seed 339: a garbage lift under
			// broker 2's key kept its cordon claim from being written
			// back, and the cordon was left for good). The last
			// decodable record under its key, by a process that did
			// not take r over (restarted while the ledger was lost),
			// stands in memory for the broker's record from now on (it
			// is what the fold holds): r is kept as an earlier
			// process's record, written into the broker's record once
			// that decodes (seed 20371: forgotten, broker 2's lowered
			// local retention was in no record).
			if cur, ok := recs.Agents[id]; ok && !r.Started.IsZero() && !cur.Started.IsZero() && !cur.InheritedWrite(r) &&
				(id != e.brokerID || otherInstance(cur, e.instance)) {
				e.rememberEarlier(id, r)
			}
			continue
		case !worthRestoring(r):
			continue
		}
		if cur, ok := recs.Agents[id]; ok {
			if r.Started.IsZero() || cur.Started.IsZero() {
				e.adopt(ctx, id, cur, r, set) // a record of an older guard
			} else if cur.Restored && ledger.LaterWrite(r, cur) {
				e.writeLater(ctx, id, r, set)
			} else if !cur.InheritedWrite(r) && (id != e.brokerID || otherInstance(cur, e.instance)) {
				e.rememberEarlier(id, r)
			}
			continue
		}
		r.BrokerID, r.Restored = id, true
		err := e.storePeerRecord(ctx, r)
		// Kept in memory either way: a failed write is tried again at the
		// next read, which finds the record still missing.
		set(id, r)
		if err != nil {
			e.logger.Warn("another agent's record is missing from the ownership topic: writing it back failed", "broker_id", id, "err", err)
			continue
		}
		e.logger.Warn("another agent's record is missing from the ownership topic: written back as this agent last read it",
			"broker_id", id, "topic", e.cfg.OwnershipTopic, "claims", r.Claims())
	}
	e.earlierWithoutShadowed(recs) // localret_lost.go
	for _, id := range slices.Sorted(maps.Keys(e.prot.earlier)) {
		if recs.Undecodable[id] > 0 && !recs.UndecodableLift[id] {
			continue
		}
		e.writeEarlier(ctx, id, get, set)
	}
	return recs
}

// noteLoss: a record this agent read or wrote that the topic, read now,
// no longer holds (nor replaced by a value that does not decode) was lost
// with it: the topic was deleted and created again between two reads of
// this agent, which never saw it missing. That is a loss found like any
// other (Record.LedgerLost, lostMark): a process that finds no record of
// its own within the day may have lost its purge history with the topic
// (found by the simulation, seed 23883 of the default mix: broker 1's
// agent purged while the topic was missing and died; the peers, which
// only saw the topic empty, wrote its older record back and marked no
// loss; an observe-mode standby took that copy over, and its own record
// dropped the copy's mark; the agent's next process, which took over
// from it, purged as a fresh install past the hour's cap).
func (e *Enforcer) noteLoss(prev *Records, recs Records) {
	if prev == nil {
		return
	}
	for id := range prev.Agents {
		if _, ok := recs.Agents[id]; !ok && (recs.Undecodable[id] == 0 || recs.UndecodableLift[id]) {
			e.prot.lostSeen = latest(e.prot.lostSeen, e.clock.Now())
			return
		}
	}
}

// remember keeps recs, the records as read and written back, as this
// agent's memory of the ledger. A record the topic lost, replaced by a
// value that does not decode, is not written back (its claims are
// unknown now) but stays remembered from prev: when its agent's next
// record decodes, its earlier process's claims are written into it
// (adopt; found by the simulation, ledger_delete seed 1704: forgotten at
// the first read of the undecodable value, broker 2's cordon claim was
// in no record once its agent restarted).
func (e *Enforcer) remember(prev *Records, recs Records) {
	m := recs.Clone()
	if prev != nil {
		for id, r := range prev.Agents {
			if _, ok := m.Agents[id]; !ok && recs.Undecodable[id] > 0 {
				m.Agents[id] = r
			}
		}
	}
	e.prot.remembered = &m
}

// storePeerRecord writes another agent's record (or this broker's, as
// another process left it) within the write-back's bound: a third of the
// lease, at least the record timeout.
func (e *Enforcer) storePeerRecord(ctx context.Context, r Record) error {
	sctx, cancel := context.WithTimeout(ctx, max(e.cfg.Protection.LeaseDuration/3, e.cfg.Protection.RecordTimeout))
	defer cancel()
	return e.admin.StoreRecord(sctx, r)
}

// writeLater writes r, broker id's record as this agent last read it,
// over cur, a peer's copy of an earlier write of the same process
// (Record.LaterWrite): that peer read the record before r was written,
// and its copy lacks what the process claimed since. Left as it is, the
// copy stood for the record, every agent's memory took it, and a claim
// made after it was in no record (found by the simulation, seed 2938:
// broker 2's agent cordoned its log dir and recorded it, the topic was
// reshaped, then deleted, broker 1's agent wrote back its older copy of
// broker 2's record, broker 3's agent, which had read the record with
// the cordon claim, took that copy for the record, and the log dir
// stayed cordoned after the faults). A failed write is tried again at
// the next read (the memory keeps r).
func (e *Enforcer) writeLater(ctx context.Context, id int32, r Record, set func(int32, Record)) {
	r.BrokerID, r.Restored = id, true
	err := e.storePeerRecord(ctx, r)
	set(id, r)
	if err != nil {
		e.logger.Warn("a peer wrote back an older copy of another agent's record: writing the later one back failed", "broker_id", id, "err", err)
		return
	}
	e.logger.Warn("a peer wrote back an older copy of another agent's record: the later one this agent read written back",
		"broker_id", id, "topic", e.cfg.OwnershipTopic, "claims", r.Claims())
}

// inheritOwn is restoreOwn's part for claims of earlier processes: a
// record under this agent's key that names processes whose claims this
// one has not taken over (another process's record, a peer's copy of an
// earlier one, or this process's record into which a peer wrote an
// earlier process's claims: WrittenBack) has its claims adopted as this
// agent's own (with what it claimed since), and those processes are
// named in every record it writes from then on (Record.Inherits): the
// peers keep writing those claims back until a record names them, and
// never write back what this process released since. Another instance's
// record it takes over (not standing by) is inherited whole: its plan
// builds on it. So is an earlier process's record found at the first
// read. A record an older peer wrote into this process's Fresh record
// (not Fresh, no WrittenBack) is adopted too, within the Fresh window.
// Observe mode adopts nothing but names what it inherits once a record it
// writes over its broker's other instance's, planned on those claims,
// takes that instance's place (observeInherits; found by the simulation,
// ledger_delete seed 1452: the claims a peer
// had lifted after the other instance's lease were written into the
// observe-mode record, which lifted them again, with the operator's own
// binding on the topic since).
func (e *Enforcer) inheritOwn(get func(int32) (Record, bool), set func(int32, Record)) {
	cur, ok := get(e.brokerID)
	if !ok || e.prot.standby {
		return
	}
	var from []time.Time
	switch {
	case cur.Started.IsZero():
	case !cur.Started.Equal(e.prot.started):
		from = append(cur.Processes(), cur.WrittenBack...)
	default:
		from = cur.WrittenBack
	}
	// A process taken over already counts again when a peer wrote a
	// later write of it in (InheritsSeq): this one took over an older copy.
	from = slices.DeleteFunc(slices.Clone(from), func(t time.Time) bool {
		return t.Equal(e.prot.started) || slices.ContainsFunc(e.prot.inherits, t.Equal) && cur.InheritedSeq(t) <= e.prot.inheritSeq.Of(t)
	})
	same := cur.Instance == "" || cur.Instance == e.instance
	legacy := e.isFresh() && !cur.Fresh && same
	adoptable := cur
	if len(from) > 0 {
		if e.prot.written != nil && slices.ContainsFunc(from, func(t time.Time) bool { return slices.ContainsFunc(e.prot.inherits, t.Equal) }) {
			// What this process took over before and released since is
			// not taken again with the later write; a claim it took over
			// and holds takes the later write's original.
			e.takeLaterOriginals(cur) // localret_lost.go
			adoptable = ledger.Without(cur, e.prot.takenOver)
		}
		if cur.Restored || len(cur.WrittenBack) > 0 {
			e.holdCopiedConfigs() // localret_lost.go
		}
		e.prot.takenOver, _ = ledger.Adopt(e.prot.takenOver, adoptable)
		e.prot.inherits = ledger.AddTimes(e.prot.inherits, from...)
		for _, t := range from {
			e.prot.inheritSeq = e.prot.inheritSeq.With(t, cur.InheritedSeq(t))
		}
		e.prot.dirty = true
		if cur.Restored && e.prot.freshInstall {
			e.prot.freshInstall, e.prot.historyLate = false, true
		}
	}
	if e.prot.written == nil || e.dryRun || !same || len(from) == 0 && !legacy {
		return
	}
	// Every record this process writes is Fresh within its window and
	// names no WrittenBack: a peer wrote this one (the lost record, or
	// claims of an earlier process written into this one: adopt,
	// writeEarlier); its claims are taken as this agent's own, with
	// what it claimed since.
	if merged, added := ledger.Adopt(*e.prot.written, adoptable); added || len(from) > 0 {
		merged.Fresh, merged.Inherits, merged.InheritsSeq = e.isFresh(), e.prot.inherits, e.prot.inheritSeq
		set(e.brokerID, merged)
		e.prot.written = &merged
		e.prot.dirty = true
		if added {
			e.logger.Warn("this agent's record holds claims of its earlier process that a peer wrote back: adopted as its own",
				"topic", e.cfg.OwnershipTopic, "claims", merged.Claims())
		}
	}
}

// rememberEarlier keeps r, broker id's record as this agent last read it,
// as a record of an earlier process of that broker's agent: the record
// read now was written by another process that did not take its claims
// over (it restarted while the ledger was lost, or its first read found
// no record of its own). Kept until a record of the broker names it
// (Record.Inherits; writeEarlier).
func (e *Enforcer) rememberEarlier(id int32, r Record) {
	if !worthRestoring(r) {
		return
	}
	if e.prot.earlier == nil {
		e.prot.earlier = map[int32][]Record{}
	}
	list := slices.DeleteFunc(slices.Clone(e.prot.earlier[id]), func(x Record) bool { return x.Started.Equal(r.Started) })
	e.prot.earlier[id] = append(list, r)
}

// writeEarlier writes the claims (and purge history, spec R7.3) of broker
// id's earlier processes this agent remembers into that broker's record
// as read now, Fresh or not, naming them in WrittenBack, for its agent to
// adopt (inheritOwn). A process the record names (Started, Inherits) took
// them over: it is forgotten, and what its successor released since is
// never written back. One whose claims are all in the record and not
// written there by a peer is forgotten too (its successor holds them as
// its own). The others are kept, and written again at every read until
// the record names them: a write that fails, or that the agent writes
// over from a plan made before it, is tried again (found by the
// simulation, ledger_delete seeds 384 and 930: the restarted
// agent's calls kept failing while the ledger was lost, its first record
// was written after its Fresh window, and the claims of its earlier
// process, in no record, were forgotten; seed 1989: the broker's other
// instance wrote a record that was not Fresh first). A missing record is
// written back as the earliest process's copy.
func (e *Enforcer) writeEarlier(ctx context.Context, id int32, get func(int32) (Record, bool), set func(int32, Record)) {
	cur, ok := get(id)
	if ok && id == e.brokerID && !otherInstance(cur, e.instance) {
		return // this agent's own record: inheritOwn
	}
	var keep []Record
	var from []time.Time
	merged, added := cur, false
	for _, r := range e.prot.earlier[id] {
		if ok && cur.InheritedWrite(r) {
			continue
		}
		if !ok {
			merged, ok, added = r, true, true
			keep = append(keep, r)
			continue
		}
		m, more := ledger.Adopt(merged, r)
		if s := cur.InheritedSeq(r.Started); cur.Inherited(r.Started) && s > 0 && s < r.Seq {
			// The record's writer took over an older write of r's
			// process (a peer's copy): r's originals are the newer ones.
			if l, later := ledger.LaterOriginals(m, r); later {
				m, more = l, true
			}
		}
		if p, morePurges := ledger.MergePurges(m.Purged, r.Purged, e.clock.Now().Add(-24*time.Hour)); morePurges {
			m.Purged, more = p, true
		}
		if !more && !slices.ContainsFunc(cur.WrittenBack, r.Started.Equal) {
			continue
		}
		keep = append(keep, r)
		if more {
			merged, added = m, true
			from = append(append(append(from, r.Started), r.Inherits...), r.WrittenBack...)
			for _, t := range r.Processes() {
				merged.InheritsSeq = merged.InheritsSeq.With(t, r.InheritedSeq(t))
			}
			for _, t := range r.WrittenBack {
				merged.InheritsSeq = merged.InheritsSeq.With(t, r.InheritedSeq(t))
			}
		}
	}
	if len(keep) == 0 {
		delete(e.prot.earlier, id)
	} else {
		e.prot.earlier[id] = keep
	}
	if !added {
		return
	}
	// Written not Fresh: an agent of an older release adopts the claims
	// of a record that is not (its own records all are, in its window).
	merged.WrittenBack = ledger.AddTimes(merged.WrittenBack, from...)
	merged.BrokerID, merged.Fresh, merged.Restored = id, false, true
	err := e.storePeerRecord(ctx, merged)
	set(id, merged)
	if err != nil {
		e.logger.Warn("another agent's record lacks claims of its earlier process: writing them back failed", "broker_id", id, "err", err)
		return
	}
	e.logger.Warn("another agent's record lacks claims of its earlier process (it restarted while the ledger was lost): written back into it",
		"broker_id", id, "topic", e.cfg.OwnershipTopic)
}

// restoreOwn is restoreLost for this agent's own record: at its first
// read it notes whether its record is fresh; it adopts the claims of its
// earlier process a peer wrote back, and writes its own record again from
// memory when the topic lost it or holds an older copy. get reads the
// records as set last changed them.
func (e *Enforcer) restoreOwn(prev *Records, get func(int32) (Record, bool), set func(int32, Record)) {
	if !e.prot.readOnce {
		e.prot.readOnce = true
		cur, ok := get(e.brokerID)
		e.prot.fresh = !ok || cur.Fresh && cur.Instance == e.instance && e.prot.written != nil && cur.Updated.Equal(e.prot.written.Updated)
		e.prot.freshUntil = e.monotonic(e.clock.Now()) + e.cfg.Protection.LeaseDuration
	}
	e.inheritOwn(get, set)
	own := e.prot.written
	r, ok := agentOf(prev, e.brokerID)
	switch {
	case ok && otherInstance(r, e.instance):
		// Another instance wrote this broker's record after this
		// agent's last write (it took the broker over, and this agent
		// stood by): what this agent wrote is out of date, and that
		// record is written back as a peer's (restoreLost).
		own = nil
	case ok && e.unconfirmedWrite(r):
		// Read back after this process's last successful write: a later
		// write of it whose reply was lost. That is the latest record of
		// the broker, not the last one confirmed (found by the
		// simulation, seeds 21558 and 22278: the write claiming a cordon
		// was read back and the cordon appended, the topic was lost, and
		// the record written again from memory was the one before the
		// claim, so the cordon was taken for an operator's and left).
		own = &r
	case own != nil && !e.prot.overwritten.IsZero() && own.Updated.Equal(e.prot.overwritten):
		// Another instance wrote over it, and the memory no longer
		// holds that record (it claimed nothing, and was not written
		// back after a loss of the topic): still out of date. What it
		// claimed and the other's lacked is kept as set unrecorded
		// (keepOverwritten), forgotten once gone; written back, it named
		// bindings the other released, and an operator's identical one
		// made since was taken for this agent's and deleted (found by
		// the simulation, seed 7150: {compacted literal User:* * WRITE
		// DENY} removed).
		own = nil
	case own == nil && ok:
		own = &r // read at this process's start, not written since
	}
	if own == e.prot.written && own != nil {
		own = e.withoutWrittenGone(own)
	}
	if cur, ok := get(e.brokerID); own != nil && worthRestoring(*own) && !e.dryRun && !e.prot.standby {
		switch {
		case !ok:
			set(e.brokerID, *own)
			e.prot.dirty = true
			e.logger.Warn("this agent's record is missing from the ownership topic: written again from memory", "topic", e.cfg.OwnershipTopic)
		case e.prot.written != nil && cur.Instance == e.instance && cur.Restored && e.ownCopyOlder(cur):
			// A peer's copy of what this agent wrote last: written again,
			// so that its next process does not take it for a copy
			// (Record.Restored: its purge history unknown).
			set(e.brokerID, *e.prot.written)
			e.prot.dirty = true
		case tookOverWrite(e.prot.written, cur, e.instance):
			// A peer's copy of the other instance's record that this
			// process took over since (the topic lost this process's
			// record): its own memory wins, as with a copy of its own.
			set(e.brokerID, *e.prot.written)
			e.prot.dirty = true
			e.logger.Warn("this agent's record in the ownership topic is a copy of the other instance's that this agent took over (a peer restored it from memory): its own written again",
				"topic", e.cfg.OwnershipTopic, "other_instance", cur.Instance)
		case e.prot.written != nil && cur.Instance == e.instance && cur.Updated.Before(e.prot.written.Updated) && !e.unconfirmedWrite(cur):
			// A write of this process whose reply was lost is its latest,
			// whatever the times say: the wall clock may have gone back
			// between the two (found by the simulation, seed 79475: agent-1's
			// clock went back 10 minutes, its write claiming a lowered local
			// retention took effect with its reply lost, the record before it
			// was written over it, and the value an operator's lift handed
			// back to that claim stayed in no record).
			set(e.brokerID, *e.prot.written)
			e.prot.dirty = true
			e.logger.Warn("this agent's record in the ownership topic is older than the one it wrote last (a peer restored it from memory): written again", "topic", e.cfg.OwnershipTopic)
		}
	}
}

// unconfirmedWrite reports whether r, this broker's record as read, is a
// write of this process whose reply was lost (it names this instance and
// this process's start, and the time of a write that failed since the
// last successful one).
func (e *Enforcer) unconfirmedWrite(r Record) bool {
	return r.Instance == e.instance && r.Started.Equal(e.prot.started) && slices.ContainsFunc(e.prot.unconfirmed, r.Updated.Equal)
}

// tookOverWrite reports whether cur, this broker's record as another
// instance's process wrote it (or a peer's copy of it), is a write that
// w, this process's last record, took over: w inherits that process and
// names that write of it, or a later one (Record.InheritsSeq). cur is
// then older than w, not written over it (R8.8). An unknown write (no
// Seq, no process start) is not taken for one.
func tookOverWrite(w *Record, cur Record, instance string) bool {
	if w == nil || w.Instance != instance || !otherInstance(cur, instance) || cur.Seq == 0 || cur.Started.IsZero() ||
		cur.Started.Equal(w.Started) || !w.Inherited(cur.Started) {
		return false
	}
	return cur.Seq <= w.InheritedSeq(cur.Started)
}

// ownCopyOlder reports whether cur, a peer's copy of this agent's record,
// is no newer than what this process wrote last (its own memory wins). A
// copy naming another process start is an earlier process's (this one
// runs); one of this process is newer only when it is a write whose reply
// was lost (unconfirmed): never by the times the two name, since a wall
// clock goes back and differs between two processes (found by the
// simulation, ledger_delete: seed 150, the agent's clock 10 minutes back;
// seed 1447, the earlier process's clock 5 minutes ahead; the copy, from
// before the agent's cordon, looked newer and replaced its record, and
// the cordon claim was lost and the log dir left cordoned; seed 354, a
// write whose reply was lost held the cordon claim). A copy of an older
// guard's record (no process start) goes by its times.
func (e *Enforcer) ownCopyOlder(cur Record) bool {
	switch {
	case cur.Started.IsZero():
		return !cur.Updated.After(e.prot.written.Updated)
	case !cur.Started.Equal(e.prot.started):
		return true
	default:
		return !slices.ContainsFunc(e.prot.unconfirmed, cur.Updated.Equal)
	}
}

// adopt: broker id's record cur was written Fresh (its process found no
// record of its own: it restarted while the ledger was lost) and lacks
// claims of r, the record of its earlier process this agent remembers
// (not Fresh, or Fresh with another process's start: that process had
// itself restarted shortly before; ledger_reshape seed 1152), whichever
// instance of the broker's agent wrote it (R8.8: the instance writing
// now would have taken the claims over with the record; ledger_reshape
// with duplicate_agent, seed 725): they are written into it, for its
// agent to adopt (found by
// the simulation, class ledger_delete, seed 304: a restarted agent read
// the recreated topic, a peer wrote its old record back, and the agent's
// first write replaced it). A failed write is tried again at the next
// read (the memory keeps r's claims, not Fresh).
func (e *Enforcer) adopt(ctx context.Context, id int32, cur, r Record, set func(int32, Record)) {
	if !cur.Fresh || r.Fresh && !ledger.EarlierProcess(r, cur) {
		return
	}
	merged, added := ledger.Adopt(cur, r)
	// The purge history too (spec R7.3): the caps are the log dir's, and
	// the earlier process's purges of the last day count for the new one
	// (found by the simulation, ledger_delete, seeds 232, 1427, 1533 and
	// 1825: the restarted agent's Fresh record was written before any
	// peer could write the lost one back, it purged as a fresh install
	// after its wait, and a second hour's cap went).
	if p, more := ledger.MergePurges(merged.Purged, r.Purged, e.clock.Now().Add(-24*time.Hour)); more {
		merged.Purged, added = p, true
	}
	if !added {
		return
	}
	// Written not Fresh: its agent adopts the claims of a record that
	// is not (its own records all are). Remembered Fresh once written,
	// so the claims are written once, never again after its agent has
	// released them.
	merged.BrokerID, merged.Fresh, merged.Restored = id, false, true
	err := e.storePeerRecord(ctx, merged)
	if err != nil {
		set(id, merged)
		e.logger.Warn("another agent's record lacks claims of its earlier process: writing them back failed", "broker_id", id, "err", err)
		return
	}
	merged.Fresh = true
	set(id, merged)
	e.logger.Warn("another agent's record lacks claims of its earlier process (it restarted while the ledger was lost): written back into it",
		"broker_id", id, "topic", e.cfg.OwnershipTopic)
}

// otherInstance: r was written by another agent instance than instance
// (for this agent's broker: a second instance, spec R8.8).
func otherInstance(r Record, instance string) bool { return r.Instance != "" && r.Instance != instance }

// agentOf returns broker id's record from a set that may be nil.
func agentOf(rs *Records, id int32) (Record, bool) {
	if rs == nil {
		return Record{}, false
	}
	r, ok := rs.Agents[id]
	return r, ok
}

// worthRestoring: the record holds claims, log dirs under protection, an
// honoured lift or a purge history (the caps across restarts, R7.3).
func worthRestoring(r Record) bool { return !r.Empty() || len(r.Purged) > 0 }

// remembering is the admin a release reads the records through: what the
// topic lost is put back from this agent's memory first (restoreLost), so
// a binding, quota or config that only a lost record claims is never
// taken for unclaimed and released (found by the simulation: a lift of an
// expired peer read the recreated topic between two failed record reads,
// and the agent's own cordon claim fell out of its memory).
type remembering struct {
	Admin
	e *Enforcer
}

func (r remembering) LoadRecords(ctx context.Context) (Records, error) {
	recs, err := r.Admin.LoadRecords(ctx)
	if err != nil {
		return recs, err
	}
	return r.e.restoreLost(ctx, recs), nil
}

// processesNamed is what a record this process writes names: its start,
// and the earlier processes (with their writes) whose claims it took
// over (Record.Inherits, InheritsSeq; in observe mode observeInherits).
func (e *Enforcer) processesNamed() (time.Time, []time.Time, ledger.Writes) {
	if e.dryRun {
		inherits, seqs := e.observeInherits()
		return e.prot.started, inherits, seqs
	}
	return e.prot.started, e.prot.inherits, e.prot.inheritSeq
}

// observeInherits is what a record written in observe mode names as
// taken over (Record.Inherits, InheritsSeq): the processes, and their
// writes, that its earlier records named, and those the record it is
// written over holds the claims of (this broker's record as last read,
// whose claims its plan carries and lifts). Observe mode adopts nothing
// (inheritOwn): a process it took over at a read is named only once a
// record planned on the claims is written. Named when read, a record
// written after the ownership topic lost the one taken over named a
// write whose claims it neither held nor lifted, and the peers that
// remembered that write, taking it for inherited, never wrote it back
// (found by the simulation, seeds 61012 and 65964: agent-1b, observing,
// took broker 1 over from agent-1, whose record claimed a lowered
// local.retention.bytes of events, and the topic was deleted before
// agent-1b's next pass; its record, written on the empty topic, named
// agent-1's write, and the value stayed lowered in no record).
func (e *Enforcer) observeInherits() ([]time.Time, ledger.Writes) {
	var list []time.Time
	var seqs ledger.Writes
	name := func(r Record, ts []time.Time) {
		for _, t := range ts {
			if t.IsZero() || t.Equal(e.prot.started) {
				continue
			}
			list = ledger.AddTimes(list, t)
			seqs = seqs.With(t, r.InheritedSeq(t))
		}
	}
	if w := e.prot.written; w != nil {
		name(*w, w.Inherits)
	}
	base := e.clusterRecord()
	name(base, append(base.Processes(), base.WrittenBack...))
	return list, seqs
}
