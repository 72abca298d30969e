package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// watchBands scrapes the band gauge until ctx ends and records every band
// seen at 1, in order of first sight.
func watchBands(ctx context.Context, url, dir string) func() []string {
	var mu sync.Mutex
	var seen []string
	go func() {
		for ctx.Err() == nil {
			for _, b := range []string{"scheduled", "periodic", "purge", "protect"} {
				v, err := scrapeValue(url, fmt.Sprintf(`kafka_disk_guard_band{band=%q,log_dir=%q}`, b, dir))
				mu.Lock()
				if err == nil && v == 1 && (len(seen) == 0 || seen[len(seen)-1] != b) {
					seen = append(seen, b)
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// noWarnings fails on any warning or error the demo logged.
func (d *demoRun) noWarnings(t *testing.T) {
	t.Helper()
	if e := d.stderr.String(); strings.Contains(e, "level=WARN") || strings.Contains(e, "level=ERROR") || e != "" {
		t.Errorf("a healthy demo wrote to stderr:\n%s", e)
	}
}

// TestDemo runs the default demo (sped up): the scan table, then usage
// driven through every band of the cloud profile with the observe-mode
// plan at each (eligible segments at 75%, unexpired ones at 85%, the
// topics to write-protect at 90%), then back down through the burst
// topic's own retention (spec R4.4: nothing is performed). The metrics
// show the band changes; stderr stays empty.
func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + "/kafka-logs"
	d := startDemo(t, "--interval", "100ms", "--speed", "3", "--dir", dir)
	bands := watchBands(t.Context(), d.url, dir)
	for _, want := range []string{"TOPIC", "orders", "payments.v1", "clickstream", "user-profiles", "telemetry", "compact_flat", "-delete (deleted",
		"observe mode", "Bands (profile cloud): 75% periodic, 85% purge, 90% protect"} {
		if !strings.Contains(d.stdout.String(), want) {
			t.Errorf("introduction lacks %q:\n%s", want, d.stdout.String())
		}
	}
	d.waitLines(t, 3*time.Minute,
		`usage \d+\.\d%: band scheduled: eligible segments are deleted once a day`,
		`scenario: a replay floods telemetry`,
		`usage 7\d\.\d%: past 70%`,
		`band periodic \(was scheduled\): delete eligible segments until usage < 75\.0%`,
		`would delete [a-z0-9._-]+-\d up to offset \d+: 1 segment, [0-9.]+ [KM]iB, expired \(retention_(time|size)\)`,
		`band purge \(was periodic\): delete the oldest segments, expired or not`,
		`band protect \(was purge\): write-protect`,
		`would write-protect telemetry: DENY WRITE User:\*`,
		`scenario: the replay stops`,
		`usage \d+\.\d%: back under 70%`,
		`band scheduled \(was (protect|purge|periodic)\)`,
	)
	d.waitLines(t, time.Second, `band purge`, `would delete [a-z0-9._-]+-\d up to offset \d+: \d+ segments?, [0-9.]+ [KM]iB, NOT expired`)
	d.waitLines(t, time.Second, `band protect`, `would lift write protection from telemetry`)
	eventually(t, 10*time.Second, func() error {
		if got := bands(); len(got) < 5 || !slices.Equal(got[:4], []string{"scheduled", "periodic", "purge", "protect"}) || got[len(got)-1] != "scheduled" {
			return fmt.Errorf("kafka_disk_guard_band went through %v, want scheduled, periodic, purge, protect, ..., scheduled", got)
		}
		return nil
	})
	for _, tt := range []struct {
		series string
		want   func(float64) bool
	}{
		{`kafka_disk_guard_enforcement_enabled`, func(v float64) bool { return v == 0 }},
		{`kafka_disk_guard_actions_total{action="periodic",band="periodic",result="dry_run"}`, func(v float64) bool { return v > 0 }},
		{`kafka_disk_guard_actions_total{action="protect",band="protect",result="dry_run"}`, func(v float64) bool { return v >= 5 }},
		{fmt.Sprintf(`kafka_disk_guard_log_dir_capacity_bytes{basis="configured",log_dir=%q}`, dir), func(v float64) bool { return v == demoDefaultCapacity }},
		{fmt.Sprintf(`kafka_disk_guard_topic_appended_bytes_total{log_dir=%q,topic="telemetry"}`, dir), func(v float64) bool { return v > 100<<20 }},
	} {
		if v, err := scrapeValue(d.url, tt.series); err != nil || !tt.want(v) {
			t.Errorf("%s = %v, %v", tt.series, v, err)
		}
	}
	for _, acted := range []string{"    deleted ", "write-protected", "producers of"} {
		if strings.Contains(d.stdout.String(), acted) {
			t.Errorf("R4.4: observe mode acted (%q):\n%s", acted, d.stdout.String())
		}
	}
	d.noWarnings(t)
	d.stop(t)
}

// TestDemoEnforce: with --enforce the enforcer acts on the simulated
// broker: it deletes records (the broker's retention check then removes
// the segments), write-protects the topics at 90% (the simulated
// producers are refused and the replay gives up), lifts the protection
// under the hysteresis bound, and usage comes back down.
func TestDemoEnforce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + "/kafka-logs"
	d := startDemo(t, "--interval", "100ms", "--speed", "3", "--dir", dir, "--enforce", "--capacity-bytes", "160000000")
	if !strings.Contains(d.stdout.String(), "The enforcer enforces (--enforce)") {
		t.Errorf("introduction does not say the enforcer enforces:\n%s", d.stdout.String())
	}
	d.waitLines(t, 3*time.Minute,
		`band periodic \(was scheduled\)`,
		`    deleted [a-z0-9._-]+-\d up to offset \d+: 1 segment, [0-9.]+ [KM]iB, expired`,
		`band protect \(was purge\)`,
		`write-protected telemetry: DENY WRITE User:\*`,
		`simulated producers of telemetry refused: TOPIC_AUTHORIZATION_FAILED`,
		`scenario: the replay stops \(write protection refused it`,
		`lifted write protection from telemetry`,
		`simulated producers of telemetry accepted again`,
		`usage \d+\.\d%: back under 70%`,
	)
	d.waitLines(t, time.Second, `band purge`, `    deleted [a-z0-9._-]+-\d up to offset \d+: \d+ segments?, [0-9.]+ [KM]iB, NOT expired`)
	for _, tt := range []struct {
		series string
		want   func(float64) bool
	}{
		{`kafka_disk_guard_enforcement_enabled`, func(v float64) bool { return v == 1 }},
		{`kafka_disk_guard_actions_total{action="protect",band="protect",result="ok"}`, func(v float64) bool { return v >= 5 }},
		{`kafka_disk_guard_unexpired_deleted_bytes_total{band="purge"}`, func(v float64) bool { return v > 0 }},
		{fmt.Sprintf(`kafka_disk_guard_write_protection_active{log_dir=%q,strategy="acl"}`, dir), func(v float64) bool { return v == 0 }},
	} {
		if v, err := scrapeValue(d.url, tt.series); err != nil || !tt.want(v) {
			t.Errorf("%s = %v, %v", tt.series, v, err)
		}
	}
	d.noWarnings(t)
	d.stop(t)
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
