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
//  2. the protection records (every agent's record and lift) and the
//     cluster's brokers, when due (recordsDue): never read yet, or an
//     interval old. Switching protection on never waits for this read: it
//     uses the cached records. The other agents' leases are followed here;
//  3. the broker's offsets of the partitions of log dirs that free space
//     (Policy.freeingPartitions), with observe mode's virtual log start
//     offsets on top;
//  4. the cluster's protection state (ACLs or the default quota) while
//     protection is relevant: this agent claims or wants some, or another
//     agent's record claims some (the cluster-wide view, expired leases);
//  5. the records again when a binding this agent claims is missing and
//     they were not read this pass: an operator may have lifted it, and it
//     is put back only if not.
//
// Lifting needs no fresh read here: apply writes the smaller record, then
// reads the records to their end before it deletes anything (see
// applyProtection).
//
// A read that fails marks the broker unreachable (which holds destructive
// actions back), skips the reads after it, and is returned; phases are
// the reads' durations, for the debug log.
func (e *Enforcer) observe(ctx context.Context) (o Observed, phases []any, err error) {
	now := e.clock.Now()
	e.prot.pass = now
	snap := e.src.Snapshot()
	o = Observed{Now: now, Snapshot: snap, ScheduleDue: e.scheduleDue(now), FractionDone: e.fractionDone(now),
		Stale: snap == nil || now.Sub(snap.Time) > e.cfg.StaleAfter}
	e.prot.untrusted = !trusted(o)
	e.eligibleSince = trackEligible(e.eligibleSince, snap, now)
	o.EligibleSince = e.eligibleSince
	if snap == nil {
		return o, nil, nil
	}
	e.observeEvidence(ctx, &o)
	o.dirs = e.policy.viewDirs(o)
	e.endRefusals(o)
	e.learnBrokerID()
	r := reads{o: &o}

	// Every successful read of the records replaces e.prot.records: a
	// new pointer says they were read this pass.
	cached := e.prot.records
	e.protectionInputs(&o)
	if e.recordsDue(o) && r.ledger("load_records", func() error { return e.readRecords(ctx, &o) }) {
		e.protectionInputs(&o)
	}
	if !o.BrokerUnreachable {
		if parts := e.policy.freeingPartitions(o); len(parts) > 0 {
			// Protection needs no offsets (spec R8.4): a failed read
			// holds only the deletions of the partitions it left out.
			r.soft("list_offsets", func() error { return e.readOffsets(ctx, &o, parts) })
		}
	}
	if e.prot.records != nil && !o.BrokerUnreachable && !r.ledgerLost {
		o.lowerCandidates = e.policy.lowerCandidates(o)
		if e.protectionRelevant(o) {
			r.do("observe_protection", func() error { return e.readProtection(ctx, &o) })
		}
	}
	// A binding this agent claims is missing: an operator may have lifted
	// it. Read the records again before putting it back, unless they were
	// read this pass already.
	if o.Protection != nil && e.prot.records == cached && e.claimsMissing(o.Protection) {
		if r.ledger("load_records", func() error { return e.readRecords(ctx, &o) }) {
			o.Protection.Records = e.prot.records.Clone()
			o.Protection.Expired = e.expired(o.Now)
		} else {
			o.Protection = nil // protection stays as it is this pass
		}
	}
	if o.Protection != nil {
		o.Protection.RecordsRead = e.prot.records != cached
	}
	if o.WouldProtect != nil {
		o.WouldProtect.RecordsRead = e.prot.records != cached
	}
	return o, r.phases, errors.Join(r.errs...)
}

// protectionInputs sets what the pass knows of this agent's protection
// from the records as last read: the log dirs it protects, whether its
// broker is alive, and the log dirs the policy wants protected
// (Policy.protectDirs, computed here once for the reads that depend on
// it).
func (e *Enforcer) protectionInputs(o *Observed) {
	o.Protected = dirSet(e.recordForMode().LogDirs)
	o.BrokerNotAlive, o.BrokerGone = e.selfAlive(o.Now)
	o.wantProtected = e.policy.protectDirs(*o)
}

// selfAlive reports whether this agent's broker is missing from the
// cluster's metadata (fenced for a restart, or gone), and whether it has
// been for a whole lease (gone: peers lift its protection then, and the
// agent keeps none). Timed on the monotonic clock, as peers time it: a
// jump of the wall clock neither makes a restarting broker gone nor
// keeps a gone one.
func (e *Enforcer) selfAlive(now time.Time) (notAlive, gone bool) {
	notAlive = e.prot.live != nil && !e.prot.live[e.brokerID]
	if !notAlive {
		e.prot.selfGone = -1
		return false, false
	}
	mono := e.monotonic(now)
	if e.prot.selfGone < 0 || mono < e.prot.selfGone {
		e.prot.selfGone = mono
	}
	return true, mono-e.prot.selfGone >= e.cfg.Protection.LeaseDuration
}

// reads times observe's reads and keeps their errors.
type reads struct {
	o      *Observed
	phases []any
	errs   []error
	// ledgerLost: the ownership topic is lost (ErrLedgerLost): protection
	// is neither observed nor changed this pass; deletions go on.
	ledgerLost bool
}

// ledger runs a read of the ownership topic: a lost ledger holds back
// protection only (nothing is claimed or released on its word, spec
// R8.7); any other failure marks the broker unreachable.
func (r *reads) ledger(name string, read func() error) bool {
	t := time.Now()
	err := read()
	r.phases = append(r.phases, name, time.Since(t))
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrLedgerLost):
		r.ledgerLost = true
	default:
		r.o.BrokerUnreachable = true
	}
	r.errs = append(r.errs, err)
	return false
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

// soft runs one read whose failure holds back only what needs it (the
// partitions left without offsets are not deleted from): the broker is not
// marked unreachable.
func (r *reads) soft(name string, read func() error) {
	t := time.Now()
	err := read()
	r.phases = append(r.phases, name, time.Since(t))
	if err != nil {
		r.errs = append(r.errs, err)
	}
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

// learnBrokerID sets the broker id this agent acts for and keeps its
// ownership record under: configured (set from the start), else the
// guarded node the identity check found (spec R7.1; agent.GuardedNode
// returns the configured one when set), never a log dir's guess. Once
// known it is kept while the cluster cannot be read.
func (e *Enforcer) learnBrokerID() {
	if e.ev.node >= 0 {
		e.brokerID = e.ev.node
	}
	e.guarded.Store(e.brokerID)
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

func dirSet(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}
