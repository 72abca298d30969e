//go:build integration

package exporter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Spec R7.3 on a real broker whose log dir is a 64 MiB tmpfs: bytes that
// live partitions do not explain show in
// kafka_disk_guard_log_dir_non_kafka_bytes by kind, and records produced
// to a topic do not: a file written at the log dir's root counts as
// other, a file deleted while still held open (no name, still using the
// disk) as outside_log_dirs until it is closed.
func TestNonKafkaBytesOnRealBroker(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{TmpfsSize: "64m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	const topic = "nonkafka.data"
	b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "-1"})

	// Files at a log dir's root other than checkpoints are measured by full
	// scans (every 5 minutes by default; here every 2 s): until then their
	// bytes count as outside_log_dirs.
	src, err := agent.New(agent.Config{LogDirs: []string{b.LogDir}, ResyncInterval: 2 * time.Second}, slog.New(slog.DiscardHandler),
		fixedConfigs{Defaults: agent.DefaultTopicConfig(), Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	agentDone := make(chan error, 1)
	go func() { agentDone <- src.Run(ctx) }()
	defer func() { cancel(); <-agentDone }()
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
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(ctx) }()
	defer func() { cancel(); <-srvDone }()
	url := "http://" + srv.Addr().String() + "/metrics"

	kinds := []string{"outside_log_dirs", "other", "pending_delete", "future", "stray", "metadata"}
	read := func() map[string]float64 {
		m := metricsOf(t, url)
		out := map[string]float64{}
		for _, k := range kinds {
			v, ok := m[fmt.Sprintf(`kafka_disk_guard_log_dir_non_kafka_bytes{kind=%q,log_dir=%q}`, k, b.LogDir)]
			if !ok {
				return nil
			}
			out[k] = v
		}
		out["used"] = m[fmt.Sprintf(`kafka_disk_guard_log_dir_used_bytes{log_dir=%q}`, b.LogDir)]
		return out
	}
	const mib = 1 << 20
	// settled waits until the figures hold still, then checks want on them.
	settled := func(what string, want func(m map[string]float64) error) map[string]float64 {
		t.Helper()
		var last map[string]float64
		kafkatest.Eventually(t, 30*time.Second, func() error {
			m := read()
			if m == nil {
				return fmt.Errorf("%s: no non-Kafka series yet", what)
			}
			if fmt.Sprint(m) != fmt.Sprint(last) {
				last = m
				return fmt.Errorf("%s: still moving: %v", what, m)
			}
			return want(m)
		})
		t.Logf("%s: %v", what, last)
		return last
	}
	near := func(got, want float64) bool { return got > want-mib/2 && got < want+mib/2 }

	base := settled("idle broker", func(m map[string]float64) error {
		if m["metadata"] <= 0 {
			return fmt.Errorf("no metadata log bytes: %v", m) // a combined node keeps it in its log dir
		}
		if m["outside_log_dirs"] > mib || m["future"] != 0 || m["stray"] != 0 {
			return fmt.Errorf("unexpected non-Kafka bytes on a fresh tmpfs: %v", m)
		}
		return nil
	})

	// 8 MiB of records: used grows, the non-Kafka bytes do not.
	b.Produce(t, topic, 0, 8, 1<<20-200)
	afterProduce := settled("after 8 MiB of records", func(m map[string]float64) error {
		if m["used"] < base["used"]+8*mib {
			return fmt.Errorf("used %v, want 8 MiB more than %v", m["used"], base["used"])
		}
		if !near(m["outside_log_dirs"], base["outside_log_dirs"]) || !near(m["other"], base["other"]) {
			return fmt.Errorf("records counted as non-Kafka bytes: %v, before %v", m, base)
		}
		return nil
	})

	// A heap dump at the log dir's root: other.
	dump := filepath.Join(b.LogDir, "java_pid1.hprof")
	if err := os.WriteFile(dump, bytes.Repeat([]byte{1}, 8*mib), 0o644); err != nil {
		t.Fatal(err)
	}
	settled("a file at the log dir's root", func(m map[string]float64) error {
		if !near(m["other"], afterProduce["other"]+8*mib) || !near(m["outside_log_dirs"], afterProduce["outside_log_dirs"]) {
			return fmt.Errorf("want other 8 MiB up: %v, before %v", m, afterProduce)
		}
		return nil
	})
	if err := os.Remove(dump); err != nil {
		t.Fatal(err)
	}

	// A file deleted while held open: nothing under the log dir names it.
	f, err := os.Create(filepath.Join(b.LogDir, "held-open.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{2}, 8*mib)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	settled("a deleted file held open", func(m map[string]float64) error {
		if !near(m["outside_log_dirs"], afterProduce["outside_log_dirs"]+8*mib) || !near(m["other"], afterProduce["other"]) {
			return fmt.Errorf("want outside_log_dirs 8 MiB up: %v, before %v", m, afterProduce)
		}
		return nil
	})
	f.Close()
	settled("closed", func(m map[string]float64) error {
		if !near(m["outside_log_dirs"], afterProduce["outside_log_dirs"]) {
			return fmt.Errorf("outside_log_dirs did not fall back: %v", m)
		}
		return nil
	})
}
