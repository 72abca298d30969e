package reserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newHandler builds a model over src, reads it once (a failure leaves no
// model), and a handler over it.
func newHandler(t *testing.T, cfg Config, src ClusterSource, now func() time.Time) (http.Handler, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewModel(cfg, slog.New(slog.DiscardHandler), reg, src, now)
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Refresh(t.Context())
	h, err := NewHandler(cfg, slog.New(slog.DiscardHandler), reg, m)
	if err != nil {
		t.Fatal(err)
	}
	return h, reg
}

func post(t *testing.T, h http.Handler, body string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/reserve/check", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{%s=%q} not found", name, label, value)
	return 0
}

// R5.4: the model counts what it allowed until it is read again, so two
// topics created a second apart are both counted; a new read that holds
// the topic replaces the pending reservation.
func TestModelCountsWhatItAllowed(t *testing.T) {
	src := &fakeSource{info: oneBroker(10 * gib)}
	h, reg := newHandler(t, Config{}, src, nil)
	one := `{"topic":"%s","partitions":1,"configs":{"retention.bytes":"3221225472","segment.bytes":"1073741824","segment.index.bytes":"0"}}` // 4 GiB
	for i, want := range []int{200, 200, 200} {
		res := post(t, h, fmt.Sprintf(one, fmt.Sprintf("t%d", i)), nil)
		var d Decision
		json.NewDecoder(res.Body).Decode(&d)
		if res.StatusCode != want {
			t.Fatalf("t%d: status %d", i, res.StatusCode)
		}
		if d.Allowed != (i < 2) {
			t.Fatalf("t%d: allowed %v, want %v (40%%, 80%%, then 120%%): %s", i, d.Allowed, i < 2, d.Reason)
		}
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_checks_total", "result", ResultAllowed); got != 2 {
		t.Errorf("allowed checks %v", got)
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_checks_total", "result", ResultRefused); got != 1 {
		t.Errorf("refused checks %v", got)
	}
	// Asking again for t0 (a retry) does not count it twice.
	res := post(t, h, fmt.Sprintf(one, "t0"), nil)
	var d Decision
	json.NewDecoder(res.Body).Decode(&d)
	if !d.Allowed || d.Cluster.PercentBefore != 40 {
		t.Fatalf("retry of t0: %+v", d.Cluster)
	}
}

// A model older than admission.maxModelAge answers 503, never a guess.
func TestModelTooOld(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	h, reg := newHandler(t, Config{RefreshInterval: time.Second, MaxModelAge: 10 * time.Second}, &fakeSource{info: oneBroker(10 * gib)}, clock)
	body := `{"topic":"a","partitions":1,"configs":{"retention.bytes":"1048576","segment.bytes":"1048576"}}`
	if res := post(t, h, body, nil); res.StatusCode != 200 {
		t.Fatalf("fresh model: %d", res.StatusCode)
	}
	now = now.Add(11 * time.Second)
	res := post(t, h, body, nil)
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 503 || !strings.Contains(string(raw), "cluster model too old: read 11s ago (admission.maxModelAge 10s)") {
		t.Fatalf("stale model: %d %s", res.StatusCode, raw)
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_checks_total", "result", ResultUnavailable); got != 1 {
		t.Errorf("unavailable checks %v", got)
	}
}

// blockingChecker holds every check until released.
type blockingChecker struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingChecker) Check(Request) (Decision, error) {
	b.entered <- struct{}{}
	<-b.release
	return Decision{Allowed: true}, nil
}

// At most admission.maxConcurrentChecks checks run at once; one more is
// answered 429 with Retry-After at once, never queued.
func TestHandlerBusy(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := blockingChecker{entered: make(chan struct{}, 2), release: make(chan struct{})}
	h, err := NewHandler(Config{MaxConcurrentChecks: 2}, slog.New(slog.DiscardHandler), reg, b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- post(t, h, `{"topic":"a"}`, nil).StatusCode }()
	}
	<-b.entered
	<-b.entered
	res := post(t, h, `{"topic":"a"}`, nil)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("third concurrent check: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	close(b.release)
	for range 2 {
		if s := <-done; s != 200 {
			t.Fatalf("held check: %d", s)
		}
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_checks_total", "result", ResultBusy); got != 1 {
		t.Errorf("busy checks %v", got)
	}
}

// The plugin's fallback report is counted by action and echoed, whatever
// the answer; a value that is not a count is neither.
func TestHandlerRecordsPluginFallbacks(t *testing.T) {
	h, reg := newHandler(t, Config{}, &fakeSource{err: errors.New("down")}, nil) // no model: 503
	res := post(t, h, `{"topic":"a"}`, map[string]string{HeaderFallbacksAllow: "3", HeaderFallbacksRefuse: "0"})
	if res.StatusCode != 503 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if res.Header.Get(HeaderFallbacksRecordedAllow) != "3" || res.Header.Get(HeaderFallbacksRecordedRefuse) != "0" {
		t.Fatalf("echo %v", res.Header)
	}
	res = post(t, h, `{"topic":"a"}`, map[string]string{HeaderFallbacksAllow: "x", HeaderFallbacksRefuse: "2"})
	if res.Header.Get(HeaderFallbacksRecordedAllow) != "" || res.Header.Get(HeaderFallbacksRecordedRefuse) != "2" {
		t.Fatalf("echo %v", res.Header)
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_plugin_fallbacks_total", "action", "allow"); got != 3 {
		t.Errorf("allow fallbacks %v", got)
	}
	if got := counter(t, reg, "kafka_disk_guard_admission_plugin_fallbacks_total", "action", "refuse"); got != 2 {
		t.Errorf("refuse fallbacks %v", got)
	}
}

type fakeSource struct {
	info ClusterInfo
	err  error
}

func (f *fakeSource) ReadCluster(context.Context) (ClusterInfo, error) { return f.info, f.err }

func oneBroker(storage int64, topics ...TopicInfo) ClusterInfo {
	return ClusterInfo{
		BrokerConfig: map[string]string{"log.segment.bytes": "1073741824", "default.replication.factor": "1", "num.partitions": "1"},
		Brokers:      []BrokerInfo{{ID: 1, LogDirs: []LogDirInfo{{Path: "/data", TotalBytes: storage}}}},
		Topics:       topics,
	}
}

// R5.4 over HTTP: JSON in, JSON out.
func TestHandler(t *testing.T) {
	existing := TopicInfo{Name: "events", Configs: map[string]string{"retention.bytes": "1073741824", "segment.bytes": "1073741824", "segment.index.bytes": "0"},
		Partitions: []PartitionInfo{{0, []int32{1}}, {1, []int32{1}}}} // 2 x 2 GiB = 4 GiB
	src := &fakeSource{info: oneBroker(10*gib, existing)}
	tests := []struct {
		name       string
		method     string
		src        ClusterSource
		body       string
		status     int
		allowed    bool
		inResponse []string
	}{
		{"R5.4 fits", "POST", src, `{"operation":"create_topic","topic":"small","partitions":1,"replication_factor":1,"configs":{"retention.bytes":"1073741824","segment.index.bytes":"0"}}`,
			200, true, []string{`"percent_before": 40`, `"percent_after": 60`, `"partition_reserved_bytes": 2147483648`, `"basis": "retention_bytes"`}},
		{"R5.4 operation defaults to create_topic", "POST", src, `{"topic":"small","partitions":1,"configs":{"retention.bytes":"1073741824","segment.index.bytes":"0"}}`,
			200, true, []string{`"operation": "create_topic"`}},
		{"R5.4 too big is refused with the limit named", "POST", src, `{"operation":"create_topic","topic":"huge","partitions":3,"configs":{"retention.bytes":"1073741824","segment.index.bytes":"0"}}`,
			200, false, []string{`"allowed": false`, `reserved storage limit of 90% exceeded`, `current 4.00 GiB = 40%`, `requested 6.00 GiB`, `"percent_after": 100`}},
		{"R5.4 adding partitions past the limit", "POST", src, `{"operation":"create_partitions","topic":"events","partitions":5}`,
			200, false, []string{`add partitions to topic events: 3 partition(s)`, `"new_partitions": 3`}},
		{"R5.4 adding partitions that fit", "POST", src, `{"operation":"create_partitions","topic":"events","partitions":3}`,
			200, true, []string{`"new_partitions": 1`, `"percent_after": 60`}},
		{"unknown field", "POST", src, `{"topic":"a","partition":1}`, 400, false, []string{`unknown field`}},
		{"not JSON", "POST", src, `nope`, 400, false, []string{`decode request`}},
		{"invalid request", "POST", src, `{"operation":"create_partitions","topic":"missing","partitions":2}`, 400, false, []string{`topic missing does not exist`}},
		{"GET", "GET", src, ``, 405, false, []string{`use POST`}},
		{"cluster unreachable: no model", "POST", &fakeSource{err: errors.New("dial tcp: refused")}, `{"topic":"a"}`, 503, false, []string{`no cluster model yet`}},
		{"storage unknown: no model", "POST", &fakeSource{info: oneBroker(-1)}, `{"topic":"a"}`, 503, false, []string{`no cluster model yet`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHandler(t, Config{}, tt.src, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), tt.method, "/api/v1/reserve/check", strings.NewReader(tt.body)))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
			for _, want := range tt.inResponse {
				if !strings.Contains(string(body), want) {
					t.Errorf("response lacks %q:\n%s", want, body)
				}
			}
			if tt.status != 200 {
				var e errorBody
				if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
					t.Fatalf("error body %s: %v", body, err)
				}
				return
			}
			var d Decision
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v", d.Allowed, tt.allowed)
			}
			if len(d.Brokers) != 1 || *d.Brokers[0].BrokerID != 1 {
				t.Fatalf("brokers %+v", d.Brokers)
			}
		})
	}
}
