package deploycheck

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

const runbookBase = "https://github.com/kafka-disk-guard/kafka-disk-guard/blob/main/docs/operating.md#"

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func documented(t *testing.T) map[string]string {
	t.Helper()
	m, err := DocumentedMetrics(string(readFile(t, "docs/metrics.md")))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDocumentedMetricsFromMarkdown(t *testing.T) {
	md := "# x\n| name | type | labels | meaning |\n|---|---|---|---|\n" +
		"| `a_bytes` | gauge | log_dir | a |\n| `b_total` | counter | | b |\n" +
		"| `c_seconds` | histogram | | c |\nnot a row `d` | gauge |\n"
	got, err := DocumentedMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a_bytes", "b_total", "c_seconds_bucket", "c_seconds_count", "c_seconds_sum"}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("names = %v, want %v", names, want)
	}
	if _, err := DocumentedMetrics("| `x` | gaug | | |\n"); err == nil {
		t.Fatal("unknown type accepted")
	}

	// The real contract: spot-check a few rows and the histogram suffixes.
	real := documented(t)
	for _, n := range []string{
		"kafka_disk_guard_log_dir_usage_ratio", "kafka_disk_guard_write_protection_active",
		"kafka_disk_guard_reconcile_duration_seconds_bucket", "kafka_disk_guard_last_scan_timestamp_seconds",
	} {
		if _, ok := real[n]; !ok {
			t.Errorf("docs/metrics.md: %s not found", n)
		}
	}
	if _, ok := real["kafka_disk_guard_reconcile_duration_seconds"]; ok {
		t.Error("a histogram's bare name is not a series")
	}
}

func TestCheckExpr(t *testing.T) {
	docs := map[string]string{"kafka_disk_guard_log_dir_usage_ratio": "gauge", "kafka_disk_guard_x_seconds_bucket": "histogram"}
	tests := []struct {
		expr    string
		wantErr string
	}{
		{`kafka_disk_guard_log_dir_usage_ratio >= 0.7`, ""},
		{`histogram_quantile(0.9, sum by (le) (rate(kafka_disk_guard_x_seconds_bucket[5m])))`, ""},
		{`up{job="kafka-disk-guard"} == 0`, ""},
		{`kafka_disk_guard_log_dir_usage_percent > 70`, "undocumented metrics [kafka_disk_guard_log_dir_usage_percent]"},
		{`rate(kafka_disk_guard_log_dir_usage_ratio[5m]`, "parse"},
		{`{__name__=~"kafka_disk_guard_.*"}`, "no fixed metric name"},
		{`vector(1)`, "no metric selected"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			err := CheckExpr(tt.expr, docs)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestPromQLOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{`label_values(kafka_disk_guard_build_info{cluster=~"$cluster"}, instance)`, `kafka_disk_guard_build_info{cluster=~"placeholder"}`},
		{`rate(m{instance=~"${broker}"}[$__rate_interval])`, `rate(m{instance=~"placeholder"}[5m])`},
		{`increase(m[$__range])`, `increase(m[5m])`},
	}
	for _, tt := range tests {
		got, err := PromQLOf(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("PromQLOf(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := PromQLOf("metrics(kafka_)"); err == nil {
		t.Error("metrics() variable query accepted")
	}
}

// TestDashboards: every panel and variable query parses as PromQL, reads
// only documented metrics, and filters by the cluster and broker variables.
func TestDashboards(t *testing.T) {
	docs := documented(t)
	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	uids := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseDashboard(data)
			if err != nil {
				t.Fatal(err)
			}
			if d.UID == "" || d.Title == "" {
				t.Error("dashboard without uid or title")
			}
			if other, dup := uids[d.UID]; dup {
				t.Errorf("uid %q also used by %s", d.UID, other)
			}
			uids[d.UID] = f
			vars := map[string]bool{}
			for _, v := range d.Templating.List {
				vars[v.Name] = true
				if v.Type != "query" {
					continue
				}
				q, err := PromQLOf(v.QueryString())
				if err != nil {
					t.Errorf("variable %s: %v", v.Name, err)
					continue
				}
				if err := CheckExpr(q, docs); err != nil {
					t.Errorf("variable %s: %v", v.Name, err)
				}
			}
			for _, want := range []string{"datasource", "cluster", "broker", "log_dir"} {
				if !vars[want] {
					t.Errorf("no %q variable", want)
				}
			}
			ids := map[int]bool{}
			queries := 0
			for _, p := range d.AllPanels() {
				if ids[p.ID] {
					t.Errorf("panel id %d used twice", p.ID)
				}
				ids[p.ID] = true
				if p.Type == "row" {
					continue
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, tg := range p.Targets {
					queries++
					q, err := PromQLOf(tg.Expr)
					if err != nil {
						t.Errorf("panel %q %s: %v", p.Title, tg.RefID, err)
						continue
					}
					if err := CheckExpr(q, docs); err != nil {
						t.Errorf("panel %q %s: %v", p.Title, tg.RefID, err)
						continue
					}
					if err := filtersByVariables(tg.Expr); err != nil {
						t.Errorf("panel %q %s: %v", p.Title, tg.RefID, err)
					}
				}
			}
			if queries < 10 {
				t.Errorf("only %d queries", queries)
			}
		})
	}
}

// filtersByVariables checks that every kafka_disk_guard selector of a
// panel query is narrowed by $cluster and $broker (and $log_dir when the
// metric has a log_dir label and the panel is per log dir).
func filtersByVariables(grafanaExpr string) error {
	q, err := PromQLOf(grafanaExpr)
	if err != nil {
		return err
	}
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		return err
	}
	var missing []string
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !strings.HasPrefix(vs.Name, "kafka_disk_guard_") {
			return nil
		}
		have := map[string]bool{}
		for _, m := range vs.LabelMatchers {
			have[m.Name] = true
		}
		for _, l := range []string{"cluster", "instance"} {
			if !have[l] {
				missing = append(missing, vs.Name+" without "+l)
			}
		}
		return nil
	})
	if len(missing) > 0 {
		return &filterError{missing}
	}
	return nil
}

type filterError struct{ missing []string }

func (e *filterError) Error() string {
	return "selectors not filtered: " + strings.Join(e.missing, ", ")
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, "alerts/kafka-disk-guard.rules.yml")))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts/kafka-disk-guard.rules.yml: %v", err)
	}
	return rf
}

// githubAnchors returns the anchors GitHub generates for the markdown
// headings of a document.
func githubAnchors(md string) map[string]bool {
	strip := regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	anchors := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ToLower(strip.ReplaceAllString(h, ""))
		a = strings.ReplaceAll(a, " ", "-")
		anchors[a] = true
	}
	return anchors
}

func TestGithubAnchors(t *testing.T) {
	a := githubAnchors("# Operating kafka-disk-guard\n## KafkaDiskGuardDiskUsageHigh\n```\n# not a heading\n```\n### Broker settings (R4.2)\n")
	for _, want := range []string{"operating-kafka-disk-guard", "kafkadiskguarddiskusagehigh", "broker-settings-r42"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("heading inside a code fence counted")
	}
}

// TestAlertRules: every alert parses, reads only documented metrics, and
// has a severity, a summary, a description and a runbook section.
func TestAlertRules(t *testing.T) {
	docs := documented(t)
	anchors := githubAnchors(string(readFile(t, "docs/operating.md")))
	rf := loadRules(t)
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				t.Errorf("group %s: a rule without alert name (record %q)", g.Name, r.Record)
				continue
			}
			if seen[name] {
				t.Errorf("alert %s defined twice", name)
			}
			seen[name] = true
			if err := CheckExpr(r.Expr, docs); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: severity %q", name, r.Labels["severity"])
			}
			if prof, ok := strings.CutPrefix(g.Name, "kafka-disk-guard.bands."); ok && r.Labels["profile"] != prof {
				t.Errorf("%s: profile label %q in group %s", name, r.Labels["profile"], g.Name)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s", name, a)
				}
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
			if !ok {
				t.Errorf("%s: runbook_url %q does not point into docs/operating.md", name, r.Annotations["runbook_url"])
			} else if !anchors[anchor] {
				t.Errorf("%s: docs/operating.md has no section #%s", name, anchor)
			}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d alerts", len(seen))
	}
}

type promtoolTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertHasFiringAndSilentTests reads alerts/tests/*.yml (run by
// promtool test rules) and demands, for every alert, a case where it fires
// and one where it stays silent.
func TestEveryAlertHasFiringAndSilentTests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "alerts", "tests", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool tests: %v", err)
	}
	firing, silent := map[string]int{}, map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var pt promtoolTests
		if err := yaml.Unmarshal(data, &pt); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(pt.RuleFiles) != 1 || pt.RuleFiles[0] != "../kafka-disk-guard.rules.yml" {
			t.Errorf("%s: rule_files %v, want [../kafka-disk-guard.rules.yml]", f, pt.RuleFiles)
		}
		for _, tc := range pt.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname]++
				} else {
					silent[a.Alertname]++
				}
			}
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if firing[r.Alert] == 0 {
				t.Errorf("%s: no promtool test where it fires", r.Alert)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("%s: no promtool test where it stays silent", r.Alert)
			}
			delete(firing, r.Alert)
			delete(silent, r.Alert)
		}
	}
	for a := range firing {
		t.Errorf("tests name unknown alert %s", a)
	}
	for a := range silent {
		t.Errorf("tests name unknown alert %s", a)
	}
}

// TestChartCopiesInSync: the chart embeds copies of alerts/ and dashboards/
// (Helm reads only files inside the chart); they must not drift.
func TestChartCopiesInSync(t *testing.T) {
	pairs := map[string]string{
		"alerts/kafka-disk-guard.rules.yml": "charts/kafka-disk-guard/files/alerts/kafka-disk-guard.rules.yml",
	}
	dash, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	for _, f := range dash {
		b := filepath.Base(f)
		pairs["dashboards/"+b] = "charts/kafka-disk-guard/files/dashboards/" + b
	}
	copies, _ := filepath.Glob(filepath.Join(root, "charts/kafka-disk-guard/files/dashboards/*.json"))
	if len(copies) != len(dash) {
		t.Errorf("chart has %d dashboards, dashboards/ has %d", len(copies), len(dash))
	}
	for orig, cp := range pairs {
		if !bytes.Equal(readFile(t, orig), readFile(t, cp)) {
			t.Errorf("%s differs from %s: run `cp %s %s`", cp, orig, orig, cp)
		}
	}
}

// TestOperatingDocLinks: every in-page link of docs/operating.md points to
// a heading that exists.
func TestOperatingDocLinks(t *testing.T) {
	md := string(readFile(t, "docs/operating.md"))
	anchors := githubAnchors(md)
	links := regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(md, -1)
	if len(links) < 10 {
		t.Fatalf("only %d in-page links found", len(links))
	}
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("link #%s: no such heading", l[1])
		}
	}
}

// TestReliefOnDashboardsAndAlerts: the cordon and move series (spec R3.8)
// have a dashboard panel, and the states an operator must act on have an
// alert.
func TestReliefOnDashboardsAndAlerts(t *testing.T) {
	var queries strings.Builder
	files, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParseDashboard(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range d.AllPanels() {
			for _, tg := range p.Targets {
				queries.WriteString(tg.Expr + "\n")
			}
		}
	}
	for _, m := range []string{
		"kafka_disk_guard_log_dir_cordoned", "kafka_disk_guard_log_dir_cordon_held", "kafka_disk_guard_cordon_supported",
		"kafka_disk_guard_relief_moves_in_progress", "kafka_disk_guard_relief_move_incoming_bytes",
		"kafka_disk_guard_relief_move_planned_bytes", "kafka_disk_guard_relief_move_skipped", "kafka_disk_guard_relief_moves_total",
		"kafka_disk_guard_relief_move_throttle_bytes_per_second", "kafka_disk_guard_relief_move_throttle_restore_failed",
	} {
		if !regexp.MustCompile(`\b` + m + `\b`).MatchString(queries.String()) {
			t.Errorf("no dashboard panel reads %s", m)
		}
	}
	exprs := map[string]string{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
		}
	}
	for alert, m := range map[string]string{
		"KafkaDiskGuardCordonHeld":              "kafka_disk_guard_log_dir_cordon_held",
		"KafkaDiskGuardCordonUnsupported":       "kafka_disk_guard_log_dir_cordon_held",
		"KafkaDiskGuardMoveThrottleNotRestored": "kafka_disk_guard_relief_move_throttle_restore_failed",
		"KafkaDiskGuardMoveStalled":             "kafka_disk_guard_relief_moves_in_progress",
	} {
		if !strings.Contains(exprs[alert], m) {
			t.Errorf("alert %s missing or not on %s", alert, m)
		}
	}
}
