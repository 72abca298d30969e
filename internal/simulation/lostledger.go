package simulation

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// lostLedger follows the records the ownership topic lost (deleted, or
// recreated with 3 partitions) until they are back in it. An agent
// remembers every record it read or wrote, and writes the lost ones back
// once the ledger is back (spec R8.7, enforcer/ledger_restore.go). A
// peer's memory is what its last successful read returned (trackedAdmin):
// a claim the owner wrote after that is in the owner's memory alone. When every agent that remembered a
// record as it was lost has died (or was uninstalled) before it was back,
// nothing names what it claimed: that is unattributed (R8.4, for an
// operator to decide), and I1 waives it, as it waives what a process set
// and died before recording.
type lostLedger struct {
	// recs: the lost records not yet back, by broker.
	recs map[int32]ledger.Record
	// holders: for each lost record, the agents (alive since the loss)
	// whose memory holds it as it was lost.
	holders map[int32]map[string]bool
	// older: lost records not yet back that a later loss found replaced
	// under their key by a record lacking their claims (the broker's new
	// process wrote it while the topic was briefly back), each with its
	// own holders: their claims are still in those agents' memory alone.
	older map[int32][]lostRecord
	// throttles: the throttle claims lost, by key (lostthrottle.go).
	throttles map[string]*lostThrottle
	// at: when each lost record was lost.
	at map[int32]time.Time
	// readers: the enforcing agents alive at a loss whose process had
	// read the ledger before it (and alive since): each can tell the loss
	// from a fresh install (it finds the topic missing, or a record it
	// read gone) and says so in its record (Record.LedgerLost). An agent
	// in observe mode is none: it writes no peer's record back and no
	// mark of the loss (enforcer/ledger_restore.go), as it is no holder
	// (seed 87305: the waiver waited for agent-1b, in observe mode, and
	// I4 counted the purges of broker 2's record, lost with every
	// enforcing process that knew it, against its next process).
	readers map[string]bool
	// undecodable: the brokers whose record did not decode when the
	// topic, readable, was last lost (not their lift alone): an uninstall
	// while the topic is lost leaves their claims as it would with the
	// topic there (unattributeUndecodable).
	undecodable map[int32]bool
}

// lostRecord is a lost record and the agents that remember it.
type lostRecord struct {
	rec     ledger.Record
	holders map[string]bool
}

// loseLedger notes the records the topic holds as it is lost (or, for a
// reshaped one being repaired, what its partition 0 took meanwhile: only
// their writer could read them).
func (s *sim) loseLedger() {
	if s.lost.recs == nil {
		s.lost = lostLedger{recs: map[int32]ledger.Record{}, holders: map[int32]map[string]bool{}, at: map[int32]time.Time{}, readers: map[string]bool{}}
	}
	for _, a := range s.agents {
		if a.enabled && a.deadTill < 0 && !s.uninstalled && a.tracked != nil && a.tracked.read {
			s.lost.readers[a.name] = true
		}
	}
	s.loseThrottles()
	if s.uninstalled {
		// After the uninstall, what an undecodable record claims is
		// unattributed (checkEnd): noted now, before the topic that
		// says which brokers' records do not decode goes (ledger_delete,
		// seed 1813: deleted after the uninstall, and I1 took broker 2's
		// lowered local.retention.bytes for a guard's left).
		s.unattributeUndecodable()
	}
	recs, err := s.c.Records()
	ownOnly := err != nil
	if err != nil {
		recs = s.c.Partition0()
	} else {
		s.lost.undecodable = map[int32]bool{}
		for id := range recs.Undecodable {
			if !recs.UndecodableLift[id] {
				s.lost.undecodable[id] = true
			}
		}
	}
	for id, r := range recs.Agents {
		if !r.Claims() {
			continue
		}
		if old, ok := s.lost.recs[id]; ok && reflect.DeepEqual(old, r) {
			continue // lost already, nothing new
		} else if ok && !backIn(r, old, s.lost.holders[id]) {
			// Not back yet, and r lacks its claims: still lost, with
			// its own holders (seed 23945).
			if s.lost.older == nil {
				s.lost.older = map[int32][]lostRecord{}
			}
			s.lost.older[id] = append(s.lost.older[id], lostRecord{rec: old, holders: s.lost.holders[id]})
		}
		s.lost.recs[id] = r
		s.lost.at[id] = s.now
		h := map[string]bool{}
		for _, a := range s.agents {
			if !a.enabled || a.deadTill >= 0 || s.uninstalled {
				continue
			}
			if w, ok := a.tracked.stored[id]; ok && sameClaims(w, r) {
				h[a.name] = true // as it wrote it
			} else if p, ok := a.tracked.seen.Agents[id]; ok && !ownOnly && sameClaims(p, r) {
				h[a.name] = true // as it read it
			}
		}
		s.lost.holders[id] = h
	}
}

// backIn: lost is done with, r (its broker's record in the topic) being
// back: r holds every claim of lost, or, lost remembered by a live agent
// (holders), its writer's process wrote r from memory.
func backIn(r, lost ledger.Record, holders map[string]bool) bool {
	return holdsClaims(r, lost) || len(holders) > 0 && rewritten(r, lost)
}

// holdsClaims: record r holds every claim of lost; a topic config claim
// with its value (or r's claim lowered further from it, Prev): a claim of
// r on the key with another value restores nothing over lost's value
// (Records.RestoresOver), so lost's claim is in no record. Compared by
// key, as ledger.Adopt merges the claims of one broker's processes, a
// peer's older copy claiming the owner's earlier value counted as the
// lost record back (found by the simulation, seed 33679 of the default
// mix: broker 3's agent lowered local.retention.bytes of events to
// 4792320 on the operator's unset value and recorded it, the topic was
// reshaped before any peer read that record, a peer's copy claiming the
// earlier 4751360 came back, and the agent was killed before its record
// was written again: I1 took 4792320 for a guard's value left).
func holdsClaims(r, lost ledger.Record) bool {
	if _, more := ledger.Adopt(r, lost); more {
		return false
	}
	for _, c := range lost.Configs {
		if !slices.ContainsFunc(r.Configs, func(x ledger.ConfigClaim) bool { return x.Topic == c.Topic && x.Key == c.Key && x.Sets(&c.Value) }) {
			return false
		}
	}
	return true
}

// rewritten: r was written after the loss by the process that wrote
// lost, from its memory (not a peer's copy).
func rewritten(r, lost ledger.Record) bool {
	return !r.Restored && !lost.Started.IsZero() && r.Started.Equal(lost.Started)
}

func sameClaims(a, b ledger.Record) bool {
	return reflect.DeepEqual(a.Owned, b.Owned) && reflect.DeepEqual(a.Configs, b.Configs)
}

// forget: agent a's process dies; its memory with it.
func (s *sim) forget(a *agentSim) {
	for _, h := range s.lost.holders {
		delete(h, a.name)
	}
	delete(s.lost.readers, a.name)
	for _, older := range s.lost.older {
		for _, l := range older {
			delete(l.holders, a.name)
		}
	}
	for _, p := range s.pendingForget {
		delete(p.readers, a.name)
	}
	s.forgetThrottles(a)
}

// settleLost, after every step: the lost records back in the topic are
// done with; what no live agent remembers is unattributed. It also keeps
// each broker's last decodable record (decodable).
func (s *sim) settleLost() {
	recs, err := s.c.Records()
	if err == nil {
		for id, r := range recs.Agents {
			if recs.Undecodable[id] == 0 || recs.UndecodableLift[id] {
				s.decodable[id] = r
			}
		}
	}
	if s.lost.recs == nil {
		return
	}
	s.settleThrottles()
	if err == nil {
		for id, lost := range s.lost.recs {
			// Back in the topic: done with, unless what is back is an
			// older copy without the lost claims (a peer's, read before
			// the owner's last write) while no live agent remembers them:
			// those are lost for good (ledger_delete, seed 321: broker
			// 3's agent lowered local.retention.bytes and died, the
			// topic went before any peer read that record, and a peer
			// wrote back its older copy). Nor, with its writer's process
			// alive, until that process writes its record again: it may
			// die first, and what its memory alone held is then in no
			// record (ledger_delete, seed 595: broker 3's agent lowered
			// local.retention.bytes, the topic was reshaped before any
			// peer read that record, a peer's older copy came back, and
			// the agent's own write failed before it was killed).
			if r, ok := recs.Agents[id]; ok && backIn(r, lost, s.lost.holders[id]) {
				delete(s.lost.recs, id)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.lost.older)) {
		s.lost.older[id] = slices.DeleteFunc(s.lost.older[id], func(l lostRecord) bool {
			if r, ok := recs.Agents[id]; err == nil && ok && backIn(r, l.rec, l.holders) {
				return true
			}
			if len(l.holders) > 0 {
				return false // remembered
			}
			s.tracef("broker %d's earlier record lost with the ledger and remembered by no live agent", id)
			s.unattribute(id, l.rec)
			return true
		})
		if len(s.lost.older[id]) == 0 {
			delete(s.lost.older, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.lost.recs)) {
		if len(s.lost.holders[id]) > 0 {
			continue // remembered
		}
		s.tracef("broker %d's record lost with the ledger and remembered by no live agent", id)
		s.forgetPurges(id, recs, err)
		s.unattribute(id, s.lost.recs[id])
		delete(s.lost.recs, id)
	}
	if err == nil && len(s.lost.recs) == 0 && len(s.lost.older) == 0 && len(s.lost.throttles) == 0 {
		s.lost = lostLedger{}
	}
}

// forgetPurges: broker id's record, lost with the ledger, is remembered
// by no live agent, and no live agent read the ledger before the loss,
// nor does a record in the topic say it was lost (Record.LedgerLost):
// no process can know the purges that record held, nor tell the loss
// from a fresh install (the topic missing, or empty, at its first read).
// Its agent's next process purges as a fresh install, by design
// (docs/design.md, the purge caps): I4 counts the broker's unexpired
// deletions from the loss on (found by the simulation, seed 26678 of the
// default mix: broker 3's agent purged 40 MiB and restarted; the topic
// was deleted before its new process, or broker 2's, new too, read it;
// agent-1, the one process that had read the ledger, could not read it
// again before it was killed; broker 3's new process purged 24 MiB as a
// fresh install). Purges the guard could know of stay counted.
//
// With such a reader alive, the waiver waits for it (pendingForget): a
// reader that dies before a record saying the topic was lost reaches the
// topic takes its knowledge with it (found by the simulation, seed 33577
// of the default mix: the topic was reshaped, broker 2's agent died and
// its record was remembered by no live agent; the two live readers failed
// every write until the topic was deleted, then every call until they
// were killed; broker 2's next process, its first read finding the topic
// missing, purged 24 MiB as a fresh install).
func (s *sim) forgetPurges(id int32, recs ledger.Records, readErr error) {
	if len(s.lost.readers) > 0 {
		if at, ok := s.lost.at[id]; ok {
			if s.pendingForget == nil {
				s.pendingForget = map[int32]pendingForget{}
			}
			s.pendingForget[id] = pendingForget{at: at, readers: maps.Clone(s.lost.readers)}
		}
		return
	}
	if readErr == nil {
		for _, r := range recs.Agents {
			if !r.LedgerLost.IsZero() {
				return
			}
		}
	}
	at, ok := s.lost.at[id]
	if !ok {
		return
	}
	s.forgetPurgesAt(id, at)
}

// pendingForget: a broker's record lost with the ledger, remembered by
// no live agent, while agents that read the ledger before the loss
// (readers) live: forgetPurges waits for them (settlePendingForget).
type pendingForget struct {
	at      time.Time
	readers map[string]bool
}

// settlePendingForget, after every step: a pending waiver whose readers
// all died is decided as forgetPurges decides, on the topic as it is now.
func (s *sim) settlePendingForget() {
	if len(s.pendingForget) == 0 {
		return
	}
	recs, err := s.c.Records()
	for _, id := range slices.Sorted(maps.Keys(s.pendingForget)) {
		p := s.pendingForget[id]
		if len(p.readers) > 0 {
			continue
		}
		delete(s.pendingForget, id)
		if err == nil && slices.ContainsFunc(slices.Collect(maps.Values(recs.Agents)), func(r ledger.Record) bool { return !r.LedgerLost.IsZero() }) {
			continue // a record says the topic was lost: counted
		}
		s.forgetPurgesAt(id, p.at)
	}
}

// forgetPurgesAt notes broker id's loss time at for I4 (forgetPurges).
func (s *sim) forgetPurgesAt(id int32, at time.Time) {
	if s.forgottenPurges == nil {
		s.forgottenPurges = map[int32]time.Time{}
	}
	if at.After(s.forgottenPurges[id]) {
		s.forgottenPurges[id] = at
	}
	s.tracef("broker %d's purge history lost with the ledger at %s: no live agent that read the ledger before the loss (I4 counts its purges from then)", id, at.Format(time.TimeOnly))
}

// unattribute waives what broker id's record r claims (I1).
func (s *sim) unattribute(id int32, r ledger.Record) {
	s.tracef("broker %d's claims are unattributed (R8.4): %d held, quota %d, %d configs, %d cordons",
		id, len(r.Held()), r.Quota(), len(r.Configs), len(r.AllCordonClaims()))
	r.Bindings(nil, func(a ledger.ACL) {
		if s.unattributed == nil {
			s.unattributed = map[ledger.ACL]bool{}
		}
		s.unattributed[a] = true
	})
	for _, q := range []int64{r.Quota(), r.ReleasingQuota()} {
		if q > 0 {
			s.unattributedQuota[q] = true
		}
	}
	for _, c := range r.Configs {
		s.unattributedConfigs[c.Topic+"\x00"+c.Value] = true
		if c.Prev != nil {
			// Lowering further: the record is written before the new
			// value is set, so the value in place may still be the
			// guard's earlier one (the claim's Prev, which the record
			// names as the guard's).
			s.unattributedConfigs[c.Topic+"\x00"+*c.Prev] = true
		}
	}
	for _, c := range r.AllCordonClaims() {
		s.unattributedCordons[c.Value] = true
	}
}

// undecodableRestart: agent a's process starts while its broker's record
// does not decode and no decodable one is left in the topic (compaction
// removed it). The new process cannot know what the earlier one claimed
// and writes a new record over the value (R8.7: a decodable record
// replaces it); its peers remember those claims but never write over an
// undecodable value (it may be a newer guard's record, whose claims the
// peer's older copy would hide). No rule in the ledger tells garbage
// from a newer guard's record, so what the last decodable record claimed
// is unattributed: for an operator to decide (docs/operating.md, "a
// record does not decode"), and I1 waives it (class ledger_garbage,
// seed 610).
func (s *sim) undecodableRestart(a *agentSim) {
	recs, err := s.c.Records()
	if err != nil || !a.enabled {
		return
	}
	id := a.broker
	if _, ok := recs.Agents[id]; ok || recs.Undecodable[id] == 0 || recs.UndecodableLift[id] {
		return
	}
	if r, ok := s.decodable[id]; ok && r.Claims() {
		s.tracef("%s starts while its record does not decode and no decodable one is left: what it claimed is unknown to it", a.name)
		s.unattribute(id, r)
	}
}
