//go:build integration

package monitoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-disk-guard/kafka-disk-guard/e2e/e2etest"
)

// --- dashboards ----------------------------------------------------------

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"` // collapsed rows
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
		Hide  bool   `json:"hide"`
	} `json:"targets"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
}

type dashboard struct {
	file       string
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

func readDashboards(t *testing.T, root string) []dashboard {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards in dashboards/")
	}
	var out []dashboard
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.file = filepath.Base(f)
		out = append(out, d)
	}
	return out
}

// query is one panel target.
type query struct{ panel, refID, expr string }

func (d dashboard) queries() []query {
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if tg.Expr != "" && !tg.Hide {
					out = append(out, query{p.Title, tg.RefID, tg.Expr})
				}
			}
		}
	}
	walk(d.Panels)
	return out
}

// promRegexValue is how Grafana writes a variable's value into a regex
// matcher (=~"$var"): regex-escaped, inside a PromQL string.
func promRegexValue(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// checkDashboards sets every dashboard's template variables (checking that
// each variable's own query offers the chosen value) and runs every panel
// query over the run: each must return at least one series.
func checkDashboards(ctx context.Context, t *testing.T, prom promAPI, root string, vars map[string]string, start, end time.Time) {
	t.Helper()
	step := time.Second
	// Grafana's $__rate_interval: max($__interval + scrape interval, 4 x scrape interval).
	fixed := map[string]string{
		"__rate_interval": "4s",
		"__interval":      "1s",
		"__range":         fmt.Sprintf("%ds", int(end.Sub(start).Seconds())+1),
	}
	for _, d := range readDashboards(t, root) {
		subst := func(q string) string {
			for k, v := range fixed {
				q = strings.ReplaceAll(q, "$"+k, v)
			}
			for k, v := range vars {
				q = strings.ReplaceAll(q, "$"+k, promRegexValue(v))
			}
			return q
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			want, ok := vars[v.Name]
			if !ok {
				t.Errorf("%s: variable %s: the test sets no value for it", d.file, v.Name)
				continue
			}
			def := v.Definition
			if def == "" {
				var q struct{ Query string }
				if json.Unmarshal(v.Query, &q) != nil {
					_ = json.Unmarshal(v.Query, &def)
				} else {
					def = q.Query
				}
			}
			m := labelValuesRE.FindStringSubmatch(subst(def))
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", d.file, v.Name, def)
				continue
			}
			sets, err := prom.labelSets(ctx, m[1], start, end)
			if err != nil {
				t.Errorf("%s: variable %s: %v", d.file, v.Name, err)
				continue
			}
			var offered []string
			for _, s := range sets {
				if !slices.Contains(offered, s[m[2]]) {
					offered = append(offered, s[m[2]])
				}
			}
			if !slices.Contains(offered, want) {
				t.Errorf("%s: variable %s offers %q, not %q", d.file, v.Name, offered, want)
			}
		}
		qs := d.queries()
		if len(qs) == 0 {
			t.Errorf("%s: no panel queries", d.file)
		}
		for _, q := range qs {
			expr := subst(q.expr)
			if strings.Contains(expr, "$") {
				t.Errorf("dashboard %q panel %q: unset variable in %s", d.Title, q.panel, expr)
				continue
			}
			res, err := prom.rangeQuery(ctx, expr, start, end, step)
			switch {
			case err != nil:
				t.Errorf("dashboard %q panel %q (%s): %v", d.Title, q.panel, q.refID, err)
			case len(res) == 0:
				t.Errorf("dashboard %q panel %q (%s) shows nothing during the run: %s", d.Title, q.panel, q.refID, expr)
			}
		}
		t.Logf("%s: %d panel queries returned series, variables %v", d.file, len(qs), slices.Sorted(maps.Keys(vars)))
	}
}

// --- the chart's PrometheusRule against what Prometheus loaded -------------

type chartRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type chartGroup struct {
	Name  string      `yaml:"name"`
	Rules []chartRule `yaml:"rules"`
}

func chartRules(t *testing.T, profile string) []chartGroup {
	t.Helper()
	for _, o := range e2etest.Template(t, "--set", "prometheusRule.enabled=true", "--set", "enforcer.profile="+profile) {
		if o.Kind != "PrometheusRule" {
			continue
		}
		var spec struct {
			Groups []chartGroup `yaml:"groups"`
		}
		if err := o.Spec.Decode(&spec); err != nil {
			t.Fatal(err)
		}
		return spec.Groups
	}
	t.Fatal("the chart rendered no PrometheusRule")
	return nil
}

// checkChartRules: the chart's PrometheusRule holds the rules Prometheus
// loaded: same groups and alerts in the same order, same expressions (as
// Prometheus formats them), labels and annotations, and the same `for:`
// once scaled. Every loaded rule evaluated without error.
func checkChartRules(ctx context.Context, t *testing.T, prom promAPI, profile string) {
	t.Helper()
	loaded, err := prom.rules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]loadedGroup{}
	for _, g := range loaded {
		byName[g.Name] = g
		for _, r := range g.Rules {
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	chart := chartRules(t, profile)
	if len(chart) != len(loaded) {
		t.Errorf("the chart renders %d groups, Prometheus loaded %d", len(chart), len(loaded))
	}
	n := 0
	for _, cg := range chart {
		lg, ok := byName[cg.Name]
		if !ok {
			t.Errorf("chart group %s was not loaded", cg.Name)
			continue
		}
		if len(lg.Rules) != len(cg.Rules) {
			t.Errorf("group %s: chart has %d rules, loaded %d", cg.Name, len(cg.Rules), len(lg.Rules))
			continue
		}
		for i, cr := range cg.Rules {
			lr := lg.Rules[i]
			n++
			if lr.Name != cr.Alert {
				t.Errorf("group %s rule %d: chart %s, loaded %s", cg.Name, i, cr.Alert, lr.Name)
				continue
			}
			want, err := prom.format(ctx, cr.Expr)
			if err != nil {
				t.Errorf("%s: format the chart's expr: %v", cr.Alert, err)
			} else if oneLine(want) != oneLine(lr.Query) {
				t.Errorf("%s: chart expr %q, loaded %q", cr.Alert, want, lr.Query)
			}
			d, err := time.ParseDuration(cr.For)
			if err != nil {
				t.Errorf("%s: chart for %q: %v", cr.Alert, cr.For, err)
			} else if got := time.Duration(lr.Duration * float64(time.Second)); got != d/forScale {
				t.Errorf("%s: loaded for %s, chart %s / %d", cr.Alert, got, d, forScale)
			}
			if !maps.Equal(cr.Labels, lr.Labels) {
				t.Errorf("%s: chart labels %v, loaded %v", cr.Alert, cr.Labels, lr.Labels)
			}
			if !maps.Equal(cr.Annotations, lr.Annotations) {
				t.Errorf("%s: chart annotations %v, loaded %v", cr.Alert, cr.Annotations, lr.Annotations)
			}
		}
	}
	t.Logf("the chart's PrometheusRule (profile %s) holds the %d loaded rules in %d groups", profile, n, len(chart))
}

// shippedGroups reads alerts/kafka-disk-guard.rules.yml as shipped.
func shippedGroups(t *testing.T, root string) []chartGroup {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "alerts", "kafka-disk-guard.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []chartGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.Groups
}

// oneLine joins a query's lines: format_query pretty-prints long queries
// over several lines, the rules API prints them on one.
func oneLine(q string) string { return strings.Join(strings.Fields(q), " ") }
