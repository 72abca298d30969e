//go:build integration

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The demo's end-to-end runs take minutes of wall time (the simulated
// broker fills its disk in real time, sped up): they run in the
// integration pass, so the quick loop (go test -short ./...) stays quick.

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
	// The lossless rungs before any purge (spec R3.8): the projection past
	// the purge band, the cordon, moves into the broker's second log dir.
	// The projection needs a few samples of the flood's rate: on a loaded
	// machine the first flood can outrun them, so a later one (the
	// scenario repeats) may show it.
	d.waitLines(t, 3*time.Minute, `scenario: a replay floods`, `foresee: projected \d+\.\d% at [0-9.]+ [KM]iB/s, past the 85% purge band`, `band purge \(was periodic\)`)
	d.waitLines(t, time.Second, `band periodic \(was scheduled\)`, `would cordon kafka-logs \(usage 7\d\.\d%\): Kafka would place no new partition in it`)
	d.waitLines(t, time.Second, `would move [a-z0-9._-]+-\d from kafka-logs to kafka-logs-spare: [0-9.]+ [KM]iB, (cold|warm); the batch copies in`)
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
	d.waitLines(t, time.Second, `band periodic \(was scheduled\)`, `    cordoned kafka-logs \(usage 7\d\.\d%\)`, `    uncordoned kafka-logs`)
	if strings.Contains(d.stdout.String(), "would move") || strings.Contains(d.stdout.String(), "moving ") {
		t.Errorf("--enforce moved, or planned moves, on a simulated broker that does not copy replicas:\n%s", d.stdout.String())
	}
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
