package enforcer

import (
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
// Order (spec R8.4):
//  1. protecting more: the grown record is written with
//     protection.recordTimeout as its deadline, then the bindings or the
//     quota are set whether or not it was written in time; what was set
//     unrecorded is remembered and recorded by a later pass;
//  2. giving claims up: the smaller record is written (acks=all), the
//     records are read to their end, and only the bindings no live record
//     claims then are deleted (ReleaseUnclaimed);
//  3. otherwise the record is written when it changed or its lease is due;
//  4. expired peers: a lift is written, then ReleaseUnclaimed.
func (e *Enforcer) applyProtection(ctx context.Context, plan Plan, band string) (map[ProtectionError]bool, error) {
	problems := map[ProtectionError]bool{}
	if e.dryRun && plan.WouldProtect != nil {
		e.reportWouldProtect(*plan.WouldProtect, band)
	}
	pp := plan.Protection
	if e.dryRun && (len(pp.Release) > 0 || pp.ReleaseQuota > 0) && !e.prot.observeLift {
		e.logger.Info("observe mode: lifting the protection this agent set earlier (lifting blocks nothing and deletes nothing)",
			"topics", len(pp.Release), "quota", pp.ReleaseQuota)
		e.prot.observeLift = true
	}
	var errs []error
	if a := pp.Acked; a != nil {
		e.logger.Warn("protection of this agent lifted", "lift_id", a.ID, "kind", a.Kind, "by", a.By, "at", a.At,
			"topics", a.Topics, "reason", a.Reason, "suppressed_until_episode_ends", a.Kind == LiftOperator && pp.Record.Suppressed != nil)
	}
	me := e.real()
	rec := pp.Record
	wrote, growFailed := false, false
	if pp.Grows() {
		grown := rec
		grown.Owned = unionOwned(me.Owned, rec.Owned)
		grown.LogDirs = unionStrings(me.LogDirs, rec.LogDirs)
		rctx, cancel := context.WithTimeout(ctx, e.cfg.Protection.RecordTimeout)
		err := e.storeRecord(rctx, grown)
		cancel()
		recorded := err == nil
		if err != nil {
			growFailed = true
			problems[ErrorRecordFailed] = true
			e.logger.Warn("protection applied before its record was written", "err", err, "record_timeout", e.cfg.Protection.RecordTimeout.String())
		} else {
			wrote = ledger.SameOwned(grown.Owned, rec.Owned) && slices.Equal(grown.LogDirs, rec.LogDirs)
		}
		if all := flatten(pp.Create); len(all) > 0 {
			err := e.admin.CreateACLs(ctx, all)
			for _, tp := range pp.Create {
				e.protectionAction(actionProtect, tp, band, actionResult(err), err, "")
			}
			if !recorded {
				for _, a := range all {
					e.prot.unrecorded[a] = true
				}
			}
			if err != nil {
				problems[createProblem(err)] = true
				errs = append(errs, fmt.Errorf("create acls: %w", err))
			}
		}
		if pp.SetQuota > 0 {
			err := e.admin.SetDefaultProducerQuota(ctx, pp.SetQuota)
			e.quotaAction(actionProtect, pp.SetQuota, band, actionResult(err), err)
			if !recorded {
				e.prot.unrecordedQuota = pp.SetQuota
			}
			if err != nil {
				problems[ErrorCreateFailed] = true
				errs = append(errs, fmt.Errorf("set default producer quota: %w", err))
			}
		}
	}
	// Lowering tiered topics' local retention (spec R7.4): never before a
	// record claiming the new value, with the operator's value, is
	// written; a value set unrecorded could not be restored.
	if len(pp.SetConfigs) > 0 {
		recorded := !growFailed && pp.Grows()
		if !recorded {
			grown := rec
			grown.Owned = unionOwned(me.Owned, rec.Owned)
			grown.LogDirs = unionStrings(me.LogDirs, rec.LogDirs)
			if err := e.storeRecord(ctx, grown); err != nil {
				problems[ErrorRecordFailed] = true
				errs = append(errs, fmt.Errorf("local retention not lowered: %w", err))
				for _, c := range pp.SetConfigs {
					e.configAction(actionLowerLocalRetention, c, e.bandOf(c.LogDir), err)
				}
			} else {
				recorded = true
				wrote = ledger.SameOwned(grown.Owned, rec.Owned) && slices.Equal(grown.LogDirs, rec.LogDirs)
			}
		}
		if recorded {
			for _, c := range pp.SetConfigs {
				err := e.admin.AlterTopicConfig(ctx, c.Topic, c.Key, c.Value)
				e.configAction(actionLowerLocalRetention, c, e.bandOf(c.LogDir), err)
				e.rememberRefusal(c, err)
				if err != nil {
					problems[ErrorLocalRetentionFailed] = true
					errs = append(errs, fmt.Errorf("lower %s of topic %s: %w", c.Key, c.Topic, err))
				}
			}
		}
	}
	for _, c := range pp.DroppedConfigs {
		if e.prot.operatorTopics == nil {
			e.prot.operatorTopics = map[string]bool{}
		}
		e.prot.operatorTopics[c.Topic] = true
		e.m.operatorChanged.Inc()
		e.logger.Warn("local retention changed by an operator: the guard's claim is dropped and the value left as it is",
			"topic", c.Topic, "key", c.Key, "value", show(c.Value), "guard_value", show(c.From))
	}
	switch {
	case growFailed:
		// The ownership topic just failed the grown record: the smaller
		// one waits for a later pass, and so does anything released.
		errs = append(errs, errors.New("the protection record could not be written: recorded by a later pass"))
	case pp.releases():
		// Two-phase release (spec R8.5): the record marking the claims
		// releasing is written first; they leave it only once a later
		// pass reads them back gone. A release that fails is retried
		// every pass, with a capped backoff.
		if pp.Write || !wrote {
			if err := e.storeRecord(ctx, rec); err != nil {
				// Nothing is deleted before the smaller record is written:
				// protection stays until a later pass can record it.
				problems[ErrorRecordFailed] = true
				errs = append(errs, err)
				break
			}
		}
		// The backoff is timed on the monotonic clock: a jump of the wall
		// clock neither skips it nor stretches it.
		now := e.clock.Now()
		mono := e.monotonic(now)
		if wait := e.prot.releaseRetryAt - mono; e.prot.releaseFailures > 0 && wait > 0 {
			problems[ErrorLiftFailed] = true
			errs = append(errs, fmt.Errorf("release retried in %s (failed %d times)", wait, e.prot.releaseFailures))
			break
		}
		rel, err := e.release(ctx, flatten(pp.Release), pp.ReleaseQuota, pp.ReleaseConfigs)
		e.unprotected(rel, band, "", pp.ReleaseQuota)
		if err != nil {
			problems[ErrorLiftFailed] = true
			e.prot.releaseFailures++
			e.prot.releaseRetryAt = mono + e.releaseBackoff(e.prot.releaseFailures)
			errs = append(errs, err)
		} else {
			e.prot.releaseFailures, e.prot.releaseRetryAt = 0, 0
		}
	case pp.Write && !wrote:
		if err := e.storeRecord(ctx, rec); err != nil {
			problems[ErrorRecordFailed] = true
			errs = append(errs, err)
		}
	}
	for _, pl := range pp.Lifts {
		if err := e.liftPeer(ctx, pl, band); err != nil {
			problems[ErrorLiftFailed] = true
			errs = append(errs, err)
		}
	}
	return problems, errors.Join(errs...)
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
	if err := e.admin.StoreRecord(ctx, r); err != nil {
		e.prot.dirty = true
		return fmt.Errorf("write the protection record: %w", err)
	}
	e.prot.dirty = false
	if e.prot.records == nil {
		rs := ledger.NewRecords()
		e.prot.records = &rs
	}
	r.BrokerID = e.brokerID
	e.prot.records.Agents[e.brokerID] = r
	e.prot.written = &r
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

// release runs ReleaseUnclaimed and keeps the records it read.
func (e *Enforcer) release(ctx context.Context, cands []ACL, quota int64, configs []Owned) (ledger.Released, error) {
	rel, err := ledger.ReleaseUnclaimed(ctx, e.admin, cands, quota, configs)
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
		By: fmt.Sprintf("agent of broker %d", e.brokerID), At: now, Reason: liftReason(pl.Kind, e.cfg.Protection.LeaseDuration)}
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
		e.protectionAction(actionUnprotect, tp, band, ResultOK, nil, reason)
	}
	if rel.QuotaRemoved {
		e.quotaAction(actionUnprotect, quota, band, ResultOK, nil)
	}
	restoreBand := e.policy.Profile.lowestPurgeBand()
	for _, c := range rel.Configs {
		restored := ConfigChange{Topic: c.Topic, Key: c.Key, Value: c.Value, From: c.From, Wanted: c.Wanted}
		e.configAction(actionRestoreLocalRetention, restored, restoreBand, nil, "reason", cmpOr(reason, "usage_below_band"))
	}
	for _, c := range rel.ConfigsChanged {
		e.m.operatorChanged.Inc()
		e.logger.Warn("local retention changed by an operator: not restored, the value is left as it is",
			"topic", c.Topic, "key", c.Key, "value", show(c.Value), "guard_value", show(c.From))
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
	attrs = append([]any{"action", action, "topic", c.Topic, "key", c.Key, "value", show(c.Value), "from", show(c.From),
		"band", band, "dry_run", e.dryRun}, attrs...)
	if c.LogDir != "" {
		// bytes: this broker's log dir only; the value is the topic's, so
		// every replica on every broker drops its uploaded local copies.
		attrs = append(attrs, c.scopeAttrs()...)
	}
	if c.Wanted != nil {
		attrs = append(attrs, "operator_value", show(c.Wanted))
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
		e.protectionAction(actionProtect, tp, band, ResultDryRun, nil, "")
	}
	for _, tp := range pp.Release {
		e.protectionAction(actionUnprotect, tp, band, ResultDryRun, nil, "")
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
	if pp.Write {
		e.prot.virtual = pp.Record
	}
}

func (e *Enforcer) protectionAction(action Action, tp TopicProtection, band string, res ActionResult, err error, reason string) {
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	acls := make([]string, 0, len(tp.ACLs))
	for _, a := range tp.ACLs {
		acls = append(acls, a.Permission+" "+a.Operation+" "+a.Principal)
	}
	if reason == "" {
		reason = "disk_usage"
	}
	e.logChange(action, err, "strategy", StrategyACL, "topic", tp.Topic, "acls", acls, "band", band, "reason", reason, "dry_run", e.dryRun)
}

func (e *Enforcer) quotaAction(action Action, rate int64, band string, res ActionResult, err error) {
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	e.logChange(action, err, "strategy", StrategyQuota, "entity", DefaultClientEntity,
		"producer_byte_rate", rate, "band", band, "reason", "disk_usage", "dry_run", e.dryRun)
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
	strategy := e.cfg.Protection.Strategy
	present := make(map[ACL]bool, len(po.ACLs))
	for _, a := range po.ACLs {
		present[ledger.NormACL(a)] = true
	}
	me := po.Records.Agents[po.BrokerID]
	mineByTopic := map[string]bool{} // topics with a binding of this agent's in place
	me.Bindings(nil, func(a ACL) {
		if present[a] {
			mineByTopic[a.Topic] = true
		}
	})
	for _, a := range po.Unrecorded {
		if present[ledger.NormACL(a)] {
			mineByTopic[a.Topic] = true
		}
	}
	// An operator's binding identical to a wanted one is protection in
	// place (spec R8.6), though never the guard's to lift.
	for _, a := range pp.OperatorOwned {
		if present[a] {
			mineByTopic[a.Topic] = true
		}
	}
	quotaMine := max(me.Quota(), po.UnrecordedQuota)
	quotaInPlace := (quotaMine > 0 && po.QuotaRead && po.DefaultProducerByteRate == quotaMine) || pp.OperatorQuotaInPlace
	myDirs := dirSet(me.LogDirs)
	wantAny := false
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
	e.m.lowered.Set(float64(len(e.real().ConfigClaims())))
	if u := e.real().Updated; !u.Equal(e.prot.sizedAt) {
		if data, err := ledger.EncodeRecord(e.real()); err == nil {
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
