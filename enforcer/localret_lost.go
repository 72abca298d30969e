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
// is dropped before the record is written back (Records.Shadowed), and so
// is one of an earlier process's record before it is written into its
// broker's record (earlierWithoutShadowed, seed 80719).

// withoutShadowed drops from this agent's memory of the records (prev,
// and its own record as last written) every config claim that recs, the
// records as read, show stale (Records.Shadowed), for the records
// restoreLost may write back from memory: those missing from recs or
// Fresh there (a peer's earlier claims are adopted into it), and its own
// when the topic does not hold its last write. It returns the filtered
// copy of prev (nil stays nil).
func (e *Enforcer) withoutShadowed(prev *Records, recs Records) *Records {
	if w := e.prot.written; w != nil && !e.dryRun && !e.holdsLastWrite(recs) {
		if r, dropped := withoutShadowedIn(recs, e.brokerID, *w); len(dropped) > 0 {
			e.prot.written = &r
			e.noteShadowed(e.brokerID, dropped)
		}
	}
	e.keptWithoutShadowed(recs)
	if prev == nil || e.dryRun {
		return prev
	}
	var out *Records
	for _, id := range slices.Sorted(maps.Keys(prev.Agents)) {
		if cur, ok := recs.Agents[id]; ok && !cur.Fresh {
			continue // not written back (a Fresh one: claims adopted into it)
		}
		r, dropped := withoutShadowedIn(recs, id, prev.Agents[id])
		if len(dropped) == 0 {
			continue
		}
		if out == nil {
			c := prev.Clone()
			out = &c
		}
		out.Agents[id] = r
		if id != e.brokerID || e.prot.written == nil {
			e.noteShadowed(id, dropped)
		}
	}
	if out == nil {
		return prev
	}
	return out
}

// keptWithoutShadowed drops from the config claims keepOverwritten kept
// (this agent's record written over by the other instance's) every one
// recs show stale (Records.Shadowed), as withoutShadowed does for this
// agent's last written record: merged back once this agent acts
// (mergeKept), after the record that showed it stale was lost again, such
// a claim restored its stale original over the operator's value (found by
// the simulation, seed 35428: agent-1's claim on events, lowered from the
// operator's 104857600, was kept when agent-1b's record was found over
// agent-1's; the read showing it stale dropped it from agent-1's record
// only; the operator had set 209715200, the ownership topic was deleted
// again, and agent-1, acting once calm, put 104857600 back).
func (e *Enforcer) keptWithoutShadowed(recs Records) {
	if len(e.prot.keptConfigs) == 0 {
		return
	}
	if r, dropped := withoutShadowedIn(recs, e.brokerID, Record{Configs: e.prot.keptConfigs}); len(dropped) > 0 {
		e.prot.keptConfigs = r.Configs
		e.noteShadowed(e.brokerID, dropped)
	}
}

// earlierWithoutShadowed drops from the records of earlier processes this
// agent remembers (e.prot.earlier, which writeEarlier writes into their
// broker's record, Fresh or not) every config claim that recs, the
// records as read and written back, show stale (Records.Shadowed), as
// withoutShadowed does for the records written back whole: written in and
// adopted, such a claim restored its stale original over the operator's
// value (found by the simulation, seed 80719: broker 3's agent lowered
// events' local.retention.bytes from the operator's 209715200; the topic
// was reshaped, the operator set 104857600 and broker 3's agent
// restarted; once the topic was back, broker 1's new process lowered
// 104857600 to broker 3's number, broker 2 wrote back its copy of broker
// 3's record without the stale claim, broker 3's new process took that
// copy over, and agent-1b, whose copy was a later write of broker 3's
// earlier process, wrote the claim into the record: adopted, it put
// 209715200 back once calm).
func (e *Enforcer) earlierWithoutShadowed(recs Records) {
	for _, id := range slices.Sorted(maps.Keys(e.prot.earlier)) {
		list := slices.Clone(e.prot.earlier[id])
		for i, r := range list {
			if kept, dropped := withoutShadowedIn(recs, id, r); len(dropped) > 0 {
				list[i] = kept
				e.noteShadowed(id, dropped)
			}
		}
		e.prot.earlier[id] = list
	}
}

// withoutShadowedIn returns r, broker id's record as remembered, without
// the config claims recs show stale (Records.Shadowed), and those.
func withoutShadowedIn(recs Records, id int32, r Record) (Record, []ConfigClaim) {
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

// noteShadowed logs the remembered claims of broker id's record dropped
// as stale (withoutShadowedIn).
func (e *Enforcer) noteShadowed(id int32, dropped []ConfigClaim) {
	for _, c := range dropped {
		e.logger.Warn("a remembered claim of a record the ownership topic lost holds the value of a claim made since on another original (the value was changed while the topic was lost): dropped, not written back",
			"broker_id", id, "topic", c.Topic, "key", c.Key, "guard_value", c.Value, "original", ledger.ShowValue(c.Orig))
	}
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

// A config claim this process took over from a peer's copy of an
// earlier process's record (Record.Restored, or claims a peer wrote into
// its record: WrittenBack) may be an older write's: the peer read the
// record before that process's last write, and another peer that read the
// later one writes it in at its next read (writeEarlier). The later
// write may hold the same value on a newer original (an operator changed
// the value and that process's claim took the newer one over,
// Records.RestoresOver): restored at once, the copy's claim put its stale
// original back over the operator's value, and the later claim, its value
// gone, read as an operator's change (found by the simulation, seed
// 47558: broker 3's agent restarted while the ownership topic was lost,
// broker 2's agent wrote back its copy from before the original changed,
// and the new process, calm, restored "not set" over the operator's
// 209715200 in its first pass). So for a lease from taking such claims
// over, the agent keeps them without restoring their originals
// (keepConfigClaims), and a later write's original for a claim it took
// over and holds with the same value is taken as its own
// (takeLaterOriginals).

// holdCopiedConfigs starts (or extends) the hold on the config claims
// taken over from a peer's copy: a lease from now.
func (e *Enforcer) holdCopiedConfigs() {
	e.prot.copyUntil = e.monotonic(e.clock.Now()) + e.cfg.Protection.LeaseDuration
}

// copyHeld lists the config claims (topic, key, value) taken over from
// an earlier process while the hold lasts (nil: none held).
func (e *Enforcer) copyHeld() map[[3]string]bool {
	if e.monotonic(e.clock.Now()) >= e.prot.copyUntil || len(e.prot.takenOver.Configs) == 0 {
		return nil
	}
	out := map[[3]string]bool{}
	for _, c := range e.prot.takenOver.Configs {
		out[[3]string{c.Topic, c.Key, c.Value}] = true
	}
	return out
}

// takeLaterOriginals: cur, this agent's record as read, holds a later
// write of an earlier process this one took over an older write of (a
// peer wrote it in: writeEarlier, ledger.LaterOriginals). A config claim
// of this agent's last record as it took it over (the same value and
// original as taken over) that cur holds with the same value and another
// original takes cur's original, in the record and in what it took over.
func (e *Enforcer) takeLaterOriginals(cur Record) {
	if e.prot.written == nil {
		return
	}
	w, taken := *e.prot.written, e.prot.takenOver
	changed := false
	for i, c := range w.Configs {
		t := slices.IndexFunc(taken.Configs, func(x ConfigClaim) bool {
			return x.Topic == c.Topic && x.Key == c.Key && x.Value == c.Value && ledger.SameValue(x.Orig, c.Orig)
		})
		l := slices.IndexFunc(cur.Configs, func(x ConfigClaim) bool {
			return x.Topic == c.Topic && x.Key == c.Key && x.Value == c.Value && !ledger.SameValue(x.Orig, c.Orig)
		})
		if t < 0 || l < 0 {
			continue
		}
		if !changed {
			w.Configs, taken.Configs, changed = slices.Clone(w.Configs), slices.Clone(taken.Configs), true
		}
		w.Configs[i].Orig, taken.Configs[t].Orig = cur.Configs[l].Orig, cur.Configs[l].Orig
		e.logger.Warn("a later write of the earlier process this agent took over holds a claim it holds with another original: taken as its own",
			"topic", c.Topic, "key", c.Key, "guard_value", c.Value, "original", ledger.ShowValue(cur.Configs[l].Orig), "was", ledger.ShowValue(c.Orig))
	}
	if changed {
		e.prot.written, e.prot.takenOver, e.prot.dirty = &w, taken, true
	}
}

// forgetOperatorChanged drops from this agent's memory of its peers'
// records (what restoreLost writes back once the ownership topic is back)
// every config claim whose value this pass found changed by an operator:
// the value in place (cur, read after the records) is neither the claim's
// own nor its original, and no claim of the records read sets it
// (Records.GuardSet). Its owner drops such a claim at its next pass
// (keepConfigClaims); a copy that kept it, written back after the topic
// was lost with the owner's later record, put the stale claim back, and
// the new process of the owner, finding the value again the claim's own
// (a claim on the operator's value, lost for good with the topic, held the
// same number), restored the stale original over the operator's value
// (found by the simulation, seed 55749: broker 2's agent dropped its
// claim on events at step 49 when the operator set 209715200, broker 3's
// agent lowered that value to broker 2's number, the topic was reshaped
// before any surviving agent read either write, and broker 1's copy of
// broker 2's older record, written back at step 91, deleted the
// operator's override at step 97). A value in place that is the claim's
// original is kept in memory: an agent records a claim before it sets
// the value (and a set may fail), so the claim may still be made.
func (e *Enforcer) forgetOperatorChanged(recs Records, cur map[string]*string) {
	if e.dryRun {
		return
	}
	e.forgetEarlierOperatorChanged(recs, cur)
	mem := e.prot.remembered
	if mem == nil {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(mem.Agents)) {
		r := mem.Agents[id]
		if id == e.brokerID && !otherInstance(r, e.instance) {
			continue // this agent's own: its passes drop the claim
		}
		keep, dropped := splitClaims(r.Configs, cur, func(c ConfigClaim, v *string) bool {
			return !recs.GuardSet(c, v) && !ledger.SameValue(v, c.Orig)
		})
		if len(dropped) == 0 {
			continue
		}
		r.Configs = keep
		mem.Agents[id] = r
		for _, c := range dropped {
			e.logger.Info("a peer's claim on a value an operator changed: left out of this agent's memory of its record (not written back if the ownership topic loses it)",
				"broker_id", id, "topic", c.Topic, "key", c.Key, "guard_value", c.Value, "original", ledger.ShowValue(c.Orig), "value", ledger.ShowValue(cur[c.Topic]))
		}
	}
}

// operatorUnder reports whether cur, a value another record's claim on
// c's key sets, was lowered from an operator's value that is neither c's
// value nor its original: the operator changed the value after c was made
// (the claim's owner dropped c at its next pass), and the other claim
// lowered the operator's value (found by the simulation, seed 40631 of the
// default mix: the operator set events' local.retention.bytes while the
// ownership topic was lost and no peer read the configs; once it was back,
// broker 1's new process lowered the operator's value, and broker 3's
// agent, whose memory kept broker 1's earlier process's claim, wrote that
// claim back; adopted, it restored its stale original over the
// operator's value).
func operatorUnder(recs Records, c ConfigClaim, cur *string) bool {
	if cur == nil || *cur == c.Value || (c.Prev != nil && *cur == *c.Prev) {
		return false
	}
	o, ok := recs.ValueClaim(c.Topic, c.Key, *cur)
	if !ok {
		return false
	}
	under := recs.GuardOriginal(o)
	return !ledger.SameValue(under, c.Orig) && (under == nil || *under != c.Value)
}

// forgetEarlierOperatorChanged drops, as forgetOperatorChanged does, the
// config claims an operator changed from the records of earlier
// processes this agent remembers (writeEarlier): written back, such a
// claim is adopted by the broker's new process, which restores its stale
// original over the operator's value (seed 40631).
func (e *Enforcer) forgetEarlierOperatorChanged(recs Records, cur map[string]*string) {
	for _, id := range slices.Sorted(maps.Keys(e.prot.earlier)) {
		list := e.prot.earlier[id]
		for i, r := range list {
			keep, dropped := splitClaims(r.Configs, cur, func(c ConfigClaim, v *string) bool {
				return !ledger.SameValue(v, c.Orig) && !(recs.GuardSet(c, v) && !operatorUnder(recs, c, v))
			})
			if len(dropped) == 0 {
				continue
			}
			list = slices.Clone(list)
			list[i].Configs = keep
			e.prot.earlier[id] = list
			for _, c := range dropped {
				e.logger.Info("an earlier process's claim on a value an operator changed: left out of what this agent writes back",
					"broker_id", id, "topic", c.Topic, "key", c.Key, "guard_value", c.Value, "original", ledger.ShowValue(c.Orig), "value", ledger.ShowValue(cur[c.Topic]))
			}
		}
	}
}

// splitClaims splits config claims on the topics cur holds a value for
// into those kept and those drop(claim, value in place) leaves out (keep
// is nil when none is kept).
func splitClaims(cs []ConfigClaim, cur map[string]*string, drop func(ConfigClaim, *string) bool) (keep, dropped []ConfigClaim) {
	keep = slices.DeleteFunc(slices.Clone(cs), func(c ConfigClaim) bool {
		v, ok := cur[c.Topic]
		if !ok || !drop(c, v) {
			return false
		}
		dropped = append(dropped, c)
		return true
	})
	if len(keep) == 0 {
		keep = nil
	}
	return keep, dropped
}
