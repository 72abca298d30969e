package enforcer

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Reassignment results (metric label values).
const (
	ReassignResultPlanned  = "planned"  // observe mode: would have started
	ReassignResultStarted  = "started"  // Kafka took the move
	ReassignResultFailed   = "failed"   // the throttle or the request failed; the throttle was removed again
	ReassignResultFinished = "finished" // the move is done and the throttle removed
)

// reassignMetrics are the reassigner's series (docs/metrics.md, "Moves
// across brokers").
type reassignMetrics struct {
	inProgress    prometheus.Gauge
	skipped       *prometheus.GaugeVec
	reassignments *prometheus.CounterVec
	throttle      prometheus.Gauge
	restoreFailed prometheus.Gauge
}

func newReassignMetrics(reg prometheus.Registerer) (*reassignMetrics, error) {
	const ns, sub = "kafka_disk_guard", "relief"
	m := &reassignMetrics{
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "reassignments_in_progress",
			Help: "Partitions the agent's own reassignment claim names that Kafka is still reassigning."}),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "reassign_skipped",
			Help: "1 when the broker's log dir is in the move band, no move within the broker relieves it, and the last pass started no reassignment, by reason."}, []string{"reason"}),
		reassignments: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reassignments_total",
			Help: "Replica moves across brokers the agent made, by result (planned: observe mode)."}, []string{"result"}),
		throttle: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "reassign_throttle_bytes_per_second",
			Help: "The replication throttle rate the agent's reassignment claim holds (0: none)."}),
		restoreFailed: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "reassign_throttle_restore_failed",
			Help: "1 while removing the agent's replication throttle failed (retried every pass)."}),
	}
	for _, c := range []prometheus.Collector{m.inProgress, m.skipped, m.reassignments, m.throttle, m.restoreFailed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register reassign metrics: %w", err)
		}
	}
	for _, r := range []string{ReassignResultPlanned, ReassignResultStarted, ReassignResultFailed, ReassignResultFinished} {
		m.reassignments.WithLabelValues(r)
	}
	for _, r := range ReassignSkipReasons() {
		m.skipped.WithLabelValues(r)
	}
	return m, nil
}

// setClaim shows the rate the agent's claim holds.
func (m *reassignMetrics) setClaim(c ledger.ReassignClaim, held bool) {
	v := 0.0
	if held && !c.Releasing {
		for _, e := range c.Entries {
			if e.Key == LeaderThrottleRate {
				v, _ = strconv.ParseFloat(e.Value, 64)
				break
			}
		}
	}
	m.throttle.Set(v)
	if !held {
		m.inProgress.Set(0)
	}
}
