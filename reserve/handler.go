package reserve

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// maxRequestBytes bounds a request body.
const maxRequestBytes = 1 << 20

// errorBody is the JSON answer when no decision could be made.
type errorBody struct {
	Error string `json:"error"`
}

// NewHandler answers "does this topic or partition increase fit?" over
// HTTP: POST a Request as JSON, get a Decision as JSON. 200 with
// "allowed": true or false is a decision; 400 is a request the guard cannot
// judge; 503 means the cluster could not be read (the caller decides, see
// the plugin's on.unreachable setting). The cluster is read through src at
// every request, so the answer counts every topic that exists now.
func NewHandler(cfg Config, logger *slog.Logger, src ClusterSource) http.Handler {
	logger = logger.With("component", "reserve")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{"use POST with a JSON body"})
			return
		}
		var req Request
		dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{"decode request: " + err.Error()})
			return
		}
		if req.Operation == "" {
			req.Operation = CreateTopic
		}
		start := time.Now()
		info, err := src.ReadCluster(r.Context())
		if err != nil {
			logger.Warn("cluster read failed", "topic", req.Topic, "err", err)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{"read cluster: " + err.Error()})
			return
		}
		st, err := NewState(info, cfg)
		if err != nil {
			logger.Warn("reserved state failed", "topic", req.Topic, "err", err)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{"reserved state: " + err.Error()})
			return
		}
		d, err := Check(st, req, cfg)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrInvalidRequest) {
				status = http.StatusBadRequest
			}
			writeJSON(w, status, errorBody{err.Error()})
			return
		}
		logger.Info("admission decided", "topic", req.Topic, "operation", string(req.Operation),
			"allowed", d.Allowed, "requested_bytes", d.Cluster.RequestedBytes,
			"percent_before", d.Cluster.PercentBefore, "percent_after", d.Cluster.PercentAfter,
			"duration_seconds", time.Since(start).Seconds())
		writeJSON(w, http.StatusOK, d)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
