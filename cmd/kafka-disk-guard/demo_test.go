package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// syncBuffer is a bytes.Buffer safe for the demo's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scrapeValue(url, series string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no series %s", series)
}

// TestDemo runs the demo on a generated log dir: it prints the scan table
// and the metrics URL, serves metrics that move as the simulated broker
// writes, and stops cleanly when its context ends.
func TestDemo(t *testing.T) {
	dir := t.TempDir() + "/kafka-logs"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--listen", "127.0.0.1:0", "--interval", "100ms", "--dir", dir}, func(string) string { return "" }, &stdout, &stderr)
	}()
	urlRe := regexp.MustCompile(`Metrics: (http://\S+)`)
	var url string
	eventually(t, 20*time.Second, func() error {
		m := urlRe.FindStringSubmatch(stdout.String())
		if m == nil {
			return errors.New("no metrics URL printed yet")
		}
		url = m[1]
		return nil
	})
	out := stdout.String()
	for _, want := range []string{"TOPIC", "orders", "payments.v1", "clickstream", "user-profiles", "compact_flat", "-delete (deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("scan table lacks %q:\n%s", want, out)
		}
	}
	series := fmt.Sprintf(`kafka_disk_guard_topic_appended_bytes_total{log_dir=%q,topic="orders"}`, dir)
	var first float64
	eventually(t, 20*time.Second, func() error {
		v, err := scrapeValue(url, series)
		if err != nil {
			return err
		}
		if v == 0 {
			return errors.New("nothing appended yet")
		}
		first = v
		return nil
	})
	eventually(t, 20*time.Second, func() error {
		v, err := scrapeValue(url, series)
		if err != nil {
			return err
		}
		if v <= first {
			return fmt.Errorf("appended bytes stuck at %v", v)
		}
		return nil
	})
	if v, err := scrapeValue(url, `kafka_disk_guard_log_dir_capacity_bytes{basis="configured",log_dir="`+dir+`"}`); err != nil || v != demoDefaultCapacity {
		t.Errorf("capacity = %v, %v; want the demo's configured %d", v, err, demoDefaultCapacity)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo returned %v after cancel; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demo did not stop after cancel")
	}
	if !strings.Contains(stdout.String(), "Stopped.") {
		t.Errorf("no stop message:\n%s", stdout.String())
	}
}

func TestDemoFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"bootstrap without log dirs", []string{"--bootstrap-server", "127.0.0.1:9092"}, "go together"},
		{"log dirs without bootstrap", []string{"--log-dirs", "/var/lib/kafka"}, "go together"},
		{"dir with bootstrap", []string{"--bootstrap-server", "b:9092", "--log-dirs", "/d", "--dir", "/x"}, "--dir"},
		{"bad interval", []string{"--interval", "0s"}, "--interval"},
		{"unknown flag", []string{"--nope"}, "nope"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDemoFlags(tt.args, mapEnv(nil), io.Discard)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseDemoFlags(%v) = %v, want a usage error naming %q", tt.args, err, tt.wantErr)
			}
		})
	}
	c, err := parseDemoFlags(nil, mapEnv(nil), io.Discard)
	if err != nil || c.capacity != demoDefaultCapacity || c.compactFlat != demoCompactFlatBytes || c.listen != ":9644" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

// TestSimulatorWritesWhatTheAgentReads drives the simulated broker over five
// simulated minutes: segments roll, expired ones are renamed .deleted and
// then removed, and the agent's scanner reads every file without error.
func TestSimulatorWritesWhatTheAgentReads(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	topics := demoTopics()
	sim, err := newSimulator(dir, topics, t0)
	if err != nil {
		t.Fatal(err)
	}
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	firstBase := map[string]int64{}
	for _, p := range scanner.ScanLogDir(dir, nil).Partitions {
		if p.Kind == agent.KindLive {
			firstBase[p.Dir] = p.Segments[len(p.Segments)-1].BaseOffset
		}
	}
	var sawPending bool
	now := t0
	for i := 0; i < 300; i++ {
		now = now.Add(time.Second)
		if err := sim.step(now); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i%30 == 29 && scanner.ScanLogDir(dir, nil).PendingDeleteBytes > 28<<10 { // more than logdirgen's extras
			sawPending = true
		}
	}
	ld := scanner.ScanLogDir(dir, nil)
	if errs := scanner.Errors(); len(errs) > 0 {
		t.Errorf("scan errors on the simulated log dir: %v", errs)
	}
	snap := agent.BuildSnapshot(now, []agent.LogDir{ld}, demoConfigs(topics, t0), agent.Health{})
	for _, p := range snap.LogDirs[0].Partitions {
		if p.Kind != agent.KindLive {
			continue
		}
		switch p.Topic {
		case "orders":
			if p.Segments[0].BaseOffset <= firstBase[p.Dir] {
				t.Errorf("%s: oldest segment %d, want the generated ones (up to %d) rolled and deleted", p.Dir, p.Segments[0].BaseOffset, firstBase[p.Dir])
			}
			if p.LogEndOffset <= firstBase[p.Dir] || p.HighWatermark != p.LogEndOffset {
				t.Errorf("%s: log end %d, high watermark %d", p.Dir, p.LogEndOffset, p.HighWatermark)
			}
		case "user-profiles":
			for _, s := range p.Segments {
				if s.State == agent.StateEligible {
					t.Errorf("compacted topic segment %d eligible", s.BaseOffset)
				}
			}
		}
	}
	if !sawPending {
		t.Error("never saw .deleted files from the simulated retention check")
	}
}
