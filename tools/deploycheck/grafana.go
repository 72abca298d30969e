package deploycheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a Grafana panel; rows nest panels when collapsed.
type Panel struct {
	ID      int      `json:"id"`
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Target is one panel query.
type Target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// QueryString returns a query variable's query (a string, or an object
// with a "query" field in newer Grafana versions).
func (v Variable) QueryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

// AllPanels flattens rows.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var (
	grafanaRange = regexp.MustCompile(`\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}`)
	grafanaVar   = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?|\[\[[a-zA-Z_][a-zA-Z0-9_]*\]\]`)
	labelValues  = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	queryResult  = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
)

// PromQLOf turns a Grafana query into plain PromQL: range variables become
// 5m, other variables a regex-safe placeholder (they appear inside label
// matcher strings). Only label_values(selector, label) and
// query_result(expr) variable functions are supported.
func PromQLOf(q string) (string, error) {
	if m := labelValues.FindStringSubmatch(q); m != nil {
		q = m[1]
	} else if m := queryResult.FindStringSubmatch(q); m != nil {
		q = m[1]
	} else if strings.HasPrefix(strings.TrimSpace(q), "label_values(") || strings.HasPrefix(strings.TrimSpace(q), "metrics(") {
		return "", fmt.Errorf("unsupported variable query %q", q)
	}
	q = grafanaRange.ReplaceAllString(q, "5m")
	return grafanaVar.ReplaceAllString(q, "placeholder"), nil
}

// ParseDashboard decodes a dashboard, rejecting unknown top-level shape
// errors (invalid JSON).
func ParseDashboard(data []byte) (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("decode dashboard: %w", err)
	}
	return d, nil
}
