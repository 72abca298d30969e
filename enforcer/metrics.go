package enforcer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// ActionResult is how an action ended: the actions_total metric's result
// label.
type ActionResult string

// Action results.
const (
	ResultOK     ActionResult = "ok"
	ResultError  ActionResult = "error"
	ResultDryRun ActionResult = "dry_run" // observe mode: planned, logged and counted, not performed
	// ResultRefused: Kafka refused a topic config value (ErrConfigRefused:
	// INVALID_CONFIG, POLICY_VIOLATION); the value in place did not change.
	ResultRefused ActionResult = "refused"
)

// actionResult is ResultError for a failed action, else ResultOK.
func actionResult(err error) ActionResult {
	if errors.Is(err, ErrConfigRefused) {
		return ResultRefused
	}
	if err != nil {
		return ResultError
	}
	return ResultOK
}

// ReconcileResult is how a pass ended: the reconciles_total metric's
// result label.
type ReconcileResult string

// Reconcile results.
const (
	ReconcileOK ReconcileResult = "ok"
	// ReconcileBlocked: destructive actions were held back (a stale
	// snapshot, or a freeing goal or a topic held back); enforcer_blocked
	// says why.
	ReconcileBlocked ReconcileResult = "blocked"
	// ReconcileError: a read or an action failed (this wins over blocked).
	ReconcileError ReconcileResult = "error"
)

// Protection changes, in the actions_total metric's action label beside
// the freeing actions of the bands.
const (
	actionProtect   = ActionProtect
	actionUnprotect = Action("unprotect")
)

// Tiered topics' local retention changes (spec R7.4), in the same label.
const (
	actionLowerLocalRetention   = Action("lower_local_retention")
	actionRestoreLocalRetention = Action("restore_local_retention")
)

type metrics struct {
	enabled        prometheus.Gauge
	band           *prometheus.GaugeVec
	actions        *prometheus.CounterVec
	actionBytes    *prometheus.CounterVec
	unexpiredBytes *prometheus.CounterVec
	reconciles     *prometheus.CounterVec
	duration       prometheus.Histogram
	blocked        *prometheus.GaugeVec
	// Tiered topics (spec R7.4): topics whose local retention this agent
	// has lowered, and claims dropped because an operator changed the
	// value.
	lowered         prometheus.Gauge
	operatorChanged prometheus.Counter
	// ev: the evidence gates' metrics (evidence_metrics.go); prot: write
	// protection's (protect_metrics.go).
	ev   *evidenceMetrics
	prot *protectionMetrics
	// cordon: the log dir cordons' (cordon_apply.go).
	cordon *cordonMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "kafka_disk_guard"
	m := &metrics{
		enabled: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "enforcement_enabled",
			Help: "1 when enforcing, 0 in observe (dry-run) mode."}),
		band: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "band",
			Help: "1 for the band the log dir is in now."}, []string{"log_dir", "band"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "actions_total",
			Help: "Enforcer actions planned or performed, by action, result (ok, error, dry_run) and band."}, []string{"action", "result", "band"}),
		actionBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "action_bytes_total",
			Help: "Bytes freed (or, in dry run, that would be freed) by deletions and purges."}, []string{"action", "band"}),
		unexpiredBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "unexpired_deleted_bytes_total",
			Help: "Bytes of data not yet past retention that a purge deleted (data loss by design)."}, []string{"band"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "reconciles_total",
			Help: "Reconcile passes by result (ok, error, blocked)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "reconcile_duration_seconds",
			Help: "Reconcile pass duration.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "enforcer_blocked",
			Help: "1 when destructive actions are held back, by reason."}, []string{"reason"}),
		lowered: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "local_retention_lowered_topics",
			Help: "Tiered topics whose local.retention.bytes this agent has lowered and not yet restored (its ownership record)."}),
		operatorChanged: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "local_retention_operator_changed_total",
			Help: "Lowered local retention the guard left alone because an operator changed the value after the guard set it."}),
	}
	for _, c := range []prometheus.Collector{m.enabled, m.band, m.actions, m.actionBytes, m.unexpiredBytes, m.reconciles, m.duration, m.blocked,
		m.lowered, m.operatorChanged} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range blockReasons() {
		m.blocked.WithLabelValues(string(r)).Set(0)
	}
	for _, r := range []ReconcileResult{ReconcileOK, ReconcileError, ReconcileBlocked} {
		m.reconciles.WithLabelValues(string(r))
	}
	var err error
	if m.ev, err = newEvidenceMetrics(reg); err != nil {
		return nil, err
	}
	if m.prot, err = newProtectionMetrics(reg); err != nil {
		return nil, err
	}
	if m.cordon, err = newCordonMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// initActionSeries creates, at zero, the action counters' series for every
// action the profile's bands can take, with every result: a dashboard or
// an increase() then shows 0 from the first scrape instead of "No data"
// until the first action. Label values follow apply: deletions carry the
// band the log dir is in and the action of its freeing band; protection
// changes carry the (lowest) protect band.
func (m *metrics) initActionSeries(p Profile) {
	results := []ActionResult{ResultOK, ResultError, ResultDryRun}
	pi := p.protectIndex()
	for i, b := range p.Bands {
		var act Action
		if fi := p.freeingBand(i); fi >= 0 {
			act = p.Bands[fi].Action
		} else if b.Action == ActionScheduled {
			act = ActionScheduled
		}
		if act != "" {
			for _, r := range results {
				m.actions.WithLabelValues(string(act), string(r), b.Name)
			}
			m.actionBytes.WithLabelValues(string(act), b.Name)
			if act == ActionPurge || act == ActionPurgeFraction {
				m.unexpiredBytes.WithLabelValues(b.Name)
				for _, r := range results {
					m.actions.WithLabelValues(string(actionLowerLocalRetention), string(r), b.Name)
				}
			}
		}
		if b.Name == p.lowestPurgeBand() {
			for _, r := range results {
				m.actions.WithLabelValues(string(actionRestoreLocalRetention), string(r), b.Name)
			}
		}
		if i == 1 { // the default cordon bound's band (cordon.go)
			for _, r := range results {
				m.actions.WithLabelValues(string(actionCordon), string(r), b.Name)
				m.actions.WithLabelValues(string(actionUncordon), string(r), b.Name)
			}
		}
		if i == pi {
			for _, r := range results {
				m.actions.WithLabelValues(string(actionProtect), string(r), b.Name)
				m.actions.WithLabelValues(string(actionUnprotect), string(r), b.Name)
			}
		}
	}
}
