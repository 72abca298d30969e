package enforcer

import (
	"context"
	"errors"
	"fmt"
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
	if o.Protection != nil && !pp.Empty() && e.fenced(o.Now) {
		// Lease fencing (purge_record.go): the ledger is read before
		// this agent's record is written, within the bound switching
		// protection on waits for its record (R8.4).
		fctx, cancel := context.WithTimeout(ctx, e.cfg.Protection.RecordTimeout)
		held := e.leaseFence(fctx, o.Now)
		cancel()
		if !held && e.prot.standby {
			// Another instance took this broker over since this agent
			// last read the ledger: standing by, it changes nothing,
			// lifts nothing, deletes nothing (spec R8.8).
			return nil
		}
	}
	if o.Protection != nil && e.writtenSince(o.Now) && !pp.Grows() {
		// This broker's record was written since the records this plan
		// used: the next pass plans from it (purge_record.go).
		e.logger.Debug("protection plan not applied: this broker's record was written since the records it was planned with")
	} else if o.Protection != nil {
		problems, err := e.applyProtection(ctx, plan, protectBand)
		if err != nil {
			errs = append(errs, err)
		}
		e.windowActions += len(pp.Create) + len(pp.Release)
		e.reportProtection(o, goals, pp, problems)
		e.reportCordons(o, goals, plan)
	} else if e.prot.records != nil && !o.BrokerUnreachable {
		e.reportNoProtection(goals)
	}

	dels := plan.Deletions
	left := max(e.cfg.MaxActionsPerInterval-e.windowActions, 0)
	if len(dels) > left {
		e.logger.Warn("action budget exhausted, deletions deferred", "planned", len(dels), "allowed", left,
			"max_actions_per_interval", e.cfg.MaxActionsPerInterval)
		dels = dels[:left]
	}
	e.windowActions += len(dels)
	dels = e.recordPurgesAhead(ctx, o.Now, dels)
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
		"unexpired_bytes", d.UnexpiredBytes, "reason", d.Reason, "band", d.Band, "dry_run", e.dryRun,
		eventAttr(DeletionDone{Deletion: d, DryRun: e.dryRun, Err: err})}
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
