// Package deploycheck checks the deployment artefacts against the product's
// contracts: every PromQL expression in dashboards/ and alerts/ parses and
// uses only metrics documented in docs/metrics.md; every alert has a runbook
// section and promtool tests; the Helm chart's copies of the rules and
// dashboards are identical to the originals.
package deploycheck

import (
	"bufio"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// metricRow matches a metrics table row: | `name` | type | labels | meaning |
var metricRow = regexp.MustCompile("^\\|\\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\\s*\\|\\s*([a-z]+)\\s*\\|")

// synthetic are series Prometheus itself adds to every target; the only
// names outside docs/metrics.md that rules may use.
func synthetic() map[string]string {
	return map[string]string{"up": "gauge"}
}

// DocumentedMetrics reads the metric tables of docs/metrics.md and returns
// every series name a query may select, with its type. A histogram adds
// its _bucket, _sum and _count series; a summary its _sum and _count.
func DocumentedMetrics(markdown string) (map[string]string, error) {
	names := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(markdown))
	for sc.Scan() {
		m := metricRow.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		name, typ := m[1], m[2]
		switch typ {
		case "gauge", "counter":
			names[name] = typ
		case "histogram":
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = typ
			}
		case "summary":
			names[name] = typ
			for _, s := range []string{"_sum", "_count"} {
				names[name+s] = typ
			}
		default:
			return nil, fmt.Errorf("metric %s: unknown type %q", name, typ)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics tables: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no metric rows found")
	}
	return names, nil
}

// SelectedMetrics parses a PromQL expression and returns the metric names
// its selectors read, sorted. A selector without a fixed metric name is an
// error: it could read anything.
func SelectedMetrics(expr string) ([]string, error) {
	p := parser.NewParser(parser.Options{})
	ast, err := p.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	set := map[string]bool{}
	var selErr error
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" && selErr == nil {
			selErr = fmt.Errorf("selector %s has no fixed metric name", vs)
		}
		if name != "" {
			set[name] = true
		}
		return nil
	})
	if selErr != nil {
		return nil, selErr
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// CheckExpr parses expr and reports every metric it reads that is not
// documented.
func CheckExpr(expr string, documented map[string]string) error {
	names, err := SelectedMetrics(expr)
	if err != nil {
		return err
	}
	var undocumented []string
	for _, n := range names {
		if _, ok := documented[n]; ok {
			continue
		}
		if _, ok := synthetic()[n]; ok {
			continue
		}
		undocumented = append(undocumented, n)
	}
	if len(undocumented) > 0 {
		return fmt.Errorf("undocumented metrics %v in %q", undocumented, expr)
	}
	if len(names) == 0 {
		return fmt.Errorf("no metric selected by %q", expr)
	}
	return nil
}
