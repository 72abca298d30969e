package enforcer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// identityConfirmed is the log_dir_identity metric's reason label of a
// confirmed log dir.
const identityConfirmed = "confirmed"

// evidenceMetrics are the evidence gates' metrics (spec R7; the Evidence
// section of docs/metrics.md).
type evidenceMetrics struct {
	identity      *prometheus.GaugeVec
	missingRights *prometheus.GaugeVec
	clockJump     prometheus.Gauge
	clockJumps    prometheus.Counter
	purgedWindow  *prometheus.GaugeVec
	purgeChecks   *prometheus.CounterVec
	heldTopics    *prometheus.GaugeVec
}

func newEvidenceMetrics(reg prometheus.Registerer) (*evidenceMetrics, error) {
	const ns = "kafka_disk_guard"
	m := &evidenceMetrics{
		identity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "log_dir_identity",
			Help: "1 for the log dir's identity check result (confirmed, or why not), 0 for the others (spec R7.1)."}, []string{"log_dir", "reason"}),
		missingRights: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "missing_rights",
			Help: "Rights the feature needs that the guard's principal lacks or that could not be determined; 0 when it holds all."}, []string{"feature"}),
		clockJump: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "clock_forward_jump_seconds",
			Help: "Forward jump of the wall clock against the monotonic clock while it holds back deletions by retention time; 0 otherwise (spec R7.5)."}),
		clockJumps: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "clock_forward_jumps_total",
			Help: "Forward jumps of the wall clock detected between reconcile passes."}),
		purgedWindow: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "purged_unexpired_window_bytes",
			Help: "Unexpired bytes purged in the log dir over the window (1h, 24h), as the purge caps count them (spec R7.3)."}, []string{"log_dir", "window"}),
		purgeChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "purge_checks_total",
			Help: "Deletions verified on disk: effective (the filesystem's used bytes fell with them) or ineffective (spec R7.3)."}, []string{"result"}),
		heldTopics: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "held_topics",
			Help: "Topics of a log dir that frees space whose deletions are held back, by reason."}, []string{"log_dir", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.identity, m.missingRights, m.clockJump, m.clockJumps, m.purgedWindow, m.purgeChecks, m.heldTopics} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"effective", "ineffective"} {
		m.purgeChecks.WithLabelValues(r)
	}
	return m, nil
}

// setIdentity sets a log dir's identity series: 1 for reason, 0 for the
// others.
func (m *evidenceMetrics) setIdentity(dir string, reason agent.IdentityReason) {
	cur := string(reason)
	if reason == agent.IdentityConfirmed {
		cur = identityConfirmed
	}
	for _, r := range append([]string{identityConfirmed}, identityReasonLabels()...) {
		v := 0.0
		if r == cur {
			v = 1
		}
		m.identity.WithLabelValues(dir, r).Set(v)
	}
}

func identityReasonLabels() []string {
	var out []string
	for _, r := range agent.IdentityReasons() {
		out = append(out, string(r))
	}
	return out
}

// dropIdentity removes the series of a log dir that is gone.
func (m *evidenceMetrics) dropIdentity(dir string) {
	m.identity.DeletePartialMatch(prometheus.Labels{"log_dir": dir})
	m.heldTopics.DeletePartialMatch(prometheus.Labels{"log_dir": dir})
	m.purgedWindow.DeletePartialMatch(prometheus.Labels{"log_dir": dir})
}

// setRights sets missing_rights for every feature checked.
func (m *evidenceMetrics) setRights(r rights.Report) {
	for _, f := range r.Features {
		m.missingRights.WithLabelValues(string(f)).Set(float64(len(r.Missing(f))))
	}
}

// setHeldTopics sets held_topics of a log dir from its goal.
func (m *evidenceMetrics) setHeldTopics(g DirGoal) {
	counts := map[BlockReason]int{}
	for _, m := range []map[string][]BlockReason{g.HeldTopics, g.TimeHeldTopics} {
		for _, rs := range m {
			for _, r := range rs {
				counts[r]++
			}
		}
	}
	for _, r := range topicReasons() {
		m.heldTopics.WithLabelValues(g.LogDir, string(r)).Set(float64(counts[r]))
	}
}
