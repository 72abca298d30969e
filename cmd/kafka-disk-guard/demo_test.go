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

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
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

// demoRun is one run of the demo subcommand in the background.
type demoRun struct {
	stdout, stderr syncBuffer
	done           chan error
	cancel         context.CancelFunc
	url            string
}

func startDemo(t *testing.T, args ...string) *demoRun {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	d := &demoRun{done: make(chan error, 1), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		d.done <- run(ctx, append([]string{"demo", "--listen", "127.0.0.1:0"}, args...), func(string) string { return "" }, &d.stdout, &d.stderr)
	}()
	urlRe := regexp.MustCompile(`Metrics: (http://\S+)`)
	eventually(t, 60*time.Second, func() error {
		m := urlRe.FindStringSubmatch(d.stdout.String())
		if m == nil {
			return errors.New("no metrics URL printed yet")
		}
		d.url = m[1]
		return nil
	})
	return d
}

// stop cancels the demo and checks it stops cleanly.
func (d *demoRun) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("demo returned %v after cancel; stderr:\n%s", err, d.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not stop after cancel")
	}
	if !strings.Contains(d.stdout.String(), "Stopped.") {
		t.Errorf("no stop message:\n%s", d.stdout.String())
	}
}

// waitLines waits until stdout has a line matching each pattern, in order.
func (d *demoRun) waitLines(t *testing.T, timeout time.Duration, patterns ...string) {
	t.Helper()
	eventually(t, timeout, func() error {
		out := d.stdout.String()
		for _, p := range patterns {
			loc := regexp.MustCompile(`(?m)^.*` + p + `.*$`).FindStringIndex(out)
			if loc == nil {
				return fmt.Errorf("no line matching %q after the previous ones in:\n%s", p, d.stdout.String())
			}
			out = out[loc[1]:]
		}
		return nil
	})
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
		{"enforce a real broker", []string{"--bootstrap-server", "b:9092", "--log-dirs", "/d", "--enforce"}, "--enforce"},
		{"unknown scenario", []string{"--scenario", "flood"}, "--scenario"},
		{"bad speed", []string{"--speed", "0"}, "--speed"},
		{"fill a large disk", []string{"--capacity-bytes", "10000000000"}, "--capacity-bytes"},
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
	if err != nil || c.capacity != demoDefaultCapacity || c.compactFlat != demoCompactFlatBytes || c.listen != ":9644" ||
		c.scenario != scenarioFill || c.speed != 1 || c.enforce {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

// The demo narrates from the typed events of the records: a healthy
// action is one line on stdout and nothing on stderr; a failed one goes
// to stderr.
func TestDemoNarratesTypedEvents(t *testing.T) {
	var stdout, stderr bytes.Buffer
	logger := slog.New(newDemoLog(&lineWriter{w: &stdout}, &stderr)).With("component", "enforcer")
	acl := enforcer.ACL{Topic: "orders", Permission: "DENY", Operation: "WRITE", Principal: "User:*"}
	logger.Warn("write protection on", slog.Any(enforcer.EventKey, enforcer.ProtectionChange{On: true, Strategy: enforcer.StrategyACL, Topic: "orders", ACLs: []enforcer.ACL{acl}}))
	logger.Info("band changed", slog.Any(enforcer.EventKey, enforcer.BandChange{Band: enforcer.Band{Name: "purge", Action: enforcer.ActionPurge, Target: 0.8}, FromBand: "periodic", Usage: 0.854}))
	if want := "write-protected orders: DENY WRITE User:*"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
	if want := "usage 85.4%: band purge (was periodic): delete the oldest segments, expired or not, until usage < 80.0%"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
	logger.Info("would cordon log dir", slog.Any(enforcer.EventKey, enforcer.CordonDone{
		CordonChange: enforcer.CordonChange{LogDir: "/data/1", Dir: "/data/1", Band: "periodic", Usage: 0.758}, Cordon: true, DryRun: true}))
	logger.Info("move started", slog.Any(enforcer.EventKey, enforcer.MoveDone{
		Move: enforcer.Move{Topic: "orders", Partition: 1, From: "/data/1", To: "/data/2", Bytes: 1 << 20, Cold: true}, Duration: 12 * time.Second}))
	// The same move planned again (its size grown) is told once.
	logger.Info("move started", slog.Any(enforcer.EventKey, enforcer.MoveDone{
		Move: enforcer.Move{Topic: "orders", Partition: 1, From: "/data/1", To: "/data/2", Bytes: 2 << 20, Cold: true}, Duration: 12 * time.Second}))
	if n := strings.Count(stdout.String(), "moving orders-1"); n != 1 {
		t.Errorf("a move told %d times:\n%s", n, stdout.String())
	}
	for _, want := range []string{
		"    would cordon 1 (usage 75.8%): Kafka would place no new partition in it (cordoned.log.dirs)",
		"    moving orders-1 from 1 to 2: 1.00 MiB, cold; the batch copies in 12s at the throttle, before the purge band",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("healthy actions wrote to stderr:\n%s", stderr.String())
	}
	logger.Error("delete records failed", slog.Any(enforcer.EventKey, enforcer.DeletionDone{Err: errors.New("boom")}))
	if !strings.Contains(stderr.String(), "delete records failed") {
		t.Errorf("a failed action is not on stderr: %q", stderr.String())
	}
}
