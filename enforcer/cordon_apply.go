package enforcer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Cordon changes, in the actions_total metric's action label.
const (
	actionCordon   = Action("cordon")
	actionUncordon = Action("uncordon")
)

// CreateTopicsAnswer is what Kafka 4.4's controller answers CreateTopics
// (and CreatePartitions) when no broker can take a replica because the
// others are fenced or have every log dir cordoned (StripedReplicaPlacer;
// read on a real broker by TestR3_8KafkaCordonSemantics). With fewer
// usable brokers than the replication factor the message is "The target
// replication factor of N cannot be reached because only M broker(s) are
// registered or some brokers have all their log directories cordoned."
const CreateTopicsAnswer = "INVALID_REPLICATION_FACTOR: Unable to replicate the partition N time(s): All brokers are currently fenced, or have all their log directories cordoned."

// cordonState is what the worker remembers of cordons between passes.
type cordonState struct {
	// seen: claimed entries read back in place; declined: entries an
	// operator uncordoned under the guard's claim in this episode.
	seen, declined map[string]bool
	// lifted: an operator's lift of every claim was acknowledged in this
	// cordon episode.
	lifted bool
	// liftsDone: peer lifts whose cordons were read back gone.
	liftsDone map[string]bool
	// held: the last held reason logged per log dir.
	held map[string]string
	// dirs: the log dirs with series.
	dirs map[string]bool
}

// cordonMetrics are the cordon's metrics (the Cordon section of
// docs/metrics.md).
type cordonMetrics struct {
	cordoned  *prometheus.GaugeVec
	held      *prometheus.GaugeVec
	supported prometheus.Gauge
}

func newCordonMetrics(reg prometheus.Registerer) (*cordonMetrics, error) {
	const ns = "kafka_disk_guard"
	m := &cordonMetrics{
		cordoned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "log_dir_cordoned",
			Help: "1 while the log dir is in its broker's cordoned.log.dirs (KIP-1066), as read back, by owner: guard (this agent's claim) or operator (no record claims it)."}, []string{"log_dir", "owner"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "log_dir_cordon_held",
			Help: "1 while the log dir is at the cordon bound and the guard does not cordon it, by reason (last_log_dir: CreateTopics would then refuse every partition needing the broker)."}, []string{"log_dir", "reason"}),
		supported: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "cordon_supported",
			Help: "1 when the cluster's metadata.version takes cordoned.log.dirs (4.3-IV0 or later), 0 when not; as last read (-1: not read)."}),
	}
	for _, c := range []prometheus.Collector{m.cordoned, m.held, m.supported} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.supported.Set(-1)
	return m, nil
}

// cordonRelevant: a log dir is at or above the uncordon bound, so the
// pass observes protection (cordon claims count through the record).
func (e *Enforcer) cordonRelevant(o Observed) bool {
	under := e.policy.cordonFrom(e.cfg.Relief.Cordon) - e.policy.HysteresisPoints/100
	for i := range o.Snapshot.LogDirs {
		if o.Snapshot.LogDirs[i].Usage.Ratio() >= under {
			return true
		}
	}
	// The cordon episode is over: what an operator declined or lifted in
	// it no longer holds.
	e.cordon.declined, e.cordon.lifted = nil, false
	return false
}

// readCordons reads the broker's cordons when they matter this pass: a
// log dir at or above the uncordon bound, or a cordon claim of this
// agent (real or observe mode's). A failed read leaves the claims as they
// are (po.Cordons.Read false) and never fails the pass.
func (e *Enforcer) readCordons(ctx context.Context, o *Observed, po *ProtectionObserved) {
	from := e.policy.cordonFrom(e.cfg.Relief.Cordon)
	under := from - e.policy.HysteresisPoints/100
	relevant := len(e.clusterRecord().AllCordonClaims()) > 0 || len(e.prot.virtual.AllCordonClaims()) > 0
	episode := false
	for i := range o.Snapshot.LogDirs {
		episode = episode || o.Snapshot.LogDirs[i].Usage.Ratio() >= under
	}
	if !episode {
		e.cordon.declined, e.cordon.lifted = nil, false
	}
	if !relevant && !episode || math.IsInf(from, 1) && !relevant {
		return
	}
	co := &CordonObserved{From: from, Under: under, Seen: e.cordon.seen, Declined: e.cordon.declined, Lifted: e.cordon.lifted}
	po.Cordons = co
	ca, ok := e.admin.(CordonAdmin)
	if !ok {
		co.Err = ErrCordonUnsupported
		return
	}
	st, err := ca.LogDirCordons(ctx, e.brokerID)
	if err != nil {
		co.Err = err
		e.logError(fmt.Errorf("cordons left as they are this pass: %w", err))
		return
	}
	co.Read, co.State = true, st
	e.m.cordon.supported.Set(boolFloat(st.Supported()))
	ids := map[string]string{}
	for p, id := range o.Identity {
		if id.Confirmed() {
			ids[p] = id.BrokerPath
		}
	}
	co.Entries = cordonEntries(ids, st.LogDirs)
	if e.cordon.seen == nil {
		e.cordon.seen = map[string]bool{}
	}
	claimed := map[string]bool{}
	for _, c := range e.clusterRecord().CordonClaims() {
		claimed[c.Value] = true
		if slices.Contains(st.Dynamic, c.Value) {
			e.cordon.seen[c.Value] = true
		}
	}
	maps.DeleteFunc(e.cordon.seen, func(d string, _ bool) bool { return !claimed[d] })
	co.Seen = maps.Clone(e.cordon.seen)
}

// applyCordons performs the cordon part of the protection plan, after its
// record is written: a cordon (APPEND) only once the written record
// claims it, an uncordon (SUBTRACT) only once it no longer holds it. In
// observe mode it still uncordons what the agent cordoned earlier (R4.4).
func (e *Enforcer) applyCordons(ctx context.Context, pp ProtectionPlan) error {
	if a := pp.Acked; a != nil && a.Kind == LiftOperator && a.All() {
		e.cordon.lifted = true
	}
	for _, c := range pp.CordonDropped {
		if e.cordon.declined == nil {
			e.cordon.declined = map[string]bool{}
		}
		e.cordon.declined[c.Dir] = true
		e.logger.Warn("log dir uncordoned by an operator: the guard's claim is dropped and the log dir left uncordoned this episode",
			"log_dir", c.LogDir, "entry", c.Dir, "broker_id", e.brokerID)
	}
	ca, ok := e.admin.(CordonAdmin)
	if !ok || (len(pp.Cordon) == 0 && len(pp.Uncordon) == 0) {
		return nil
	}
	rec := e.clusterRecord()
	held := map[string]bool{}
	for _, c := range rec.CordonClaims() {
		held[c.Value] = true
	}
	var errs []error
	if !e.dryRun {
		for _, c := range pp.Cordon {
			if !held[c.Dir] {
				continue // its record is not written yet: a later pass
			}
			err := ca.CordonLogDir(ctx, e.brokerID, c.Dir)
			e.cordonAction(actionCordon, c, err)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, c := range pp.Uncordon {
		if held[c.Dir] {
			continue // still held by the record on the cluster
		}
		err := ca.UncordonLogDir(ctx, e.brokerID, c.Dir)
		e.cordonAction(actionUncordon, c, err)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// liftPeerCordons uncordons an expired peer's claimed log dirs (after its
// lift is written), once per lift once read back gone.
func (e *Enforcer) liftPeerCordons(ctx context.Context, pl PeerLift, liftID string) error {
	ca, ok := e.admin.(CordonAdmin)
	if !ok || len(pl.ReleaseCordons) == 0 || e.cordon.liftsDone[liftID] {
		return nil
	}
	done, err := ledger.ReleaseCordons(ctx, ca, pl.BrokerID, pl.ReleaseCordons)
	for _, d := range done {
		e.logger.Warn("log dir of another agent uncordoned", "broker_id", pl.BrokerID, "entry", d, "reason", pl.Kind)
	}
	if err == nil {
		if e.cordon.liftsDone == nil {
			e.cordon.liftsDone = map[string]bool{}
		}
		e.cordon.liftsDone[liftID] = true
	}
	return err
}

// cordonAction logs and counts one cordon change.
func (e *Enforcer) cordonAction(action Action, c CordonChange, err error) {
	res := actionResult(err)
	if e.dryRun && action == actionCordon {
		res = ResultDryRun
	}
	e.m.actions.WithLabelValues(string(action), string(res), c.Band).Inc()
	attrs := []any{"log_dir", c.LogDir, "entry", c.Dir, "broker_id", e.brokerID, "band", c.Band, "usage", c.Usage, "dry_run", res == ResultDryRun,
		eventAttr(CordonDone{CordonChange: c, Cordon: action == actionCordon, DryRun: res == ResultDryRun, Err: err})}
	switch {
	case err != nil:
		e.logger.Error(string(action)+" failed", append(attrs, "err", err)...)
	case action == actionCordon && res == ResultDryRun:
		e.logger.Info("would cordon log dir: no new partition would be placed in it", attrs...)
	case action == actionCordon:
		e.logger.Info("log dir cordoned: no new partition is placed in it", attrs...)
	default:
		e.logger.Info("log dir uncordoned", attrs...)
	}
}

// reportWouldCordon logs and counts observe mode's cordons (once: the
// virtual record remembers them).
func (e *Enforcer) reportWouldCordon(pp ProtectionPlan) {
	for _, c := range pp.Cordon {
		e.cordonAction(actionCordon, c, nil)
	}
}

// reportCordons sets the cordon series from what the pass read and
// planned, and logs a held reason once per change.
func (e *Enforcer) reportCordons(o Observed, goals []DirGoal, plan Plan) {
	m := e.m.cordon
	po, pp := o.Protection, plan.Protection
	held := pp.CordonHeld
	if e.dryRun && plan.WouldProtect != nil {
		held = plan.WouldProtect.CordonHeld // what enforcing would hold
	}
	if e.cordon.dirs == nil {
		e.cordon.dirs, e.cordon.held = map[string]bool{}, map[string]string{}
	}
	heldNow := map[string]CordonHeld{}
	for _, h := range held {
		heldNow[h.LogDir] = h
	}
	if co := po.Cordons; co != nil && !co.Read && co.Err != nil {
		reason := CordonHeldReadFailed
		if errors.Is(co.Err, ErrCordonUnsupported) {
			reason = CordonHeldUnsupported
		}
		for _, g := range goals {
			if !g.Foreign && g.Usage >= co.From {
				heldNow[g.LogDir] = CordonHeld{LogDir: g.LogDir, Reason: reason}
			}
		}
	}
	claimed := map[string]bool{}
	for _, c := range pp.Record.AllCordonClaims() {
		claimed[c.Value] = true
	}
	now := map[string]bool{}
	for _, g := range goals {
		p := g.LogDir
		now[p] = true
		e.cordon.dirs[p] = true
		guard, operator := 0.0, 0.0
		if co := po.Cordons; co != nil && co.Read {
			if entry, ok := co.Entries[p]; ok && co.State.Cordoned(entry) {
				if claimed[entry] && slices.Contains(co.State.Dynamic, entry) {
					guard = 1
				} else {
					operator = 1
				}
			}
		}
		m.cordoned.WithLabelValues(p, "guard").Set(guard)
		m.cordoned.WithLabelValues(p, "operator").Set(operator)
		h := heldNow[p]
		for _, r := range CordonHeldReasons() {
			m.held.WithLabelValues(p, r).Set(boolFloat(r == h.Reason))
		}
		if h.Reason != e.cordon.held[p] {
			e.cordon.held[p] = h.Reason
			switch h.Reason {
			case "":
			case CordonHeldLastLogDir:
				// The usual state of a broker with one log dir: said once
				// an episode, at INFO (the metric keeps it).
				e.logger.Info("log dir not cordoned: it is the broker's last uncordoned log dir; cordoning it would leave the broker out of every new partition",
					"log_dir", p, "entry", h.Dir, "broker_id", e.brokerID, "create_topics_answer", CreateTopicsAnswer)
			case CordonHeldReadFailed, CordonHeldUnmatched:
				e.logger.Warn("log dir not cordoned", "log_dir", p, "entry", h.Dir, "broker_id", e.brokerID, "reason", h.Reason)
			default:
				// A Kafka that cannot cordon, an operator's own setting or
				// lift: reported (the metric, check-config --online), not
				// a problem of the guard's.
				e.logger.Info("log dir not cordoned", "log_dir", p, "entry", h.Dir, "broker_id", e.brokerID, "reason", h.Reason)
			}
		}
	}
	for p := range e.cordon.dirs {
		if !now[p] {
			m.cordoned.DeletePartialMatch(prometheus.Labels{"log_dir": p})
			m.held.DeletePartialMatch(prometheus.Labels{"log_dir": p})
			delete(e.cordon.dirs, p)
			delete(e.cordon.held, p)
		}
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
