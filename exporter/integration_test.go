//go:build integration

package exporter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

var broker *kafkatest.Broker

// A short retention check and file delete delay, so segments are deleted
// within seconds and .deleted files stay long enough to be seen. The high
// watermark checkpoint is written every 500 ms (Kafka's default is 5 s):
// nothing is eligible above the checkpointed high watermark (spec R1.7),
// and with the default a retention check every 4 s could delete segments
// before the checkpoint let the agent see them eligible.
func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(m, kafkatest.Options{RetentionCheckMs: 4000, FileDeleteDelayMs: 3000,
		Props: []string{"replica.high.watermark.checkpoint.interval.ms=500"}}, &broker))
}

// fixedConfigs is the topic configs the test created the topic with.
type fixedConfigs agent.ConfigSet

func (f fixedConfigs) Current() agent.ConfigSet { return agent.ConfigSet(f) }

// metricsOf scrapes url and returns the sample values by series text.
func metricsOf(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", resp.StatusCode, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsFollowRealBroker: a real broker rolls segments as records are
// produced and deletes them by retention.bytes; the exporter's segment
// metrics go up, the segments show as eligible, then pending deletion, then
// gone (spec R1.2, R1.6, R2).
func TestMetricsFollowRealBroker(t *testing.T) {
	const topic = "exporter.roll-test"
	const segBytes, retBytes = 16384, 65536
	broker.CreateTopic(t, topic, 1, map[string]string{
		"internal.segment.bytes": strconv.Itoa(segBytes),
		"retention.bytes":        strconv.Itoa(retBytes),
		"retention.ms":           "-1",
	})
	tc := agent.DefaultTopicConfig()
	tc.RetentionBytes, tc.RetentionMs, tc.SegmentBytes = retBytes, -1, segBytes
	// The live agent (inotify, re-reads) is the snapshot source, as in production.
	src, err := agent.New(agent.Config{LogDirs: []string{broker.LogDir}}, slog.New(slog.DiscardHandler),
		fixedConfigs{Topics: map[string]agent.TopicConfig{topic: tc}, Defaults: agent.DefaultTopicConfig(), Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	agentDone := make(chan error, 1)
	go func() { agentDone <- src.Run(ctx) }()
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(Config{}, discard(), reg, src); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0"}, discard(), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		if err := <-agentDone; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	url := "http://" + srv.Addr().String() + "/metrics"
	series := func(name, label, value string) string {
		return fmt.Sprintf(`%s{log_dir=%q,%s=%q,topic=%q}`, name, broker.LogDir, label, value, topic)
	}
	segs := func(m map[string]float64, state string) float64 {
		return m[series("kafka_disk_guard_segments", "state", state)]
	}

	// Roll: about 20 KB of records in 16 KiB segments.
	broker.Produce(t, topic, 0, 20, 1000)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		m := metricsOf(t, url)
		if segs(m, "open") != 1 || segs(m, "closed")+segs(m, "eligible") < 1 {
			return fmt.Errorf("open %v closed %v eligible %v, want a rolled segment", segs(m, "open"), segs(m, "closed"), segs(m, "eligible"))
		}
		return nil
	})

	// Past retention.bytes: the agent marks the oldest segments eligible, the
	// broker renames them .deleted at its next retention check, then removes them.
	broker.Produce(t, topic, 0, 200, 1000)
	var sawEligible, sawPending bool
	var peak float64
	kafkatest.Eventually(t, 90*time.Second, func() error {
		m := metricsOf(t, url)
		total := segs(m, "open") + segs(m, "closed") + segs(m, "eligible")
		peak = max(peak, total)
		if segs(m, "eligible") > 0 && m[series("kafka_disk_guard_expired_retained_bytes", "reason", "awaiting_deletion")] > 0 {
			sawEligible = true
		}
		if m[series("kafka_disk_guard_expired_retained_bytes", "reason", "pending_delete")] > 0 {
			sawPending = true
		}
		if !sawEligible || !sawPending {
			return fmt.Errorf("eligible seen %v, pending delete seen %v", sawEligible, sawPending)
		}
		if segs(m, "eligible") != 0 || m[series("kafka_disk_guard_expired_retained_bytes", "reason", "pending_delete")] != 0 {
			return fmt.Errorf("still %v eligible segments, %v bytes pending delete", segs(m, "eligible"), m[series("kafka_disk_guard_expired_retained_bytes", "reason", "pending_delete")])
		}
		if total >= peak {
			return fmt.Errorf("%v segments, peak %v: nothing deleted yet", total, peak)
		}
		return nil
	})
	m := metricsOf(t, url)
	var logBytes, total float64
	for _, st := range []string{"open", "closed", "eligible"} {
		logBytes += m[series("kafka_disk_guard_segment_bytes", "state", st)]
		total += segs(m, st)
	}
	// What the broker keeps: less than retention.bytes plus one segment of
	// .log bytes (R5.1's reasoning), plus each segment's index and snapshot
	// files and block rounding (at most 16 KiB a segment on this broker).
	if logBytes > retBytes+2*segBytes+total*(16<<10) {
		t.Errorf("segment bytes after deletion %v, want about retention.bytes + a segment", logBytes)
	}
	if m[`kafka_disk_guard_log_dir_error{log_dir="`+broker.LogDir+`"}`] != 0 {
		t.Error("log dir error on a healthy broker")
	}
}
