//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// `run` against a real broker over SASL/PLAIN as the guard's principal:
// the topic configs come from the broker (they show in the reserved
// bytes), the admission endpoint answers from the cluster's real figures,
// the enforcer observes without being blocked, and a bad password is a
// reported, retried failure rather than a crash.
func TestRunGuardsRealBrokerOverSASL(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	b.CreateTopic(t, "sized", 2, map[string]string{"retention.bytes": "10485760", "segment.bytes": "1048576", "segment.index.bytes": "65536"})

	args := []string{"--log-dirs", b.LogDir, "--bootstrap-server", b.SASLAddr, "--sasl-mechanism", "PLAIN",
		"--sasl-username", kafkatest.GuardUser, "--web.listen-address", "127.0.0.1:0"}
	cfg, err := parseRunConfig(args, mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addr, logs := startServe(t, cfg)

	// R5.1 with the broker's configs: 10 MiB + 1 MiB + 2 x 64 KiB x 11,
	// per partition, two partitions.
	want := 2 * (10<<20 + 1<<20 + 2*65536*11)
	if err := waitMetricErr(addr, `kafka_disk_guard_reserved_bytes{basis="retention_bytes",topic="sized"} `+strconv.FormatFloat(float64(want), 'g', -1, 64)); err != nil {
		t.Fatalf("%v\n%s\nlogs:\n%s", err, grepMetrics(addr, "reserved"), logs.String())
	}
	waitMetric(t, addr, `kafka_disk_guard_enforcer_blocked{reason="broker_unreachable"} 0`)
	waitMetric(t, addr, `kafka_disk_guard_enforcement_enabled 0`)
	// Quiet start: a reachable cluster, and not one warning or error.
	for _, l := range logLines(t, logs.String()) {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			t.Errorf("%s at a start against a reachable broker: %v", l["level"], l)
		}
	}

	// Admission answers once its cluster model is read (the model age
	// appears then): on a loaded machine that can come after the metrics
	// above.
	waitMetric(t, addr, "\nkafka_disk_guard_admission_model_age_seconds ")

	// Admission: far more than the broker's disk can hold is refused,
	// with the limit named; a small topic is allowed.
	check := func(req reserve.Request) reserve.Decision {
		body, _ := json.Marshal(req)
		resp, err := http.Post("http://"+addr+reservePath, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("admission: %d %s", resp.StatusCode, raw)
		}
		var d reserve.Decision
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	huge := check(reserve.Request{Operation: reserve.CreateTopic, Topic: "huge", Partitions: 1000,
		Configs: map[string]string{"retention.bytes": "1099511627776"}})
	if huge.Allowed || !strings.Contains(huge.Reason, "90%") {
		t.Fatalf("a 1000 x 1 TiB topic was not refused with the limit named: %+v", huge)
	}
	small := check(reserve.Request{Operation: reserve.CreateTopic, Topic: "small", Partitions: 1,
		Configs: map[string]string{"retention.bytes": "1048576"}})
	if !small.Allowed {
		t.Fatalf("a 1 MiB topic was refused: %s", small.Reason)
	}

	// check-config --online reads the cluster with the same connection.
	var out bytes.Buffer
	file := writeFile(t, "guard.yaml", "logDirs: ["+b.LogDir+"]\nkafka: {bootstrapServers: ["+b.SASLAddr+"], sasl: {mechanism: PLAIN, username: "+kafkatest.GuardUser+"}}\n")
	err = run(t.Context(), []string{"check-config", "--online", file}, mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword}), &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), "cluster ok: 1 broker(s)") {
		t.Fatalf("check-config --online: %v\n%s", err, out.String())
	}
	// Kafka 4.4 takes cordoned.log.dirs (KIP-1066): said, not failed.
	if !strings.Contains(out.String(), "cordon: broker 1: ok (metadata.version feature level") {
		t.Errorf("check-config --online does not report the cordon:\n%s", out.String())
	}

	// A wrong password: the guard keeps watching and serving, and says why.
	cfg2, err := parseRunConfig(args, mapEnv(map[string]string{"KDG_SASL_PASSWORD": "wrong"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addr2, logs2 := startServe(t, cfg2)
	waitMetric(t, addr2, `kafka_disk_guard_segments{log_dir="`+b.LogDir+`",state="open",topic="sized"} 2`)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(logs2.String(), "kafka connection failed, retrying") {
			return errors.New("no log line about the failed connection")
		}
		return nil
	})
	if resp, err := http.Post("http://"+addr2+reservePath, "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("admission without a connection: %v %v", resp, err)
	}
}

// startServe runs serve until the test ends and returns its address and
// its log.
func startServe(t *testing.T, cfg guardConfig) (string, *syncWriter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncWriter{w: &bytes.Buffer{}}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), build{"test", ""}, serveHooks{ready: func(a string) { addrc <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-addrc:
		return a, logs
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen")
	}
	return "", nil
}

func waitMetric(t *testing.T, addr, line string) {
	t.Helper()
	kafkatest.Eventually(t, 60*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), line) {
			return fmt.Errorf("/metrics lacks %s", line)
		}
		return nil
	})
}

func waitMetricErr(addr, line string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.Contains(grepMetrics(addr, ""), line) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/metrics lacks %s", line)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// grepMetrics returns the /metrics lines containing sub.
func grepMetrics(addr, sub string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
