package reserve

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestMetricsDocumented: the admission metrics in docs/metrics.md (section
// "Admission") are exactly those the model and the handler register, with
// the same types and labels, and each has an example line of its own.
func TestMetricsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		typ     string
		labels  []string
		example string
	}
	docs := map[string]row{}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if !strings.HasPrefix(section, "Admission") || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		r := row{typ: cells[1]}
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				r.labels = append(r.labels, l)
			}
		}
		sort.Strings(r.labels)
		if len(cells) > 4 {
			r.example = strings.Trim(cells[4], "`")
		}
		docs[strings.Trim(cells[0], "`")] = r
	}
	_, reg := newHandler(t, Config{}, &fakeSource{info: oneBroker(10 * gib)}, nil)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		name := mf.GetName()
		names = append(names, name)
		d, ok := docs[name]
		if !ok {
			t.Errorf("%s is registered but not in docs/metrics.md's Admission section", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != d.typ {
			t.Errorf("%s: type %s, documented %s", name, typ, d.typ)
		}
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		sort.Strings(labels)
		if !slices.Equal(labels, d.labels) {
			t.Errorf("%s: labels %v, documented %v", name, labels, d.labels)
		}
		if !strings.HasPrefix(d.example, name) {
			t.Errorf("%s: example %q is not a sample of it", name, d.example)
		}
	}
	for name := range docs {
		if !slices.Contains(names, name) {
			t.Errorf("%s is documented but not registered", name)
		}
	}
}
