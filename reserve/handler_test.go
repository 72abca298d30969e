package reserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakeSource struct {
	info ClusterInfo
	err  error
}

func (f fakeSource) ReadCluster(context.Context) (ClusterInfo, error) { return f.info, f.err }

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
	src := fakeSource{info: oneBroker(10*gib, existing)}
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
		{"cluster unreachable", "POST", fakeSource{err: errors.New("dial tcp: refused")}, `{"topic":"a"}`, 503, false, []string{`read cluster: dial tcp: refused`}},
		{"storage unknown", "POST", fakeSource{info: oneBroker(-1)}, `{"topic":"a"}`, 503, false, []string{`broker storage unknown`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(Config{}, slog.New(slog.DiscardHandler), tt.src)
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
