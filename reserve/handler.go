package reserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxRequestBytes bounds a request body.
const maxRequestBytes = 1 << 20

// The broker plugin reports, on each request, how many topics it decided
// without the guard (its on.unreachable fallback) since the guard last
// recorded them; the guard counts them and echoes what it recorded, so the
// plugin subtracts exactly that (a proxy that answers instead of the guard
// records nothing).
const (
	HeaderFallbacksAllow          = "Kafka-Disk-Guard-Fallbacks-Allow"
	HeaderFallbacksRefuse         = "Kafka-Disk-Guard-Fallbacks-Refuse"
	HeaderFallbacksRecordedAllow  = "Kafka-Disk-Guard-Fallbacks-Recorded-Allow"
	HeaderFallbacksRecordedRefuse = "Kafka-Disk-Guard-Fallbacks-Recorded-Refuse"
)

// Check results, the result label of kafka_disk_guard_admission_checks_total.
const (
	ResultAllowed     = "allowed"     // 200, allowed
	ResultRefused     = "refused"     // 200, refused
	ResultInvalid     = "invalid"     // 400/405: a request the guard cannot judge
	ResultUnavailable = "unavailable" // 503: no model, or a model too old
	ResultBusy        = "busy"        // 429: MaxConcurrentChecks reached
	ResultError       = "error"       // 500
)

// errorBody is the JSON answer when no decision could be made.
type errorBody struct {
	Error string `json:"error"`
}

// Checker answers a request; *Model is the guard's.
type Checker interface {
	Check(req Request) (Decision, error)
}

type handler struct {
	logger    *slog.Logger
	checker   Checker
	sem       chan struct{}
	checks    *prometheus.CounterVec
	duration  prometheus.Histogram
	fallbacks *prometheus.CounterVec
}

// NewHandler answers "does this topic or partition increase fit?" over
// HTTP: POST a Request as JSON, get a Decision as JSON. 200 with
// "allowed": true or false is a decision; 400 is a request the guard cannot
// judge; 503 means the cluster model is missing or too old (the caller
// decides, see the plugin's on.unreachable setting); 429 with Retry-After
// when cfg.MaxConcurrentChecks checks are running. It registers the
// admission metrics on reg.
func NewHandler(cfg Config, logger *slog.Logger, reg prometheus.Registerer, checker Checker) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	h := &handler{
		logger: logger.With("component", "admission"), checker: checker,
		sem: make(chan struct{}, cfg.MaxConcurrentChecks),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_disk_guard_admission_checks_total",
			Help: "Admission checks answered, by result (allowed, refused, invalid, unavailable, busy, error).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kafka_disk_guard_admission_check_duration_seconds",
			Help:    "Time to answer an admission check.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_disk_guard_admission_plugin_fallbacks_total",
			Help: "Topics the broker plugin decided without the guard (on.unreachable: allow or refuse), as it reported them.",
		}, []string{"action"}),
	}
	for _, r := range []string{ResultAllowed, ResultRefused, ResultInvalid, ResultUnavailable, ResultBusy, ResultError} {
		h.checks.WithLabelValues(r)
	}
	for _, a := range []string{"allow", "refuse"} {
		h.fallbacks.WithLabelValues(a)
	}
	for _, c := range []prometheus.Collector{h.checks, h.duration, h.fallbacks} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register admission metrics: %w", err)
		}
	}
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h.recordFallbacks(w, r)
	result, status, body := h.serve(r)
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if r.Method != http.MethodPost && status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	writeJSON(w, status, body)
	h.checks.WithLabelValues(result).Inc()
	h.duration.Observe(time.Since(start).Seconds())
}

// serve decides; it returns the result label, the status and the body.
func (h *handler) serve(r *http.Request) (string, int, any) {
	if r.Method != http.MethodPost {
		return ResultInvalid, http.StatusMethodNotAllowed, errorBody{"use POST with a JSON body"}
	}
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	default:
		return ResultBusy, http.StatusTooManyRequests, errorBody{"too many admission checks at once; retry"}
	}
	var req Request
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return ResultInvalid, http.StatusBadRequest, errorBody{"decode request: " + err.Error()}
	}
	if req.Operation == "" {
		req.Operation = CreateTopic
	}
	d, err := h.checker.Check(req)
	switch {
	case errors.Is(err, ErrNoModel) || errors.Is(err, ErrModelStale):
		h.logger.Warn("admission check unanswered", "topic", req.Topic, "err", err)
		return ResultUnavailable, http.StatusServiceUnavailable, errorBody{err.Error()}
	case errors.Is(err, ErrInvalidRequest):
		return ResultInvalid, http.StatusBadRequest, errorBody{err.Error()}
	case err != nil:
		h.logger.Error("admission check failed", "topic", req.Topic, "err", err)
		return ResultError, http.StatusInternalServerError, errorBody{err.Error()}
	}
	h.logger.Info("admission decided", "topic", req.Topic, "operation", string(req.Operation),
		"allowed", d.Allowed, "requested_bytes", d.Cluster.RequestedBytes,
		"percent_before", d.Cluster.PercentBefore, "percent_after", d.Cluster.PercentAfter)
	if d.Allowed {
		return ResultAllowed, http.StatusOK, d
	}
	return ResultRefused, http.StatusOK, d
}

// recordFallbacks counts the plugin's fallback report and echoes it.
func (h *handler) recordFallbacks(w http.ResponseWriter, r *http.Request) {
	for _, f := range []struct{ in, out, action string }{
		{HeaderFallbacksAllow, HeaderFallbacksRecordedAllow, "allow"},
		{HeaderFallbacksRefuse, HeaderFallbacksRecordedRefuse, "refuse"},
	} {
		v := r.Header.Get(f.in)
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n > 1_000_000 {
			continue // not a count: not recorded, the plugin keeps it
		}
		if n > 0 {
			h.fallbacks.WithLabelValues(f.action).Add(float64(n))
			h.logger.Warn("broker plugin decided topics without the guard", "action", f.action, "topics", n)
		}
		w.Header().Set(f.out, strconv.FormatUint(n, 10))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
