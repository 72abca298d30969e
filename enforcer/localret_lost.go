package enforcer

import (
	"maps"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Topic config claims of records the ownership topic lost (spec R7.4,
// R8.7). A claim remembered from a lost record (this agent's own, or its
// copy of a peer's) goes stale when an operator changes the value while
// the topic is lost: its original is no longer the one to restore. The
// owner's first pass on the topic back drops it as any pass does (the
// value in place is no guard's), and a lifting peer restores nothing over
// a value the claim does not set (Records.RestoresOver). What no value
// can tell is a claim made since on the operator's value that holds the
// stale claim's number (the plans are the same, and the agent that made
// it knew no record: the topic came back empty): the value in place is
// then both claims', and the stale one, written back, restored its
// original over the operator's value (found by the simulation,
// ledger_delete, seeds 1589, 658 and 1881). So a remembered claim that
// shares its value with a claim the topic holds made on another original
// is dropped before the record is written back (Records.Shadowed).

// withoutShadowed drops from this agent's memory of the records (prev,
// and its own record as last written) every config claim that recs, the
// records as read, show stale (Records.Shadowed), for the records
// restoreLost may write back from memory: those missing from recs or
// Fresh there (a peer's earlier claims are adopted into it), and its own
// when the topic does not hold its last write. It returns the filtered
// copy of prev (nil stays nil).
func (e *Enforcer) withoutShadowed(prev *Records, recs Records) *Records {
	filter := func(id int32, r Record) (Record, []ConfigClaim) {
		var dropped []ConfigClaim
		keep := slices.DeleteFunc(slices.Clone(r.Configs), func(c ConfigClaim) bool {
			if recs.Shadowed(id, c) {
				dropped = append(dropped, c)
				return true
			}
			return false
		})
		if len(dropped) > 0 {
			if len(keep) == 0 {
				keep = nil
			}
			r.Configs = keep
		}
		return r, dropped
	}
	note := func(id int32, dropped []ConfigClaim) {
		for _, c := range dropped {
			e.logger.Warn("a remembered claim of a record the ownership topic lost holds the value of a claim made since on another original (the value was changed while the topic was lost): dropped, not written back",
				"broker_id", id, "topic", c.Topic, "key", c.Key, "guard_value", c.Value, "original", ledger.ShowValue(c.Orig))
		}
	}
	if w := e.prot.written; w != nil && !e.dryRun && !e.holdsLastWrite(recs) {
		if r, dropped := filter(e.brokerID, *w); len(dropped) > 0 {
			e.prot.written = &r
			note(e.brokerID, dropped)
		}
	}
	if prev == nil || e.dryRun {
		return prev
	}
	var out *Records
	for _, id := range slices.Sorted(maps.Keys(prev.Agents)) {
		if cur, ok := recs.Agents[id]; ok && !cur.Fresh {
			continue // not written back (a Fresh one: claims adopted into it)
		}
		r, dropped := filter(id, prev.Agents[id])
		if len(dropped) == 0 {
			continue
		}
		if out == nil {
			c := prev.Clone()
			out = &c
		}
		out.Agents[id] = r
		if id != e.brokerID || e.prot.written == nil {
			note(id, dropped)
		}
	}
	if out == nil {
		return prev
	}
	return out
}

// holdsLastWrite: recs hold this agent's record as it last wrote it,
// with its config claims. A peer's copy of that write (the same Updated)
// may lack a claim the peer found stale (withoutShadowed): restoreOwn
// writes the memory over it, so the memory is filtered too (found by the
// simulation, seed 5994: unfiltered, the stale claim was written again,
// and an operator's lift restored its original over the operator's value).
func (e *Enforcer) holdsLastWrite(recs Records) bool {
	cur, ok := recs.Agents[e.brokerID]
	return ok && e.prot.written != nil && cur.Updated.Equal(e.prot.written.Updated) &&
		ledger.SameConfigs(cur.Configs, e.prot.written.Configs)
}
