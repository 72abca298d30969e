package enforcer

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// apply performs the plan (or, in observe mode, logs and counts it).
func (e *Enforcer) apply(ctx context.Context, plan Plan, goals []DirGoal, o Observed) error {
	var errs []error
	bandOf := map[string]string{}
	for _, g := range goals {
		bandOf[g.LogDir] = g.Band.Name
	}
	protectBand := e.protectBandName()

	// Budget: actions per Interval. Protection changes go first and are
	// never deferred (they are what keeps the disk from filling, and
	// lifting restores service); deletions use what is left.
	if o.Now.Sub(e.windowStart) >= e.cfg.Interval || o.Now.Before(e.windowStart) {
		e.windowStart, e.windowActions = o.Now, 0
	}
	pp := plan.Protection
	if o.Protection != nil {
		if err := e.applyProtection(ctx, pp, protectBand); err != nil {
			errs = append(errs, err)
		}
		e.windowActions += len(pp.Create) + len(pp.Delete)
	}
	strategy := e.cfg.Protection.Strategy
	mine := e.mine()
	on := dirSet(mine.LogDirs)
	for _, g := range goals {
		v := 0.0
		if on[g.LogDir] && !e.dryRun {
			v = 1
		}
		e.m.protection.WithLabelValues(g.LogDir, strategy).Set(v)
	}

	dels := plan.Deletions
	left := max(e.cfg.MaxActionsPerInterval-e.windowActions, 0)
	if len(dels) > left {
		e.logger.Warn("action budget exhausted, deletions deferred", "planned", len(dels), "allowed", left,
			"max_actions_per_interval", e.cfg.MaxActionsPerInterval)
		dels = dels[:left]
	}
	e.windowActions += len(dels)
	failed, err := e.applyDeletions(ctx, dels)
	if err != nil {
		errs = append(errs, err)
	}
	e.recordDeletions(o, dels, failed)
	return errors.Join(errs...)
}

func (e *Enforcer) protectBandName() string {
	if i := e.policy.Profile.protectIndex(); i >= 0 {
		return e.policy.Profile.Bands[i].Name
	}
	return ""
}

// applyDeletions issues one DeleteRecords per topic, checks each
// partition's result and logs and counts each partition's action. It
// returns the partitions whose deletion failed.
func (e *Enforcer) applyDeletions(ctx context.Context, dels []Deletion) (map[TopicPartition]bool, error) {
	byTopic := map[string][]Deletion{}
	var topics []string
	for _, d := range dels {
		if _, ok := byTopic[d.Topic]; !ok {
			topics = append(topics, d.Topic)
		}
		byTopic[d.Topic] = append(byTopic[d.Topic], d)
	}
	var errs []error
	failed := map[TopicPartition]bool{}
	for _, t := range topics {
		ds := byTopic[t]
		results := map[int32]error{}
		if !e.dryRun {
			offsets := make(map[int32]int64, len(ds))
			for _, d := range ds {
				offsets[d.Partition] = d.Offset
			}
			res, err := e.admin.DeleteRecords(ctx, t, offsets)
			if err != nil {
				for p := range offsets {
					results[p] = err
				}
			} else {
				for p := range offsets {
					r, ok := res[p]
					if !ok {
						r = errors.New("no result for the partition")
					}
					results[p] = r
				}
			}
		}
		for _, d := range ds {
			e.record(d, results[d.Partition])
			if results[d.Partition] != nil {
				failed[TopicPartition{d.Topic, d.Partition}] = true
				errs = append(errs, fmt.Errorf("delete records %s-%d to %d: %w", d.Topic, d.Partition, d.Offset, results[d.Partition]))
			}
		}
	}
	return failed, errors.Join(errs...)
}

// record logs one deletion and counts it.
func (e *Enforcer) record(d Deletion, err error) {
	action := string(d.Action)
	if d.Action == ActionPurgeFraction {
		e.fractionPass[TopicPartition{d.Topic, d.Partition}] = e.clock.Now()
	}
	attrs := []any{"action", action, "log_dir", d.LogDir, "topic", d.Topic, "partition", d.Partition,
		"from_offset", d.FromOffset, "to_offset", d.Offset, "high_watermark", d.HighWatermark, "segments", d.Segments, "bytes", d.Bytes,
		"unexpired_bytes", d.UnexpiredBytes, "reason", d.Reason, "band", d.Band, "dry_run", e.dryRun}
	switch {
	case e.dryRun:
		e.m.actions.WithLabelValues(action, string(ResultDryRun), d.Band).Inc()
		e.m.actionBytes.WithLabelValues(action, d.Band).Add(float64(d.Bytes))
		tp := TopicPartition{d.Topic, d.Partition}
		e.virtualLSO[tp] = max(e.virtualLSO[tp], d.Offset)
		e.logger.Info("would delete records", attrs...)
	case err != nil:
		e.m.actions.WithLabelValues(action, string(ResultError), d.Band).Inc()
		e.logger.Error("delete records failed", append(attrs, "err", err)...)
	default:
		e.m.actions.WithLabelValues(action, string(ResultOK), d.Band).Inc()
		e.m.actionBytes.WithLabelValues(action, d.Band).Add(float64(d.Bytes))
		if d.UnexpiredBytes > 0 {
			e.m.unexpiredBytes.WithLabelValues(d.Band).Add(float64(d.UnexpiredBytes))
			e.logger.Warn("deleted unexpired records", attrs...)
			return
		}
		e.logger.Info("deleted records", attrs...)
	}
}

// applyProtection changes ACLs or quotas. Order keeps the ownership topic
// a superset of what exists: record the claims first, then create; delete
// first, then record the smaller set. A crash in between leaves a record
// claiming a binding that may not exist, which the next pass lifts
// idempotently, never an unrecorded binding.
func (e *Enforcer) applyProtection(ctx context.Context, pp ProtectionPlan, band string) error {
	if pp.OperatorQuota {
		e.logger.Warn("operator default client quota in place, quota protection not applied", "band", band)
	}
	mine := e.mine()
	final := pp.Ownership
	final.Updated = e.clock.Now()
	if e.dryRun {
		for _, tp := range pp.Create {
			e.protectionAction(actionProtect, tp, band, ResultDryRun, nil)
		}
		for _, tp := range pp.Delete {
			e.protectionAction(actionUnprotect, tp, band, ResultDryRun, nil)
		}
		if pp.SetQuota > 0 {
			e.quotaAction(actionProtect, pp.SetQuota, band, ResultDryRun, nil)
		}
		if pp.RemoveQuota {
			e.quotaAction(actionUnprotect, 0, band, ResultDryRun, nil)
		}
		if pp.Record {
			e.setMine(final)
		}
		return nil
	}

	var errs []error
	if len(pp.Create) > 0 || pp.SetQuota > 0 {
		union := final
		union.LogDirs = unionStrings(mine.LogDirs, final.LogDirs)
		union.ACLs = unionACLs(mine.ACLs, final.ACLs)
		union.ProducerByteRate = max(mine.ProducerByteRate, final.ProducerByteRate)
		if !sameOwnership(mine, union) {
			if err := e.admin.StoreOwnership(ctx, union); err != nil {
				return fmt.Errorf("record ownership before protecting: %w", err)
			}
			e.setMine(union)
		}
	}
	var all []ACL
	for _, tp := range pp.Create {
		all = append(all, tp.ACLs...)
	}
	if len(all) > 0 {
		err := e.admin.CreateACLs(ctx, all)
		for _, tp := range pp.Create {
			e.protectionAction(actionProtect, tp, band, actionResult(err), err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("create acls: %w", err))
		}
	}
	if pp.SetQuota > 0 {
		err := e.admin.SetDefaultProducerQuota(ctx, pp.SetQuota)
		e.quotaAction(actionProtect, pp.SetQuota, band, actionResult(err), err)
		if err != nil {
			errs = append(errs, fmt.Errorf("set default producer quota: %w", err))
		}
	}
	var gone []ACL
	for _, tp := range pp.Delete {
		gone = append(gone, tp.ACLs...)
	}
	if len(gone) > 0 {
		err := e.admin.DeleteACLs(ctx, gone)
		for _, tp := range pp.Delete {
			e.protectionAction(actionUnprotect, tp, band, actionResult(err), err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete acls: %w", err))
		}
	}
	if pp.RemoveQuota {
		err := e.admin.RemoveDefaultProducerQuota(ctx)
		e.quotaAction(actionUnprotect, 0, band, actionResult(err), err)
		if err != nil {
			errs = append(errs, fmt.Errorf("remove default producer quota: %w", err))
		}
	}
	if len(errs) == 0 && !sameOwnership(e.mine(), final) {
		if err := e.admin.StoreOwnership(ctx, final); err != nil {
			errs = append(errs, fmt.Errorf("record ownership: %w", err))
		} else {
			e.setMine(final)
		}
	}
	return errors.Join(errs...)
}

func (e *Enforcer) setMine(o Ownership) {
	if e.ownership == nil {
		e.ownership = map[int32]Ownership{}
	}
	o.BrokerID = e.brokerID
	e.ownership[e.brokerID] = o
}

func (e *Enforcer) protectionAction(action Action, tp TopicProtection, band string, res ActionResult, err error) {
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	ops := make([]string, 0, len(tp.ACLs))
	for _, a := range tp.ACLs {
		ops = append(ops, a.Permission+" "+a.Operation)
	}
	attrs := []any{"action", action, "strategy", StrategyACL, "topic", tp.Topic, "principal", AnyPrincipal,
		"acls", ops, "band", band, "reason", "disk_usage", "dry_run", e.dryRun}
	switch {
	case err != nil:
		e.logger.Error("write protection change failed", append(attrs, "err", err)...)
	case action == actionProtect:
		e.logger.Warn("write protection on", attrs...)
	default:
		e.logger.Info("write protection off", attrs...)
	}
}

func (e *Enforcer) quotaAction(action Action, rate int64, band string, res ActionResult, err error) {
	e.m.actions.WithLabelValues(string(action), string(res), band).Inc()
	attrs := []any{"action", action, "strategy", StrategyQuota, "entity", "client-id=<default>",
		"producer_byte_rate", rate, "band", band, "reason", "disk_usage", "dry_run", e.dryRun}
	switch {
	case err != nil:
		e.logger.Error("write protection change failed", append(attrs, "err", err)...)
	case action == actionProtect:
		e.logger.Warn("write protection on", attrs...)
	default:
		e.logger.Info("write protection off", attrs...)
	}
}

func unionStrings(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func unionACLs(a, b []ACL) []ACL {
	seen := map[ACL]bool{}
	var out []ACL
	for _, x := range append(slices.Clone(a), b...) {
		x = normACL(x)
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sortACLs(out)
	return out
}
