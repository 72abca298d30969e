//go:build integration

package monitoring_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkAlert compares a received alert with its rule: labels, the summary
// and runbook URL as shipped, and a description naming the log dir.
func checkAlert(t *testing.T, root string, a amAlert, labels map[string]string, logDir string) {
	t.Helper()
	rule := shippedRule(t, root, labels["alertname"])
	for k, v := range labels {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, a.Labels[k], v, a.Labels)
		}
	}
	if a.Annotations["summary"] != rule.Annotations["summary"] {
		t.Errorf("summary %q, want %q", a.Annotations["summary"], rule.Annotations["summary"])
	}
	if a.Annotations["runbook_url"] != rule.Annotations["runbook_url"] || !strings.Contains(a.Annotations["runbook_url"], "docs/operating.md#"+strings.ToLower(labels["alertname"])) {
		t.Errorf("runbook_url %q, want %q", a.Annotations["runbook_url"], rule.Annotations["runbook_url"])
	}
	if d := a.Annotations["description"]; !strings.Contains(d, logDir) || strings.Contains(d, "{{") {
		t.Errorf("description %q does not name the log dir %s", d, logDir)
	}
}

func shippedRule(t *testing.T, root, name string) chartRule {
	t.Helper()
	for _, g := range shippedGroups(t, root) {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r
			}
		}
	}
	t.Fatalf("no rule %s in alerts/", name)
	return chartRule{}
}

// checkRefusedAround: the producer was refused before the notification
// arrived and after it, with no write accepted in between, and the first
// refusal came after usage reached 90%.
func checkRefusedAround(t *testing.T, hist []attempt, at, first90 time.Time) {
	t.Helper()
	lastBefore, firstAfter := -1, -1
	for i, a := range hist {
		if !a.at.After(at) {
			lastBefore = i
		} else if firstAfter < 0 {
			firstAfter = i
		}
	}
	if lastBefore < 0 || firstAfter < 0 {
		t.Fatalf("no produce attempts around the notification at %s", at)
	}
	if !hist[lastBefore].refused {
		t.Fatalf("the last produce before the notification was not refused: %v", hist[lastBefore].err)
	}
	firstRefused := lastBefore
	for firstRefused > 0 && hist[firstRefused-1].refused {
		firstRefused--
	}
	for _, a := range hist {
		if a.err != nil && !a.refused {
			t.Errorf("produce failed with something else than TOPIC_AUTHORIZATION_FAILED: %v", a.err)
		}
	}
	if hist[firstRefused].at.Before(first90) {
		t.Errorf("refused at %s, before usage reached 90%% at %s", hist[firstRefused].at, first90)
	}
	t.Logf("write protection: usage reached 90%% at +0, first refused produce at %+.1fs, webhook received the alert at %+.1fs; %d requests refused before it, the next one after it refused too",
		hist[firstRefused].at.Sub(first90).Seconds(), at.Sub(first90).Seconds(), lastBefore-firstRefused+1)
}

// checkCountersAtStart: every counter a dashboard plots has series at the
// first scrape; the enforcer's action counters are all 0 then.
func checkCountersAtStart(ctx context.Context, t *testing.T, prom promAPI, root string) {
	t.Helper()
	counterRE := regexp.MustCompile(`kafka_disk_guard_[a-z_]+_total`)
	var names []string
	for _, d := range readDashboards(t, root) {
		for _, q := range d.queries() {
			for _, n := range counterRE.FindAllString(q.expr, -1) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		res, err := prom.instant(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			t.Errorf("%s has no series at the first scrape: its panels show No data", n)
			continue
		}
		switch n {
		case "kafka_disk_guard_actions_total", "kafka_disk_guard_action_bytes_total", "kafka_disk_guard_unexpired_deleted_bytes_total":
			for _, s := range res {
				if s.float() != 0 {
					t.Errorf("%s%v = %v before the disk filled", n, s.Metric, s.float())
				}
			}
		}
		t.Logf("%s: %d series at the first scrape", n, len(res))
	}
}

// checkOnlyExpectedAlerts: over the run, no alert outside expectedAlerts
// was pending or firing (the scan-errors alert ignores `vanished`, which
// the runbook calls normal on busy brokers).
func checkOnlyExpectedAlerts(ctx context.Context, t *testing.T, prom promAPI, start, end time.Time) {
	t.Helper()
	res, err := prom.rangeQuery(ctx, `max by (alertname, alertstate) (ALERTS)`, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, s := range res {
		name := s.Metric["alertname"]
		seen = append(seen, name+"/"+s.Metric["alertstate"])
		if _, ok := expectedAlerts[name]; !ok {
			t.Errorf("%s was %s during the run: its condition does not hold in this scenario", name, s.Metric["alertstate"])
		}
	}
	slices.Sort(seen)
	kinds, err := prom.instant(ctx, `sum by (kind) (kafka_disk_guard_scan_errors_total) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, k := range kinds {
		counted[k.Metric["kind"]] = k.float()
	}
	t.Logf("alerts seen: %v; scan errors counted during the run: %v", seen, counted)
}
