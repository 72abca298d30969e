package enforcer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// applyProtection performs the protection plan (spec R8). In observe mode
// it reports what enforcing would do (plan.WouldProtect: logged and
// counted as dry_run) and performs only lifts: this agent's earlier
// protection and expired peers', since lifting blocks nothing and deletes
// nothing (spec R4.4). It returns the pass's problems for the gauges.
//
// Steps, in order (spec R8.4):
//  1. protectMore: the grown record is written with
//     protection.recordTimeout as its deadline, then the bindings or the
//     quota are set whether or not it was written in time; what was set
//     unrecorded is remembered and recorded by a later pass;
//  2. lowerLocalRetention: tiered topics' local retention is lowered,
//     never before a record claiming the new value is written (R7.4);
//  3. giveUp: the record marking the claims given up as releasing is
//     written (acks=all), the records are read to their end, and only
//     what no live record claims then is released (two-phase release,
//     R8.5, retried with a capped backoff);
//  4. otherwise the record is written when it changed or its lease is due;
//  5. liftPeers: for each expired peer, a lift is written, then what it
//     voided is released.
func (e *Enforcer) applyProtection(ctx context.Context, plan Plan, band string) (map[ProtectionError]bool, error) {
	if e.dryRun && plan.WouldProtect != nil {
		e.reportWouldProtect(*plan.WouldProtect, band)
	}
	pp := plan.Protection
	e.noteObserveLift(pp)
	e.noteAcked(pp)
	ap := &applying{pp: pp, me: e.clusterRecord(), problems: map[ProtectionError]bool{}}
	if pp.Grows() {
		e.protectMore(ctx, ap, band)
	}
	if len(pp.SetConfigs) > 0 {
		e.lowerLocalRetention(ctx, ap)
	}
	e.dropOperatorChanged(pp)
	switch {
	case ap.growFailed:
		// The ownership topic just failed the grown record: the smaller
		// one waits for a later pass, and so does anything released.
		ap.errs = append(ap.errs, errors.New("the protection record could not be written: recorded by a later pass"))
	case pp.releases():
		e.giveUp(ctx, ap, band)
	case pp.Write && !ap.wrote:
		ap.store(e.storeRecord(ctx, pp.Record))
	}
	if err := e.applyCordons(ctx, pp); err != nil {
		ap.errs = append(ap.errs, err)
	}
	e.liftPeers(ctx, ap, band)
	return ap.problems, errors.Join(ap.errs...)
}

// applying is one applyProtection's progress: the plan, this agent's
// record before it, what was written, and the problems met.
type applying struct {
	pp ProtectionPlan
	me Record
	// wrote: the plan's record is written already (the grown one was it);
	// growFailed: the grown record could not be written.
	wrote, growFailed bool
	// notCreated: topics whose bindings could not be created this pass.
	notCreated map[string]bool
	problems   map[ProtectionError]bool
	errs       []error
}

// store notes a failed write of the record (nil: written).
func (ap *applying) store(err error) bool {
	if err != nil {
		ap.problems[ErrorRecordFailed] = true
		ap.errs = append(ap.errs, err)
		return false
	}
	return true
}

// grown is the record claiming both what this agent held and what the
// plan holds: written before anything new is set.
func (ap *applying) grown() Record {
	g := ap.pp.Record
	g.Owned = unionOwned(ap.me.Owned, g.Owned)
	g.Configs = ledger.UnionConfigs(ap.me.Configs, g.Configs)
	g.LogDirs = unionStrings(ap.me.LogDirs, g.LogDirs)
	return g
}

// isPlanned reports whether a grown record written is the plan's record
// itself (nothing given up): it need not be written again.
func (ap *applying) isPlanned(g Record) bool {
	r := ap.pp.Record
	return ledger.SameOwned(g.Owned, r.Owned) && ledger.SameConfigs(g.Configs, r.Configs) && slices.Equal(g.LogDirs, r.LogDirs)
}

// noteObserveLift logs, once, that observe mode lifts what this agent
// set earlier.
func (e *Enforcer) noteObserveLift(pp ProtectionPlan) {
	if e.dryRun && (len(pp.Release) > 0 || pp.ReleaseQuota > 0) && !e.prot.observeLift {
		e.logger.Info("observe mode: lifting the protection this agent set earlier (lifting blocks nothing and deletes nothing)",
			"topics", len(pp.Release), "quota", pp.ReleaseQuota)
		e.prot.observeLift = true
	}
}

// noteAcked logs a lift of this agent's protection it acknowledges.
func (e *Enforcer) noteAcked(pp ProtectionPlan) {
	if a := pp.Acked; a != nil {
		e.logger.Warn("protection of this agent lifted", "lift_id", a.ID, "kind", a.Kind, "by", a.By, "at", a.At,
			"topics", a.Topics, "reason", a.Reason, "suppressed_until_episode_ends", a.Kind == LiftOperator && pp.Record.Suppressed != nil)
	}
}

// protectMore is step 1: the grown record, bounded by
// protection.recordTimeout, then the bindings or the quota, recorded or
// not (protection never waits for the record, R8.4).
func (e *Enforcer) protectMore(ctx context.Context, ap *applying, band string) {
	pp := ap.pp
	start := time.Now()
	grown := ap.grown()
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Protection.RecordTimeout)
	err := e.storeRecord(rctx, grown)
	cancel()
	recordTook := time.Since(start)
	recorded := err == nil
	if err != nil {
		ap.growFailed = true
		ap.problems[ErrorRecordFailed] = true
		e.logger.Warn("protection applied before its record was written", "err", err, "record_timeout", e.cfg.Protection.RecordTimeout.String())
	} else {
		ap.wrote = ap.isPlanned(grown)
	}
	if len(pp.Create) > 0 {
		// The fastest-growing topics first, in batches (protect_order.go).
		notCreated, err := e.createProtection(ctx, pp.Create, band, recorded, recordTook)
		ap.notCreated = notCreated
		if err != nil {
			ap.problems[createProblem(err)] = true
			ap.errs = append(ap.errs, fmt.Errorf("create acls: %w", err))
		}
	}
	if pp.SetQuota > 0 {
		err := e.admin.SetDefaultProducerQuota(ctx, pp.SetQuota)
		e.quotaAction(actionProtect, pp.SetQuota, band, actionResult(err), err)
		if !recorded {
			e.prot.unrecordedQuota = pp.SetQuota
		}
		if err != nil {
			ap.problems[ErrorCreateFailed] = true
			ap.errs = append(ap.errs, fmt.Errorf("set default producer quota: %w", err))
		}
	}
}

// lowerLocalRetention is step 2 (spec R7.4): never before a record
// claiming the new value, with the operator's value, is written; a value
// set unrecorded could not be restored.
func (e *Enforcer) lowerLocalRetention(ctx context.Context, ap *applying) {
	pp := ap.pp
	recorded := !ap.growFailed && pp.Grows()
	if !recorded {
		grown := ap.grown()
		if err := e.storeRecord(ctx, grown); err != nil {
			ap.problems[ErrorRecordFailed] = true
			ap.errs = append(ap.errs, fmt.Errorf("local retention not lowered: %w", err))
			for _, c := range pp.SetConfigs {
				e.configAction(actionLowerLocalRetention, c, e.bandOf(c.LogDir), err)
			}
			return
		}
		ap.wrote = ap.isPlanned(grown)
	}
	for _, c := range pp.SetConfigs {
		err := e.admin.AlterTopicConfig(ctx, c.Topic, c.Key, c.Value)
		e.configAction(actionLowerLocalRetention, c, e.bandOf(c.LogDir), err)
		e.rememberRefusal(c, err)
		if err != nil {
			ap.problems[ErrorLocalRetentionFailed] = true
			ap.errs = append(ap.errs, fmt.Errorf("lower %s of topic %s: %w", c.Key, c.Topic, err))
		}
	}
}

// dropOperatorChanged notes the claims dropped because an operator
// changed the lowered value: not lowered again in this episode.
func (e *Enforcer) dropOperatorChanged(pp ProtectionPlan) {
	for _, c := range pp.DroppedConfigs {
		if e.prot.operatorTopics == nil {
			e.prot.operatorTopics = map[string]bool{}
		}
		e.prot.operatorTopics[c.Topic] = true
		if e.prot.operatorDropped == nil {
			e.prot.operatorDropped = map[[3]string]bool{}
		}
		e.prot.operatorDropped[[3]string{c.Topic, c.Key, *c.From}] = true
		e.m.operatorChanged.Inc()
		e.logger.Warn("local retention changed by an operator: the guard's claim is dropped and the value left as it is",
			"topic", c.Topic, "key", c.Key, "value", ledger.ShowValue(c.Value), "guard_value", ledger.ShowValue(c.From))
	}
}

// giveUp is step 3, the two-phase release (spec R8.5): the record
// marking the claims releasing is written first; they leave it only once
// a later pass reads them back gone. A release that fails is retried
// every pass, with a capped backoff timed on the monotonic clock (a jump
// of the wall clock neither skips it nor stretches it).
func (e *Enforcer) giveUp(ctx context.Context, ap *applying, band string) {
	pp := ap.pp
	if (pp.Write || !ap.wrote) && !ap.store(e.storeRecord(ctx, pp.Record)) {
		// Nothing is released before the smaller record is written:
		// protection stays until a later pass can record it.
		return
	}
	mono := e.monotonic(e.clock.Now())
	if wait := e.prot.releaseRetryAt - mono; e.prot.releaseFailures > 0 && wait > 0 {
		ap.problems[ErrorLiftFailed] = true
		ap.errs = append(ap.errs, fmt.Errorf("release retried in %s (failed %d times)", wait, e.prot.releaseFailures))
		return
	}
	// A topic whose shape changes keeps its old bindings until the new
	// ones are in place (spec R8.3): the DENY of the shape left, released
	// before the absence shape's ALLOWs exist, would leave the topic
	// without ACLs, writable by everyone. Its claims stay releasing, for
	// a later pass.
	release := flatten(slices.DeleteFunc(slices.Clone(pp.Release), func(tp TopicProtection) bool { return ap.notCreated[tp.Topic] }))
	rel, err := e.release(ctx, release, pp.ReleaseQuota, pp.ReleaseConfigs)
	e.unprotected(rel, band, "", pp.ReleaseQuota)
	if err != nil {
		ap.problems[ErrorLiftFailed] = true
		e.prot.releaseFailures++
		e.prot.releaseRetryAt = mono + e.releaseBackoff(e.prot.releaseFailures)
		ap.errs = append(ap.errs, err)
		return
	}
	e.prot.releaseFailures, e.prot.releaseRetryAt = 0, 0
}

// liftPeers is step 5: the expired peers' protection lifted.
func (e *Enforcer) liftPeers(ctx context.Context, ap *applying, band string) {
	for _, pl := range ap.pp.Lifts {
		if err := e.liftPeer(ctx, pl, band); err != nil {
			ap.problems[ErrorLiftFailed] = true
			ap.errs = append(ap.errs, err)
		}
	}
}

func createProblem(err error) ProtectionError {
	if errors.Is(err, ErrNoAuthorizer) {
		return ErrorNoAuthorizer
	}
	return ErrorCreateFailed
}

// storeRecord writes this agent's record and remembers it. A write is
// bounded by a third of the lease (the renewal period; at least
// protection.recordTimeout): a pass never hangs on the ownership topic.
func (e *Enforcer) storeRecord(ctx context.Context, r Record) error {
	ctx, cancel := context.WithTimeout(ctx, max(e.cfg.Protection.LeaseDuration/3, e.cfg.Protection.RecordTimeout))
	defer cancel()
	if !e.leaseFence(ctx, e.prot.pass) {
		// Not over a record of another instance this agent has not read
		// (lease fencing, purge_record.go).
		e.prot.dirty = true
		return errors.New("write the protection record: lease fencing: the ledger could not be read, or another agent instance holds this broker")
	}
	if e.prot.purgesHeld.Equal(e.prot.pass) {
		r.Purged = e.purgeHistory(e.prot.pass) // with the purges of the instance taken over from
	}
	restored := false // this agent's own write, not a peer's copy
	if a := e.prot.fenceAdopt; a != nil && e.prot.fenceRead.Equal(e.prot.pass) {
		// A peer wrote claims of this agent's earlier process into its
		// record since its last read (readLeaseHolder): kept, never
		// written over.
		if merged, added := ledger.Adopt(r, *a); added {
			r = merged
			e.logger.Warn("this agent's record holds claims of its earlier process that a peer wrote back: kept in the record written now",
				"topic", e.cfg.OwnershipTopic, "claims", r.Claims())
		}
		// A peer's copy (Restored: it may lack the last purges of the
		// earlier process) that this process has not read yet: the mark
		// stays until its next read counts the caps as spent
		// (restoreHistory); written over, the process waiting for its
		// history took the lost record for a fresh install (spec R7.3).
		restored = a.Restored && !e.prot.purgesRestored
	}
	r.BrokerID = e.brokerID // the key it is written under
	// Written before any read, or after a first read without a record
	// of its own: nothing its earlier process claimed is known to it.
	r.Fresh = e.isFresh()
	r.Started, r.Inherits, r.InheritsSeq = e.processesNamed()
	r.Restored, r.WrittenBack = restored, nil // a peer's copy not read yet keeps its mark
	r.LedgerLost = e.lostMark(e.prot.pass)
	r.PurgesUnknown = e.historyUnknown()
	e.prot.seq++
	r.Seq = e.prot.seq
	start := e.monotonic(e.clock.Now())
	err := e.admin.StoreRecord(ctx, r)
	e.noteLostWrite(err)
	if err != nil {
		e.prot.dirty = true
		// It may have taken effect (a reply lost): a peer's copy of it
		// is newer than this agent's memory (restoreOwn).
		e.prot.unconfirmed = append(e.prot.unconfirmed, r.Updated)
		return fmt.Errorf("write the protection record: %w", err)
	}
	e.prot.dirty, e.prot.unconfirmed, e.prot.writtenGone, e.prot.writtenQuotaGone = false, nil, nil, false
	if !r.Renewed.IsZero() && r.Instance == e.instance {
		e.prot.renewed, e.prot.renewedMono = true, start
		if !e.prot.stamped.renewed.Equal(r.Renewed) {
			e.prot.stamped = leaseSeen{renewed: r.Renewed, since: start}
		}
	}
	if e.prot.records == nil {
		rs := ledger.NewRecords()
		e.prot.records = &rs
	}
	r.BrokerID = e.brokerID
	e.prot.records.Agents[e.brokerID] = r
	e.prot.written = &r
	if e.prot.keptMerged {
		e.prot.keptConfigs, e.prot.keptMerged = nil, false // planned with them (mergeKept)
	}
	if e.prot.remembered != nil {
		// The memory of this broker's record is the latest known: this
		// write, or another instance's record read after it
		// (restoreOwn).
		e.prot.remembered.Agents[e.brokerID] = r
	}
	if len(e.prot.unrecorded) > 0 {
		r.Bindings(nil, func(a ACL) { delete(e.prot.unrecorded, a) })
	}
	if r.Quota() > 0 || r.ReleasingQuota() > 0 {
		e.prot.unrecordedQuota = 0
	}
	return nil
}

// maxReleaseBackoff caps the wait between two attempts of a release that
// keeps failing.
const maxReleaseBackoff = 5 * time.Minute

// releaseBackoff is the wait after the n-th failed release in a row: the
// interval, doubled each time, capped at maxReleaseBackoff and a third of
// the lease.
func (e *Enforcer) releaseBackoff(n int) time.Duration {
	d := max(e.cfg.Interval, time.Second)
	for i := 1; i < n && d < maxReleaseBackoff; i++ {
		d *= 2
	}
	return min(d, maxReleaseBackoff, max(e.cfg.Protection.LeaseDuration/3, e.cfg.Interval))
}

// release runs ReleaseUnclaimed and keeps the records it read (with what
// the topic lost put back from memory: remembering).
func (e *Enforcer) release(ctx context.Context, cands []ACL, quota int64, configs []ConfigClaim) (ledger.Released, error) {
	rel, err := ledger.ReleaseUnclaimed(ctx, remembering{e.admin, e}, cands, quota, configs)
	if rel.Records.Agents != nil {
		rs := rel.Records.Clone()
		e.prot.records = &rs
	}
	return rel, err
}

// liftPeer lifts an expired peer's protection: the lift first, then what
// no live record claims.
func (e *Enforcer) liftPeer(ctx context.Context, pl PeerLift, band string) error {
	now := e.clock.Now()
	l := Lift{ID: ledger.NewLiftID(pl.Kind, now), BrokerID: pl.BrokerID, Kind: pl.Kind,
		By: fmt.Sprintf("agent of broker %d", e.brokerID), At: now, Reason: liftReason(pl.Kind, e.cfg.Protection.LeaseDuration), Instance: pl.Instance}
	if pl.Retry {
		l, _ = e.prot.records.PendingLift(pl.BrokerID)
	} else {
		sctx, cancel := context.WithTimeout(ctx, max(e.cfg.Protection.LeaseDuration/3, e.cfg.Protection.RecordTimeout))
		err := e.admin.StoreLift(sctx, l)
		cancel()
		if err != nil {
			return fmt.Errorf("record the lift of broker %d: %w", pl.BrokerID, err)
		}
		if e.prot.records != nil {
			e.prot.records.Lifts[pl.BrokerID] = l
		}
	}
	rel, err := e.release(ctx, pl.Release, pl.ReleaseQuota, pl.ReleaseConfigs)
	err = errors.Join(err, e.liftPeerCordons(ctx, pl, l.ID))
	e.logger.Warn("write protection of another agent lifted", "broker_id", pl.BrokerID, "reason", pl.Kind, "topics", pl.Topics,
		"acls_deleted", len(rel.ACLs), "acls_kept", rel.Kept, "quota_removed", rel.QuotaRemoved,
		"configs_restored", len(rel.Configs), "configs_kept", rel.ConfigsKept, "lift_id", l.ID, "dry_run", false)
	e.unprotected(rel, band, pl.Kind, 0)
	if err != nil {
		return fmt.Errorf("lift broker %d: %w", pl.BrokerID, err)
	}
	return nil
}

func liftReason(kind string, lease time.Duration) string {
	if kind == LiftBrokerGone {
		return fmt.Sprintf("broker missing from the cluster's metadata for %s", lease)
	}
	return fmt.Sprintf("lease not renewed for %s", lease)
}

// unprotected logs and counts what a release deleted, one line per topic.
func (e *Enforcer) unprotected(rel ledger.Released, band, reason string, quota int64) {
	byT := map[string][]ACL{}
	for _, a := range rel.ACLs {
		byT[a.Topic] = append(byT[a.Topic], a)
	}
	for _, tp := range byTopic(byT) {
		e.protectionAction(actionUnprotect, tp, why{band, reason}, ResultOK, nil)
	}
	if rel.QuotaRemoved {
		e.quotaAction(actionUnprotect, quota, band, ResultOK, nil)
	}
	restoreBand := e.policy.Profile.lowestPurgeBand()
	for _, c := range rel.Configs {
		restored := ConfigChange{Topic: c.Topic, Key: c.Key, Value: c.Value, From: c.From, Wanted: c.Wanted}
		e.configAction(actionRestoreLocalRetention, restored, restoreBand, nil, "reason", cmp.Or(reason, "usage_below_band"))
	}
	for _, c := range rel.ConfigsChanged {
		e.m.operatorChanged.Inc()
		e.logger.Warn("local retention changed by an operator: not restored, the value is left as it is",
			"topic", c.Topic, "key", c.Key, "value", ledger.ShowValue(c.Value), "guard_value", ledger.ShowValue(c.From))
	}
}

// bandOf is the band a log dir was in at the last pass.
func (e *Enforcer) bandOf(logDir string) string { return e.bands[logDir] }

// configAction logs and counts one change of a tiered topic's local
// retention: lowered at WARN, restored at INFO, failed at ERROR.
func (e *Enforcer) configAction(action Action, c ConfigChange, band string, err error, attrs ...any) {
	res := actionResult(err)
	if e.dryRun {
		res = ResultDryRun
	}
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	attrs = append([]any{"action", action, "topic", c.Topic, "key", c.Key, "value", ledger.ShowValue(c.Value), "from", ledger.ShowValue(c.From),
		"band", band, "dry_run", e.dryRun}, attrs...)
	if c.LogDir != "" {
		// bytes: this broker's log dir only; the value is the topic's, so
		// every replica on every broker drops its uploaded local copies.
		attrs = append(attrs, c.scopeAttrs()...)
	}
	if c.Wanted != nil {
		attrs = append(attrs, "operator_value", ledger.ShowValue(c.Wanted))
	}
	switch {
	case errors.Is(err, ErrConfigRefused):
		e.logger.Error("local retention change refused by Kafka: the value in place stays", append(attrs, "err", err)...)
	case err != nil:
		e.logger.Error("local retention change failed", append(attrs, "err", err)...)
	case c.Wanted != nil:
		e.logger.Warn("local retention restored to what Kafka accepts: it refused the operator's value", attrs...)
	case action == actionLowerLocalRetention && e.dryRun:
		e.logger.Info("would lower local retention", attrs...)
	case action == actionLowerLocalRetention:
		e.logger.Warn("local retention lowered", attrs...)
	case e.dryRun:
		e.logger.Info("would restore local retention", attrs...)
	default:
		e.logger.Info("local retention restored", attrs...)
	}
}

// reportWouldProtect logs and counts observe mode's plan, once per change
// (the virtual record remembers it).
func (e *Enforcer) reportWouldProtect(pp ProtectionPlan, band string) {
	for _, tp := range pp.Create {
		e.protectionAction(actionProtect, tp, why{band: band}, ResultDryRun, nil)
	}
	for _, tp := range pp.Release {
		e.protectionAction(actionUnprotect, tp, why{band: band}, ResultDryRun, nil)
	}
	if pp.SetQuota > 0 {
		e.quotaAction(actionProtect, pp.SetQuota, band, ResultDryRun, nil)
	}
	if pp.ReleaseQuota > 0 {
		e.quotaAction(actionUnprotect, 0, band, ResultDryRun, nil)
	}
	for _, c := range pp.SetConfigs {
		e.configAction(actionLowerLocalRetention, c, e.bandOf(c.LogDir), nil)
	}
	for _, c := range pp.ReleaseConfigs {
		e.configAction(actionRestoreLocalRetention, ConfigChange{Topic: c.Topic, Key: c.Key, Value: c.Orig, From: strPtr(c.Value)},
			e.policy.Profile.lowestPurgeBand(), nil)
	}
	e.reportWouldCordon(pp)
	if pp.Write {
		e.prot.virtual = pp.Record
	}
}

// why is the band a protection change happened in and its reason (empty:
// disk usage).
type why struct{ band, reason string }

func (e *Enforcer) protectionAction(action Action, tp TopicProtection, w why, res ActionResult, err error) {
	e.m.actions.WithLabelValues(string(action), string(res), w.band).Inc()
	acls := make([]string, 0, len(tp.ACLs))
	for _, a := range tp.ACLs {
		acls = append(acls, a.Permission+" "+a.Operation+" "+a.Principal)
	}
	e.logChange(action, err, "strategy", StrategyACL, "topic", tp.Topic, "acls", acls, "band", w.band, "reason", cmp.Or(w.reason, "disk_usage"), "dry_run", e.dryRun,
		eventAttr(ProtectionChange{On: action == actionProtect, DryRun: e.dryRun, Strategy: StrategyACL, Topic: tp.Topic, ACLs: tp.ACLs, Err: err}))
}

func (e *Enforcer) quotaAction(action Action, rate int64, band string, res ActionResult, err error) {
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	e.logChange(action, err, "strategy", StrategyQuota, "entity", DefaultClientEntity,
		"producer_byte_rate", rate, "band", band, "reason", "disk_usage", "dry_run", e.dryRun,
		eventAttr(ProtectionChange{On: action == actionProtect, DryRun: e.dryRun, Strategy: StrategyQuota, ProducerByteRate: rate, Err: err}))
}

// logChange logs one protection change: on at WARN, off at INFO, failed
// at ERROR.
func (e *Enforcer) logChange(action Action, err error, attrs ...any) {
	attrs = append([]any{"action", action}, attrs...)
	switch {
	case err != nil:
		e.logger.Error("write protection change failed", append(attrs, "err", err)...)
	case action == actionProtect:
		e.logger.Warn("write protection on", attrs...)
	default:
		e.logger.Info("write protection off", attrs...)
	}
}

// reportProtection sets the protection gauges from what this pass read
// (spec R8.2: present on the cluster, not intended) and logs a change of
// the problems. Without a protection read the gauges keep their values.
func (e *Enforcer) reportProtection(o Observed, goals []DirGoal, pp ProtectionPlan, problems map[ProtectionError]bool) {
	po := o.Protection
	if po == nil {
		return
	}
	present := make(map[ACL]bool, len(po.ACLs))
	for _, a := range po.ACLs {
		present[ledger.NormACL(a)] = true
	}
	me := po.Records.Agents[po.BrokerID]
	quotaMine := max(me.Quota(), po.UnrecordedQuota)
	quotaInPlace := (quotaMine > 0 && po.QuotaRead && po.DefaultProducerByteRate == quotaMine) || pp.OperatorQuotaInPlace
	wantAny := e.reportDirGauges(o, goals, topicsInPlace(po, pp, present), quotaInPlace)
	e.protectionProblems(o, pp, problems, wantAny, quotaInPlace)
	e.reportClusterProtection(o, present)
}

// topicsInPlace returns the topics with a binding of this agent's in
// place: recorded, set unrecorded, or an operator's identical to a wanted
// one (spec R8.6: protection in place, though never the guard's to lift).
func topicsInPlace(po *ProtectionObserved, pp ProtectionPlan, present map[ACL]bool) map[string]bool {
	mineByTopic := map[string]bool{}
	po.Records.Agents[po.BrokerID].Bindings(nil, func(a ACL) {
		if present[a] {
			mineByTopic[a.Topic] = true
		}
	})
	for _, a := range po.Unrecorded {
		if present[ledger.NormACL(a)] {
			mineByTopic[a.Topic] = true
		}
	}
	for _, a := range pp.OperatorOwned {
		if present[a] {
			mineByTopic[a.Topic] = true
		}
	}
	return mineByTopic
}

// reportDirGauges sets each log dir's active and wanted gauges and
// reports whether any dir wants protection.
func (e *Enforcer) reportDirGauges(o Observed, goals []DirGoal, mineByTopic map[string]bool, quotaInPlace bool) (wantAny bool) {
	po := o.Protection
	strategy := e.cfg.Protection.Strategy
	myDirs := dirSet(po.Records.Agents[po.BrokerID].LogDirs)
	for _, g := range goals {
		active := false
		if ld := dirOf(o.Snapshot, g.LogDir); ld != nil {
			for _, p := range ld.Partitions {
				if mineByTopic[p.Topic] {
					active = true
					break
				}
			}
		}
		active = active || (quotaInPlace && myDirs[g.LogDir])
		want := g.Protect && po.Enforcing
		wantAny = wantAny || want
		e.m.prot.active.WithLabelValues(g.LogDir, strategy).Set(gauge(active))
		e.m.prot.wanted.WithLabelValues(g.LogDir, strategy).Set(gauge(want))
	}
	return wantAny
}

// protectionProblems adds this pass's protection problems to problems,
// sets their gauges and logs a change.
func (e *Enforcer) protectionProblems(o Observed, pp ProtectionPlan, problems map[ProtectionError]bool, wantAny, quotaInPlace bool) {
	po := o.Protection
	me := po.Records.Agents[po.BrokerID]
	if pp.NoAuthorizer || (po.NoAuthorizer && (wantAny || len(me.ACLTopics()) > 0)) {
		problems[ErrorNoAuthorizer] = true
	}
	// Wanted but not read back: a pass to set it is allowed for (the next
	// one reads it back), an interval more is a problem.
	missing := len(pp.Create) > 0 || (pp.SetQuota > 0) || (po.Enforcing && po.Strategy == StrategyQuota && pp.Record.Quota() > 0 && !quotaInPlace)
	switch {
	case !missing || problems[ErrorNoAuthorizer] || pp.OperatorQuota:
		e.prot.missingSince = time.Time{}
	case e.prot.missingSince.IsZero():
		e.prot.missingSince = o.Now
	case o.Now.Sub(e.prot.missingSince) >= e.cfg.Interval:
		problems[ErrorNotInPlace] = true
	}
	problems[ErrorOperatorQuota] = problems[ErrorOperatorQuota] || pp.OperatorQuota
	problems[ErrorExemptionImpossible] = problems[ErrorExemptionImpossible] || len(pp.Impossible) > 0
	e.m.prot.setErrors(problems)
	e.logProblems(problems, pp)
}

// reportClusterProtection sets the per-agent gauges from every agent's
// record, the lowered-configs gauge and the record's encoded size.
func (e *Enforcer) reportClusterProtection(o Observed, present map[ACL]bool) {
	po := o.Protection
	view := map[int32]clusterEntry{}
	for id, r := range po.Records.Agents {
		v := clusterEntry{renewed: -1, topics: len(po.Records.LiveTopics(id))}
		r.Bindings(func(t string) bool { return po.Records.Live(id, t) }, func(a ACL) { v.inPlace = v.inPlace || present[a] })
		if q := r.Quota(); q > 0 && po.Records.Live(id, "") && po.QuotaRead && po.DefaultProducerByteRate == q {
			v.inPlace = true
		}
		if r.Claims() && !r.Renewed.IsZero() {
			v.renewed = max(o.Now.Sub(r.Renewed).Seconds(), 0)
			v.leaseSec = r.Lease().Seconds()
		}
		view[id] = v
	}
	e.m.prot.setCluster(view)
	e.m.lowered.Set(float64(len(e.clusterRecord().ConfigClaims())))
	if u := e.clusterRecord().Updated; !u.Equal(e.prot.sizedAt) {
		if data, err := ledger.EncodeRecord(e.clusterRecord()); err == nil {
			e.m.prot.recordBytes.Set(float64(len(data)))
		}
		e.prot.sizedAt = u
	}
}

// reportNoProtection sets the gauges for a pass that did not observe
// protection because nothing is claimed or wanted anywhere (the records
// say so): nothing is in place that this agent owns, nothing is wanted,
// no problem.
func (e *Enforcer) reportNoProtection(goals []DirGoal) {
	strategy := e.cfg.Protection.Strategy
	for _, g := range goals {
		e.m.prot.active.WithLabelValues(g.LogDir, strategy).Set(0)
		e.m.prot.wanted.WithLabelValues(g.LogDir, strategy).Set(0)
	}
	none := map[ProtectionError]bool{}
	e.m.prot.setErrors(none)
	e.m.lowered.Set(0)
	e.logProblems(none, ProtectionPlan{})
	e.prot.missingSince = time.Time{}
	view := map[int32]clusterEntry{}
	for id := range e.prot.records.Agents {
		view[id] = clusterEntry{renewed: -1}
	}
	e.m.prot.setCluster(view)
}

// logProblems logs the protection problems when they change.
func (e *Enforcer) logProblems(problems map[ProtectionError]bool, pp ProtectionPlan) {
	var now []ProtectionError
	for _, r := range protectionErrors() {
		if problems[r] {
			now = append(now, r)
		}
	}
	var before []ProtectionError
	for _, r := range protectionErrors() {
		if e.prot.errs[r] {
			before = append(before, r)
		}
	}
	e.prot.errs = maps.Clone(problems)
	if slices.Equal(now, before) {
		return
	}
	switch {
	case problems[ErrorNoAuthorizer] && !slices.Contains(before, ErrorNoAuthorizer):
		e.logger.Error("write protection impossible", "reason", ErrorNoAuthorizer, "err", ErrNoAuthorizer.Error())
	case problems[ErrorOperatorQuota] && !slices.Contains(before, ErrorOperatorQuota):
		e.logger.Error("write protection impossible", "reason", ErrorOperatorQuota,
			"err", "an operator's default client quota is in place; the guard never changes it")
	}
	if len(pp.Impossible) > 0 && !slices.Contains(before, ErrorExemptionImpossible) {
		e.logger.Warn("exempt principals denied too: an operator ACL allows User:* to write these topics",
			"reason", ErrorExemptionImpossible, "topics", len(pp.Impossible), "first", pp.Impossible[:min(len(pp.Impossible), 10)])
	}
	if len(now) == 0 {
		e.logger.Info("write protection problems cleared", "before", before)
	} else {
		e.logger.Warn("write protection problems", "reasons", now)
	}
}

func dirOf(s *agent.Snapshot, path string) *agent.LogDir {
	for i := range s.LogDirs {
		if s.LogDirs[i].Path == path {
			return &s.LogDirs[i]
		}
	}
	return nil
}
