package enforcer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Move results (metric label values).
const (
	MoveResultPlanned = "planned" // observe mode: would have started
	MoveResultStarted = "started" // the broker accepted the move
	MoveResultRefused = "refused" // the broker refused it (per-partition error)
	MoveResultFailed  = "failed"  // the request failed
)

// moveMetrics are the mover's series (docs/metrics.md, "Moves within a
// broker").
type moveMetrics struct {
	inProgress    prometheus.Gauge
	movingBytes   *prometheus.GaugeVec // log_dir: -future bytes copied into it
	planned       *prometheus.GaugeVec // log_dir: bytes the last plan moves out of it
	skipped       *prometheus.GaugeVec // log_dir, reason
	moves         *prometheus.CounterVec
	throttle      prometheus.Gauge
	restoreFailed prometheus.Gauge
	dirs          map[string]bool
}

func newMoveMetrics(reg prometheus.Registerer) (*moveMetrics, error) {
	const ns, sub = "kafka_disk_guard", "relief"
	m := &moveMetrics{
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "moves_in_progress",
			Help: "Partitions of the guarded broker being moved between its log dirs now (-future logs the broker reports)."}),
		movingBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "move_incoming_bytes",
			Help: "Bytes of -future logs being copied into the log dir (moves in flight)."}, []string{"log_dir"}),
		planned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "move_planned_bytes",
			Help: "Bytes the last pass planned to move out of the log dir (started when enforcing)."}, []string{"log_dir"}),
		skipped: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "move_skipped",
			Help: "1 when the log dir is in the move band and the last pass planned no move out of it, by reason."}, []string{"log_dir", "reason"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "moves_total",
			Help: "Partition moves within the broker by result (planned: observe mode)."}, []string{"result"}),
		throttle: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "move_throttle_bytes_per_second",
			Help: "The replica.alter.log.dirs.io.max.bytes.per.second the guard holds on its broker (0: none claimed)."}),
		restoreFailed: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "move_throttle_restore_failed",
			Help: "1 while putting the operator's move throttle back failed (retried every pass)."}),
		dirs: map[string]bool{},
	}
	for _, c := range []prometheus.Collector{m.inProgress, m.movingBytes, m.planned, m.skipped, m.moves, m.throttle, m.restoreFailed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register move metrics: %w", err)
		}
	}
	for _, r := range []string{MoveResultPlanned, MoveResultStarted, MoveResultRefused, MoveResultFailed} {
		m.moves.WithLabelValues(r)
	}
	return m, nil
}

// report sets the gauges of a pass; a log dir gone from the snapshot
// loses its series.
func (m *moveMetrics) report(snap *agent.Snapshot, plan MovePlan, inFlight int, incoming map[string]int64) {
	m.inProgress.Set(float64(inFlight))
	now := map[string]bool{}
	for i := range snap.LogDirs {
		now[snap.LogDirs[i].Path] = true
	}
	for d := range m.dirs {
		if !now[d] {
			m.movingBytes.DeleteLabelValues(d)
			m.planned.DeleteLabelValues(d)
			for _, r := range MoveSkipReasons() {
				m.skipped.DeleteLabelValues(d, r)
			}
		}
	}
	m.dirs = now
	planned := map[string]int64{}
	for _, mv := range plan.Moves {
		planned[mv.From] += mv.Bytes
	}
	skipped := map[[2]string]bool{}
	for _, s := range plan.Skipped {
		skipped[[2]string{s.Dir, s.Reason}] = true
	}
	for d := range now {
		m.movingBytes.WithLabelValues(d).Set(float64(incoming[d]))
		m.planned.WithLabelValues(d).Set(float64(planned[d]))
		for _, r := range MoveSkipReasons() {
			v := 0.0
			if skipped[[2]string{d, r}] {
				v = 1
			}
			m.skipped.WithLabelValues(d, r).Set(v)
		}
	}
}

// setClaim shows the throttle the guard holds.
func (m *moveMetrics) setClaim(c ledger.ThrottleClaim, held bool) {
	var v float64
	if held && !c.Releasing {
		fmt.Sscan(c.Value, &v)
	}
	m.throttle.Set(v)
}
