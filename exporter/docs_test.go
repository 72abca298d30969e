package exporter

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// docMetric is one row of a table in docs/metrics.md.
type docMetric struct {
	section, name, typ string
	labels             []string
	meaning, example   string
}

// The sections of docs/metrics.md this package's metrics belong to.
func exporterSections() []string {
	return []string{"Disk usage (spec R2)", "Segments (spec R1)", "Reserved space (spec R5)", "Agent health"}
}

func readDocs(t *testing.T) []docMetric {
	t.Helper()
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docMetric
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		m := docMetric{section: section, name: strings.Trim(cells[0], "`"), typ: cells[1]}
		if cells[2] != "" {
			for _, l := range strings.Split(cells[2], ",") {
				m.labels = append(m.labels, strings.TrimSpace(l))
			}
		}
		sort.Strings(m.labels)
		m.meaning = cells[3]
		if len(cells) > 4 {
			m.example = strings.Trim(cells[4], "`")
		}
		out = append(out, m)
	}
	return out
}

// registered gathers the fixture (which makes every metric appear) and
// returns each family's type and sorted label names.
func registered(t *testing.T, perPartition bool) map[string]docMetric {
	t.Helper()
	reg := newTestRegistry(t, Config{PerPartition: perPartition}, staticSource{fixtureSnapshot()})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docMetric{}
	for _, mf := range mfs {
		m := docMetric{name: mf.GetName(), typ: strings.ToLower(mf.GetType().String())}
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			m.labels = append(m.labels, lp.GetName())
		}
		sort.Strings(m.labels)
		out[m.name] = m
	}
	return out
}

// described lists the names of every Desc the collector describes.
func described(t *testing.T) []string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	newCollector(Config{}, discard(), staticSource{}).Describe(ch)
	close(ch)
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		names = append(names, re.FindStringSubmatch(d.String())[1])
	}
	sort.Strings(names)
	return names
}

// TestMetricsDocumented: every metric the exporter registers is in
// docs/metrics.md with its type, labels and a valid example line, and every
// metric of the exporter's sections there is registered.
func TestMetricsDocumented(t *testing.T) {
	docs := readDocs(t)
	mine := map[string]docMetric{}
	for _, d := range docs {
		if slices.Contains(exporterSections(), d.section) {
			mine[d.name] = d
		}
	}
	var docNames []string
	for n := range mine {
		docNames = append(docNames, n)
	}
	sort.Strings(docNames)
	if got := described(t); !slices.Equal(got, docNames) {
		t.Errorf("described metrics differ from the docs' exporter sections:\n described %v\n documented %v", got, docNames)
	}

	reg := registered(t, false)
	regPP := registered(t, true)
	if len(reg) != len(docNames) {
		t.Errorf("fixture gathers %d metrics, docs list %d: the fixture should exercise every metric", len(reg), len(docNames))
	}
	exampleRe := regexp.MustCompile(`^([a-z_]+)(?:\{(.*)\})? (\S+)$`)
	labelRe := regexp.MustCompile(`([a-z_]+)="[^"]*"`)
	for _, d := range mine {
		t.Run(d.name, func(t *testing.T) {
			r, ok := reg[d.name]
			if !ok {
				t.Fatalf("documented but not exported")
			}
			if r.typ != d.typ {
				t.Errorf("type: exported %s, documented %s", r.typ, d.typ)
			}
			if !slices.Equal(r.labels, d.labels) {
				t.Errorf("labels: exported %v, documented %v", r.labels, d.labels)
			}
			perPartition := strings.Contains(d.meaning, "per-partition")
			hasPartition := slices.Contains(regPP[d.name].labels, "partition")
			if perPartition != hasPartition {
				t.Errorf("per-partition: documented %v, exported %v", perPartition, hasPartition)
			}
			m := exampleRe.FindStringSubmatch(d.example)
			if m == nil || m[1] != d.name {
				t.Fatalf("example %q is not a sample line of %s", d.example, d.name)
			}
			var exLabels []string
			for _, lm := range labelRe.FindAllStringSubmatch(m[2], -1) {
				exLabels = append(exLabels, lm[1])
			}
			sort.Strings(exLabels)
			if !slices.Equal(exLabels, d.labels) {
				t.Errorf("example labels %v, documented %v", exLabels, d.labels)
			}
		})
	}
}
