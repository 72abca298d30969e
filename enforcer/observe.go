package enforcer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// observe reads what this pass needs, and no more, and returns it for
// Desired and PlanActions. What it reads is decided up front from what is
// already known, with the policy's pure helpers:
//
//  1. the latest snapshot (without one, nothing else), then the evidence
//     for destructive actions (observeEvidence, spec R7): the clock, the
//     log dirs' identity and the guarded node, the principal's rights,
//     the purge history and feedback;
//  2. the ownership records, when due (ownershipDue): never read yet, or
//     protection is relevant and the last read is an interval old. Switching
//     protection on never waits for this read: it uses the cached records;
//  3. the broker's offsets of the partitions of log dirs that free space
//     (Policy.freeingPartitions), with observe mode's virtual log start
//     offsets on top;
//  4. the cluster's protection state (ACLs or the default quota) while
//     protection is relevant;
//  5. fresh ownership records when the protection plan would lift or
//     change this agent's claims and the records were not read this pass:
//     so one agent never removes what another still claims.
//
// A read that fails marks the broker unreachable (which holds destructive
// actions back), skips the reads after it, and is returned; phases are
// the reads' durations, for the debug log.
func (e *Enforcer) observe(ctx context.Context) (o Observed, phases []any, err error) {
	now := e.clock.Now()
	snap := e.src.Snapshot()
	o = Observed{Now: now, Snapshot: snap, ScheduleDue: e.scheduleDue(now), FractionDone: e.fractionDone(now),
		Stale: snap == nil || now.Sub(snap.Time) > e.cfg.StaleAfter}
	if snap == nil {
		return o, nil, nil
	}
	e.observeEvidence(ctx, &o)
	e.learnBrokerID()
	o.Protected = dirSet(e.mine().LogDirs)
	r := reads{o: &o}

	fresh := false
	if e.ownershipDue(o) {
		fresh = r.do("load_ownership", func() error { return e.readOwnership(ctx, &o) })
	}
	if !o.BrokerUnreachable {
		if parts := e.policy.freeingPartitions(o); len(parts) > 0 {
			r.do("list_offsets", func() error { return e.readOffsets(ctx, &o, parts) })
		}
	}
	if e.ownership != nil && !o.BrokerUnreachable && e.protectionRelevant(o) {
		r.do("observe_protection", func() error { return e.readProtection(ctx, &o) })
	}
	if o.Protection != nil && !fresh && planProtection(o, e.policy.protectDirs(o)).changesClaimsOnly() {
		if r.do("load_ownership", func() error { return e.readOwnership(ctx, &o) }) {
			o.Protection.Ownership = e.ownership
		} else {
			o.Protection = nil // protection stays as it is this pass
		}
	}
	return o, r.phases, errors.Join(r.errs...)
}

// reads times observe's reads and keeps their errors.
type reads struct {
	o      *Observed
	phases []any
	errs   []error
}

// do runs one read; a failure marks the broker unreachable. It reports
// whether the read succeeded.
func (r *reads) do(name string, read func() error) bool {
	t := time.Now()
	err := read()
	r.phases = append(r.phases, name, time.Since(t))
	if err != nil {
		r.errs = append(r.errs, err)
		r.o.BrokerUnreachable = true
		return false
	}
	return true
}

// protectionRelevant: this agent claims something, or a log dir wants
// protection.
func (e *Enforcer) protectionRelevant(o Observed) bool {
	return !e.mine().empty() || len(e.policy.protectDirs(o)) > 0
}

// ownershipDue reports whether the ownership records must be read before
// anything else: never read yet, or protection is relevant, no log dir is
// just switching protection on (that must not wait for a read), and the
// last read is an interval old (or the clock went back).
func (e *Enforcer) ownershipDue(o Observed) bool {
	if e.ownership == nil {
		return true
	}
	if !e.protectionRelevant(o) {
		return false
	}
	for d := range e.policy.protectDirs(o) {
		if !o.Protected[d] {
			return false // switching on: use the cached records
		}
	}
	return o.Now.Sub(e.ownershipLoaded) >= e.cfg.Interval || o.Now.Before(e.ownershipLoaded)
}

// fractionDone lists the partitions that had their purge_fraction pass
// in the current interval.
func (e *Enforcer) fractionDone(now time.Time) map[TopicPartition]bool {
	done := map[TopicPartition]bool{}
	for tp, at := range e.fractionPass {
		if now.Sub(at) < e.cfg.Interval && !now.Before(at) {
			done[tp] = true
		}
	}
	return done
}

// learnBrokerID sets the broker id this agent's ownership record is kept
// under: configured, else the guarded node the identity check found
// (spec R7.1), never a log dir's guess.
func (e *Enforcer) learnBrokerID() {
	if e.brokerF != nil && *e.brokerF >= 0 {
		e.brokerID = *e.brokerF
		return
	}
	if e.ev.node >= 0 {
		e.brokerID = e.ev.node
	}
}

// mine is this agent's ownership record, as last read or written.
func (e *Enforcer) mine() Ownership {
	if e.ownership == nil {
		return Ownership{BrokerID: e.brokerID}
	}
	o, ok := e.ownership[e.brokerID]
	if !ok {
		return Ownership{BrokerID: e.brokerID}
	}
	return o
}

// readOwnership reads every agent's record and, from this agent's, the
// log dirs it protects.
func (e *Enforcer) readOwnership(ctx context.Context, o *Observed) error {
	if err := e.loadOwnership(ctx); err != nil {
		return err
	}
	e.ownershipLoaded = o.Now
	o.Protected = dirSet(e.mine().LogDirs)
	return nil
}

func (e *Enforcer) loadOwnership(ctx context.Context) error {
	own, err := e.admin.LoadOwnership(ctx)
	if err != nil {
		return fmt.Errorf("load ownership: %w", err)
	}
	if own == nil {
		own = map[int32]Ownership{}
	}
	if e.dryRun && e.ownership != nil {
		// Observe mode never writes a record: keep the virtual one, refresh
		// the other agents'.
		own[e.brokerID] = e.ownership[e.brokerID]
	}
	e.ownership = own
	return nil
}

// readOffsets reads the broker's offsets of parts. In observe mode a
// partition's log start offset is at least what the plan would have moved
// it to, so each action is reported once.
func (e *Enforcer) readOffsets(ctx context.Context, o *Observed, parts []TopicPartition) error {
	offs, err := e.admin.Offsets(ctx, parts)
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	for tp, v := range e.virtualLSO {
		if cur, ok := offs[tp]; ok && v > cur.LogStart {
			cur.LogStart = v
			offs[tp] = cur
		}
	}
	o.Offsets = offs
	return nil
}

// readProtection reads the cluster's protection state: every topic ACL
// and the default producer quota, as the strategy and this agent's claims
// need. In observe mode what this agent would have set counts as set.
func (e *Enforcer) readProtection(ctx context.Context, o *Observed) error {
	po := &ProtectionObserved{
		BrokerID: e.brokerID, Strategy: e.cfg.Protection.Strategy,
		Ownership: e.ownership, ProducerByteRate: e.cfg.Protection.ProducerByteRate,
	}
	mine := e.mine()
	if po.Strategy == StrategyACL || len(mine.ACLs) > 0 {
		acls, err := e.admin.TopicACLs(ctx)
		if err != nil {
			return fmt.Errorf("list acls: %w", err)
		}
		po.ACLs = acls
		if e.dryRun {
			po.ACLs = append(po.ACLs, mine.ACLs...)
		}
	}
	if po.Strategy == StrategyQuota || mine.ProducerByteRate > 0 {
		rate, err := e.admin.DefaultProducerQuota(ctx)
		if err != nil {
			return fmt.Errorf("describe client quotas: %w", err)
		}
		po.DefaultProducerByteRate = rate
		if e.dryRun && mine.ProducerByteRate > 0 && rate == 0 {
			po.DefaultProducerByteRate = mine.ProducerByteRate
		}
	}
	o.Protection = po
	return nil
}

func dirSet(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}
