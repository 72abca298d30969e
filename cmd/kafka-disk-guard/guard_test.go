package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

func mapEnv(m map[string]string) env { return func(k string) string { return m[k] } }

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Settings come from the file, then the environment, then flags.
func TestRunConfigPrecedence(t *testing.T) {
	file := writeFile(t, "guard.yaml", `
logDirs: [/from/file]
capacityBytes: 1000
kafka:
  bootstrapServers: ["file:9092"]
enforcer:
  profile: local
web:
  listenAddress: ":1111"
`)
	c, err := parseRunConfig([]string{"--config", file, "--web.listen-address", ":2222"},
		mapEnv(map[string]string{"KDG_BOOTSTRAP_SERVERS": "env:9092,env2:9092", "KDG_LOG_DIRS": "/from/env"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Kafka.BootstrapServers, ","); got != "env:9092,env2:9092" {
		t.Errorf("bootstrap %s: env must win over the file", got)
	}
	if got := strings.Join(c.LogDirs, ","); got != "/from/env" {
		t.Errorf("log dirs %s", got)
	}
	if c.CapacityBytes != 1000 || c.Enforcer.Profile != "local" {
		t.Errorf("file values lost: %+v", c)
	}
	if c.Web.ListenAddress != ":2222" {
		t.Errorf("listen %s: the flag must win", c.Web.ListenAddress)
	}
	if c.Enforcer.Enabled {
		t.Error("enforcement must be off unless switched on (R4.4)")
	}
	c, err = parseRunConfig([]string{"--config", file, "--log-dirs", "/from/flag"},
		mapEnv(map[string]string{"KDG_LOG_DIRS": "/from/env"}), io.Discard)
	if err != nil || c.LogDirs[0] != "/from/flag" {
		t.Fatalf("flag over env: %v %v", err, c.LogDirs)
	}
}

// R6: a bad config file is refused at start with a message naming the
// field.
func TestRunConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{"unknown field", "logDirs: [/d]\nlogDir: /x\n", nil, "logDir"},
		{"wrong type", "logDirs: [/d]\ncapacityBytes: lots\n", nil, "lots"},
		{"no log dirs", "capacityBytes: 5\n", nil, "logDirs"},
		{"bad profile", "logDirs: [/d]\nenforcer: {profile: huge}\n", nil, "enforcer.profile"},
		{"enforce without kafka", "logDirs: [/d]\nenforcer: {enabled: true}\n", nil, "enforcer.enabled"},
		{"bad sasl", "logDirs: [/d]\nkafka: {bootstrapServers: [a:1], sasl: {mechanism: GSSAPI}}\n", nil, "kafka.sasl.mechanism"},
		{"bad bootstrap", "logDirs: [/d]\nkafka: {bootstrapServers: [nohost]}\n", nil, "kafka.bootstrapServers[0]"},
		{"bad log level", "logDirs: [/d]\nlog: {level: loud}\n", nil, "log.level"},
		{"bad capacity flag", "logDirs: [/d]\n", []string{"--capacity-bytes", "x"}, "capacity-bytes"},
		{"negative interval", "logDirs: [/d]\nresyncInterval: -1s\n", nil, "resyncInterval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "guard.yaml", tc.body)
			_, err := parseRunConfig(append([]string{"--config", file}, tc.args...), mapEnv(nil), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// The guard runs offline on a generated log dir: metrics are served,
// readiness follows the first scan, the admission endpoint says the cluster
// is not reachable, and it stops cleanly when its context ends.
func TestServeOffline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if _, err := logdirgen.Generate(dir, logdirgen.Spec{Now: time.Now(), Sparse: true,
		Topics: []logdirgen.Topic{{Name: "orders", Partitions: 2, Segments: []logdirgen.Segment{{Bytes: 4096, Age: 200 * time.Hour}, {Bytes: 1024}}}}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseRunConfig([]string{"--log-dirs", dir, "--web.listen-address", "127.0.0.1:0"}, mapEnv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil)), build{"test", ""}, serveHooks{ready: func(a string) { addrc <- a }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening")
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := get("/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`kafka_disk_guard_segments{log_dir="` + dir + `",state="eligible",topic="orders"} 2`,
		`kafka_disk_guard_segments{log_dir="` + dir + `",state="open",topic="orders"} 2`,
		`kafka_disk_guard_enforcement_enabled 0`,
		`kafka_disk_guard_watch_mode{mode="inotify"} 1`,
		`kafka_disk_guard_log_dir_projected_usage_ratio{log_dir="` + dir + `"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, body := get(reservePath); code != http.StatusServiceUnavailable || !strings.Contains(body, "admission needs a kafka cluster") {
		t.Errorf("admission without a cluster: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop")
	}
}

// syncWriter serialises writes from the guard's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String returns what was written (w must be a *bytes.Buffer).
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.(*bytes.Buffer).String()
}

// The shipped example configuration is one the guard accepts.
func TestExampleConfigLoads(t *testing.T) {
	c, err := loadConfigFile(filepath.Join("..", "..", "deploy", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Enforcer.Enabled {
		t.Error("the example must not enforce: observe mode is the default (R4.4)")
	}
}
