package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// genLogDir generates a small broker log dir (meta.properties included).
func genLogDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs")
	if _, err := logdirgen.Generate(dir, logdirgen.Spec{Now: time.Now(), Sparse: true,
		Topics: []logdirgen.Topic{{Name: "orders", Partitions: 1, Segments: []logdirgen.Segment{{Bytes: 4096}}}}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// One exit-code convention for every subcommand: 2 for a mistake in the
// command line or configuration (nothing started), 1 for a failure while
// working, 0 for success.
func TestExitCodes(t *testing.T) {
	dir := genLogDir(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	inUse := busy.Addr().String()
	badConfig := writeFile(t, "bad.yaml", "logDirs: [/d]\nadmission: {limitPercent: 150}\n")
	goodConfig := writeFile(t, "good.yaml", "logDirs: [/d]\n")
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"no subcommand", nil, 2},
		{"unknown subcommand", []string{"bogus"}, 2},
		{"version", []string{"version"}, 0},
		{"version --bogus", []string{"version", "--bogus"}, 2},
		{"run --bogus", []string{"run", "--bogus"}, 2},
		{"run with a bad flag value", []string{"run", "--log-dirs", dir, "--capacity-bytes", "x"}, 2},
		{"run with an invalid config", []string{"run", "--config", badConfig}, 2},
		{"run with a password flag", []string{"run", "--log-dirs", dir, "--sasl-password", "x"}, 2},
		{"run, address in use", []string{"run", "--log-dirs", dir, "--web.listen-address", inUse}, 1},
		{"scan --bogus", []string{"scan", "--bogus"}, 2},
		{"scan without log dirs", []string{"scan"}, 2},
		{"scan --profile custom", []string{"scan", "--log-dirs", dir, "--profile", "custom"}, 2},
		{"scan", []string{"scan", "--log-dirs", dir}, 0},
		{"scan, cluster unreachable", []string{"scan", "--log-dirs", dir, "--bootstrap-server", closedAddr(t)}, 1},
		{"demo --bogus", []string{"demo", "--bogus"}, 2},
		{"demo, address in use", []string{"demo", "--listen", inUse, "--dir", filepath.Join(t.TempDir(), "d")}, 1},
		{"reserve --bogus", []string{"reserve", "--bogus"}, 2},
		{"reserve, allowed", []string{"reserve", "--topic", "t", "--partitions", "1", "--storage-bytes", "100GiB"}, 0},
		{"reserve, refused", []string{"reserve", "--topic", "t", "--partitions", "1000", "--storage-bytes", "1GiB"}, 1},
		{"reserve, cluster unreachable", []string{"reserve", "--topic", "t", "--bootstrap-server", closedAddr(t)}, 1},
		{"check-config --bogus", []string{"check-config", "--bogus"}, 2},
		{"check-config without files", []string{"check-config"}, 2},
		{"check-config, invalid file", []string{"check-config", badConfig}, 1},
		{"check-config, missing file", []string{"check-config", filepath.Join(t.TempDir(), "none.yaml")}, 1},
		{"check-config", []string{"check-config", goodConfig}, 0},
		{"check-config --online without a cluster", []string{"check-config", "--online", goodConfig}, 1},
		{"check-config --online, cluster unreachable", []string{"check-config", "--online", "--bootstrap-server", closedAddr(t), goodConfig}, 1},
		{"check-config --online with a password flag", []string{"check-config", "--online", "--sasl-password", "x", goodConfig}, 2},
		{"protection without a subcommand", []string{"protection"}, 2},
		{"protection bogus", []string{"protection", "bogus"}, 2},
		{"protection status --bogus", []string{"protection", "status", "--bogus"}, 2},
		{"protection status without a cluster", []string{"protection", "status"}, 2},
		{"protection status --format xml", []string{"protection", "status", "--format", "xml", "--bootstrap-server", closedAddr(t)}, 2},
		{"protection status, cluster unreachable", []string{"protection", "status", "--bootstrap-server", closedAddr(t)}, 1},
		{"protection lift without a scope", []string{"protection", "lift", "--bootstrap-server", closedAddr(t)}, 2},
		{"protection lift with two scopes", []string{"protection", "lift", "--all", "--broker", "1", "--bootstrap-server", closedAddr(t)}, 2},
		{"protection lift, cluster unreachable", []string{"protection", "lift", "--all", "--bootstrap-server", closedAddr(t)}, 1},
		{"protection lift with a password flag", []string{"protection", "lift", "--all", "--sasl-password", "x"}, 2},
		{"protection lift with a bad ownership topic", []string{"protection", "lift", "--all", "--ownership-topic", "a b", "--bootstrap-server", closedAddr(t)}, 2},
		{"protection resume --topic", []string{"protection", "resume", "--topic", "t", "--bootstrap-server", closedAddr(t)}, 2},
		{"relief without a subcommand", []string{"relief"}, 2},
		{"relief bogus", []string{"relief", "bogus"}, 2},
		{"relief plan --bogus", []string{"relief", "plan", "--bogus"}, 2},
		{"relief plan without a cluster", []string{"relief", "plan"}, 2},
		{"relief plan --band 120", []string{"relief", "plan", "--band", "120", "--bootstrap-server", closedAddr(t)}, 2},
		{"relief plan --target over --band", []string{"relief", "plan", "--band", "80", "--target", "90", "--bootstrap-server", closedAddr(t)}, 2},
		{"relief plan with a password flag", []string{"relief", "plan", "--sasl-password", "x"}, 2},
		{"relief plan, cluster unreachable", []string{"relief", "plan", "--bootstrap-server", closedAddr(t)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Parallel: each unreachable-cluster case waits out Sarama's
			// metadata retries (half a second); the cases share nothing.
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, tc.args, mapEnv(nil), &stdout, &stderr)
			if got := exitCode(err); got != tc.want {
				t.Fatalf("exit %d, want %d: %v\n%s", got, tc.want, err, stderr.String())
			}
		})
	}
}

// Quiet start: with a cluster configured that is not there, no warning or
// error is logged before the Kafka link's first connection attempt fails.
func TestQuietStartUntilTheFirstAttemptFails(t *testing.T) {
	dir := genLogDir(t)
	cfg, err := parseRunConfig([]string{"--log-dirs", dir, "--web.listen-address", "127.0.0.1:0", "--bootstrap-server", closedAddr(t)}, mapEnv(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := runFor(t, cfg, func(logs string) bool { return strings.Contains(logs, "kafka connection failed") })
	lines := logLines(t, logs)
	first := -1
	for i, l := range lines {
		if l["msg"] == "kafka connection failed, retrying" {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatalf("no connection failure logged:\n%s", logs)
	}
	for _, l := range lines[:first] {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			t.Errorf("%s before the first connection attempt failed: %v", l["level"], l)
		}
	}
}

// Quiet start offline: without a cluster, a start on a log dir below every
// band logs no warning or error at all.
func TestQuietStartOffline(t *testing.T) {
	dir := genLogDir(t)
	cfg, err := parseRunConfig([]string{"--log-dirs", dir, "--web.listen-address", "127.0.0.1:0", "--capacity-bytes", "1073741824"}, mapEnv(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	var started time.Time
	logs := runFor(t, cfg, func(logs string) bool {
		if started.IsZero() && strings.Contains(logs, "enforcer started") {
			started = time.Now()
		}
		return !started.IsZero() && time.Since(started) > time.Second // the first reconciles ran
	})
	for _, l := range logLines(t, logs) {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			t.Errorf("%s at an offline start: %v", l["level"], l)
		}
	}
}

// runFor runs serve until done(logs) holds (20 s at most), then stops it
// and returns the logs.
func runFor(t *testing.T, cfg guardConfig, done func(string) bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := &syncWriter{w: &bytes.Buffer{}}
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, cfg, newLogger(logConfig{}, logs), build{"test", ""}, serveHooks{}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !done(logs.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v", err)
	}
	return logs.String()
}

func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}
