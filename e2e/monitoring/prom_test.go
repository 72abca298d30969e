//go:build integration

package monitoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// promAPI is the few calls of Prometheus' HTTP API the test makes.
type promAPI struct{ base string }

func (p promAPI) get(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, params, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float() float64 {
	v, _ := s.Value[1].(string)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

type series struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// instant evaluates q now (a vector result).
func (p promAPI) instant(ctx context.Context, q string) ([]sample, error) {
	var out struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	err := p.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &out)
	return out.Result, err
}

// rangeQuery evaluates q over [start, end] every step (a matrix result).
func (p promAPI) rangeQuery(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]series, error) {
	var out struct {
		Result []series `json:"result"`
	}
	err := p.get(ctx, "/api/v1/query_range", url.Values{"query": {q},
		"start": {fmt.Sprint(start.Unix())}, "end": {fmt.Sprint(end.Unix() + 1)},
		"step": {fmt.Sprint(step.Seconds())}}, &out)
	return out.Result, err
}

// labelSets returns the label sets of the series matching match in [start, end].
func (p promAPI) labelSets(ctx context.Context, match string, start, end time.Time) ([]map[string]string, error) {
	var out []map[string]string
	err := p.get(ctx, "/api/v1/series", url.Values{"match[]": {match},
		"start": {fmt.Sprint(start.Unix())}, "end": {fmt.Sprint(end.Unix() + 1)}}, &out)
	return out, err
}

// format is Prometheus' own formatting of a query (how the rules API
// prints loaded expressions).
func (p promAPI) format(ctx context.Context, q string) (string, error) {
	var out string
	err := p.get(ctx, "/api/v1/format_query", url.Values{"query": {q}}, &out)
	return out, err
}

type loadedRule struct {
	Name        string            `json:"name"`
	Query       string            `json:"query"`
	Duration    float64           `json:"duration"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Health      string            `json:"health"`
	LastError   string            `json:"lastError"`
	Type        string            `json:"type"`
}

type loadedGroup struct {
	Name  string       `json:"name"`
	Rules []loadedRule `json:"rules"`
}

func (p promAPI) rules(ctx context.Context) ([]loadedGroup, error) {
	var out struct {
		Groups []loadedGroup `json:"groups"`
	}
	err := p.get(ctx, "/api/v1/rules", url.Values{}, &out)
	return out.Groups, err
}

type activeAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

func (p promAPI) alerts(ctx context.Context) ([]activeAlert, error) {
	var out struct {
		Alerts []activeAlert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", url.Values{}, &out)
	return out.Alerts, err
}

// --- the webhook receiver that Alertmanager notifies ----------------------

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

type notification struct {
	received time.Time
	Receiver string    `json:"receiver"`
	Status   string    `json:"status"`
	Alerts   []amAlert `json:"alerts"`
}

// receiver records Alertmanager's webhook notifications (payload version 4).
type receiver struct {
	mu      sync.Mutex
	notes   []notification
	changed chan struct{}
}

func newReceiver() *receiver { return &receiver{changed: make(chan struct{}, 1)} }

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var n notification
	if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.received = time.Now()
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// received is one alert as the webhook got it, and when.
type received struct {
	at    time.Time
	alert amAlert
}

// find returns the first alert named name with the status ("firing" or
// "resolved") received at or after since.
func (r *receiver) find(name, status string, since time.Time) (received, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.notes {
		if n.received.Before(since) {
			continue
		}
		for _, a := range n.Alerts {
			if a.Labels["alertname"] == name && a.Status == status {
				return received{n.received, a}, true
			}
		}
	}
	return received{}, false
}

// wait blocks until find succeeds, ctx ends or two minutes pass.
func (r *receiver) wait(ctx context.Context, name, status string, since time.Time) (received, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if got, ok := r.find(name, status, since); ok {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return received{}, fmt.Errorf("no %s notification for %s: %w (received: %s)", status, name, ctx.Err(), r.summary())
		case <-r.changed:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// summary lists every alert received, for failure messages.
func (r *receiver) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s string
	for _, n := range r.notes {
		for _, a := range n.Alerts {
			s += fmt.Sprintf("[%s %s %s] ", n.received.Format("15:04:05.000"), a.Labels["alertname"], a.Status)
		}
	}
	return s
}
