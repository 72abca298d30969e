package reserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/retry"
)

// ErrNoModel and ErrModelStale mean the guard cannot answer from what it
// knows: no cluster model yet, or one older than Config.MaxModelAge. The
// HTTP handler answers 503; the guard never guesses.
var (
	ErrNoModel    = errors.New("no cluster model yet")
	ErrModelStale = errors.New("cluster model too old")
)

// pendingGrace: a reservation the guard allowed is counted until a model
// read that started this long after the decision has completed (by then
// the topic exists in it, or its creation failed).
const pendingGrace = 10 * time.Second

// Model is the cluster as admission sees it: topics, replica placement,
// configs and broker storage, read in the background every
// RefreshInterval, so a check costs no request to Kafka. Between reads it
// counts what it allowed since (pending reservations), so two topics
// created a second apart are both counted, and checks are serialised on
// that count.
type Model struct {
	cfg    Config
	logger *slog.Logger
	src    ClusterSource
	now    func() time.Time

	refreshes *prometheus.CounterVec

	state atomic.Pointer[modelState]

	mu      sync.Mutex // serialises Check and guards pending
	pending []pending
}

type modelState struct {
	st State
	at time.Time // when the read started
}

type pending struct {
	op        Operation
	topic     string
	cluster   int64
	perBroker map[int32]int64
	at        time.Time
}

// NewModel returns a model read through src and registers its metrics
// (refreshes, model age) on reg. It performs no I/O: Run or Refresh reads
// the cluster. now is the clock (nil: time.Now).
func NewModel(cfg Config, logger *slog.Logger, reg prometheus.Registerer, src ClusterSource, now func() time.Time) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	m := &Model{cfg: cfg.WithDefaults(), logger: logger.With("component", "admission"), src: src, now: now,
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_disk_guard_admission_model_refreshes_total",
			Help: "Reads of the cluster model admission answers from, by result (ok, error).",
		}, []string{"result"}),
	}
	for _, r := range []string{"ok", "error"} {
		m.refreshes.WithLabelValues(r)
	}
	if err := reg.Register(m.refreshes); err != nil {
		return nil, fmt.Errorf("register admission metrics: %w", err)
	}
	if err := reg.Register(modelAge{m}); err != nil {
		return nil, fmt.Errorf("register admission metrics: %w", err)
	}
	return m, nil
}

var modelAgeDesc = prometheus.NewDesc("kafka_disk_guard_admission_model_age_seconds",
	"Age of the cluster model admission answers from; absent before the first read.", nil, nil)

// modelAge exports the model's age at scrape time (no I/O).
type modelAge struct{ m *Model }

func (a modelAge) Describe(ch chan<- *prometheus.Desc) { ch <- modelAgeDesc }
func (a modelAge) Collect(ch chan<- prometheus.Metric) {
	if age, ok := a.m.Age(); ok {
		ch <- prometheus.MustNewConstMetric(modelAgeDesc, prometheus.GaugeValue, age.Seconds())
	}
}

// Refresh reads the cluster once and replaces the model.
func (m *Model) Refresh(ctx context.Context) error {
	start := m.now()
	info, err := m.src.ReadCluster(ctx)
	if err == nil {
		var st State
		if st, err = NewState(info, m.cfg); err == nil {
			m.state.Store(&modelState{st: st, at: start})
			m.mu.Lock()
			m.pending = slices.DeleteFunc(m.pending, func(p pending) bool {
				_, exists := st.Topics[p.topic]
				return (p.op == CreateTopic && exists) || p.at.Before(start.Add(-pendingGrace))
			})
			m.mu.Unlock()
		}
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.refreshes.WithLabelValues(result).Inc()
	return err
}

// Run reads the cluster now and then every RefreshInterval until ctx ends;
// after a failure it retries sooner (capped exponential backoff). A
// failure is logged when it starts, then every tenth time.
func (m *Model) Run(ctx context.Context) error {
	l := retry.Loop{
		Interval: m.cfg.RefreshInterval,
		// 2s, 4s, ... 64s, never more than RefreshInterval.
		Backoff:   retry.Backoff{First: 2 * time.Second, Max: min(64*time.Second, m.cfg.RefreshInterval)},
		Logger:    m.logger,
		Failed:    "cluster model refresh failed",
		Recovered: "cluster model refresh recovered",
	}
	return l.Run(ctx, m.Refresh)
}

// Age is how old the model is; false before the first read.
func (m *Model) Age() (time.Duration, bool) {
	s := m.state.Load()
	if s == nil {
		return 0, false
	}
	return m.now().Sub(s.at), true
}

// Check answers req from the model and the reservations allowed since it
// was read (see Model). An allowed request is counted at once.
func (m *Model) Check(req Request) (Decision, error) {
	s := m.state.Load()
	if s == nil {
		return Decision{}, ErrNoModel
	}
	now := m.now()
	if age := now.Sub(s.at); age > m.cfg.MaxModelAge {
		return Decision{}, fmt.Errorf("%w: read %s ago (admission.maxModelAge %s)", ErrModelStale, age.Round(time.Second), m.cfg.MaxModelAge)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// A request asked again (a retry) replaces its earlier reservation.
	m.pending = slices.DeleteFunc(m.pending, func(p pending) bool { return p.op == req.Operation && p.topic == req.Topic })
	st := s.st
	if len(m.pending) > 0 {
		st.Brokers = slices.Clone(st.Brokers)
		for _, p := range m.pending {
			st.ReservedBytes += p.cluster
			for i := range st.Brokers {
				st.Brokers[i].ReservedBytes += p.perBroker[st.Brokers[i].ID]
			}
		}
	}
	d, err := Check(st, req, m.cfg)
	if err != nil || !d.Allowed || agent.IsKafkaInternalTopic(req.Topic) || m.cfg.exempt(req.Topic) {
		return d, err
	}
	p := pending{op: req.Operation, topic: req.Topic, cluster: d.Cluster.RequestedBytes, perBroker: map[int32]int64{}, at: now}
	for _, b := range d.Brokers {
		if b.BrokerID != nil {
			p.perBroker[*b.BrokerID] = b.RequestedBytes
		}
	}
	m.pending = append(m.pending, p)
	return d, nil
}
