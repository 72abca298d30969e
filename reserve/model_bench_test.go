package reserve

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bigCluster is 10,000 topics of 10 partitions (100,000 partitions) on 6
// brokers, replication factor 3.
func bigCluster() ClusterInfo {
	info := ClusterInfo{BrokerConfig: map[string]string{"log.segment.bytes": "1073741824", "default.replication.factor": "3", "num.partitions": "6"}}
	for id := int32(1); id <= 6; id++ {
		info.Brokers = append(info.Brokers, BrokerInfo{ID: id, LogDirs: []LogDirInfo{{Path: "/data", TotalBytes: 1 << 50, ReplicaBytes: map[TopicPartition]int64{}}}})
	}
	for i := range 10_000 {
		t := TopicInfo{Name: fmt.Sprintf("topic-%05d", i), Configs: map[string]string{"retention.bytes": "1073741824", "segment.bytes": "268435456"}}
		for p := range int32(10) {
			r := int32(i+int(p)) % 6
			t.Partitions = append(t.Partitions, PartitionInfo{ID: p, Replicas: []int32{r + 1, (r+1)%6 + 1, (r+2)%6 + 1}})
		}
		info.Topics = append(info.Topics, t)
	}
	return info
}

// BenchmarkCheck measures one admission check through the HTTP handler
// (JSON in and out) against a model of 10,000 topics and 100,000
// partitions, and reports the p50 and p99 latency. Goal: p99 <= 10 ms.
//
//	go test -run '^$' -bench Check -benchtime 5000x ./reserve/
func BenchmarkCheck(b *testing.B) {
	reg := prometheus.NewRegistry()
	src := &fakeSource{info: bigCluster()}
	m, err := NewModel(Config{}, slog.New(slog.DiscardHandler), reg, src, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Refresh(b.Context()); err != nil {
		b.Fatal(err)
	}
	h, err := NewHandler(Config{}, slog.New(slog.DiscardHandler), reg, m)
	if err != nil {
		b.Fatal(err)
	}
	// One topic name: each check replaces the previous one's pending
	// reservation, as retries do; a real model drops them at each read.
	body := `{"operation":"create_topic","topic":"new","partitions":12,"replication_factor":3,"configs":{"retention.bytes":"1073741824"}}`
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("POST", "/api/v1/reserve/check", strings.NewReader(body))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		lat = append(lat, time.Since(start))
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkModelRefresh measures turning the admin API's answer for
// 10,000 topics / 100,000 partitions into the model (the reads themselves
// are Kafka's time).
func BenchmarkModelRefresh(b *testing.B) {
	info := bigCluster()
	b.ResetTimer()
	for range b.N {
		if _, err := NewState(info, Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
