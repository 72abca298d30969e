package enforcer

import (
	"context"
	"maps"
	"slices"
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
// memory wins, and its record is written again. Observe mode and an agent
// standing by write nothing. Nothing is restored while no agent that read
// the records lives: what they claimed is then unattributed (R8.4), shown
// as the operator's, for an operator to decide (docs/operating.md).
func (e *Enforcer) restoreLost(ctx context.Context, recs Records) Records {
	prev := e.prot.remembered
	if prev == nil {
		prev = e.prot.records
	}
	defer func() {
		m := recs.Clone()
		e.prot.remembered = &m
	}()
	cloned := false
	set := func(id int32, r Record) {
		if !cloned {
			recs, cloned = recs.Clone(), true
		}
		recs.Agents[id] = r
	}
	own := e.prot.written
	if r, ok := agentOf(prev, e.brokerID); own == nil && ok && (r.Instance == "" || r.Instance == e.instance) {
		own = &r // read at this process's start, not written since
	}
	if cur, ok := recs.Agents[e.brokerID]; own != nil && worthRestoring(*own) && !e.dryRun && !e.prot.standby {
		switch {
		case !ok:
			set(e.brokerID, *own)
			e.prot.dirty = true
			e.logger.Warn("this agent's record is missing from the ownership topic: written again from memory", "topic", e.cfg.OwnershipTopic)
		case e.prot.written != nil && cur.Instance == e.instance && cur.Updated.Before(e.prot.written.Updated):
			set(e.brokerID, *e.prot.written)
			e.prot.dirty = true
			e.logger.Warn("this agent's record in the ownership topic is older than the one it wrote last (a peer restored it from memory): written again", "topic", e.cfg.OwnershipTopic)
		}
	}
	if prev == nil || e.dryRun || e.prot.standby {
		return recs
	}
	for _, id := range slices.Sorted(maps.Keys(prev.Agents)) {
		r := prev.Agents[id]
		if _, ok := recs.Agents[id]; ok || id == e.brokerID || recs.Undecodable[id] > 0 || !worthRestoring(r) {
			continue
		}
		r.BrokerID = id
		sctx, cancel := context.WithTimeout(ctx, max(e.cfg.Protection.LeaseDuration/3, e.cfg.Protection.RecordTimeout))
		err := e.admin.StoreRecord(sctx, r)
		cancel()
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
	return recs
}

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
