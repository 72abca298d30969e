package enforcer

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The reassigner's metrics and docs/metrics.md agree (names, types,
// labels).
func TestReassignMetricsDocumented(t *testing.T) {
	docs := docMetrics(t, "Moves across brokers (spec R3.8)")
	reg := prometheus.NewRegistry()
	m, err := newReassignMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() {
		for _, c := range []prometheus.Collector{m.inProgress, m.skipped, m.reassignments, m.throttle, m.restoreFailed} {
			c.Describe(ch)
		}
		close(ch)
	}()
	registered := map[string][]string{}
	for d := range ch {
		s := d.String()
		var labels []string
		if l := labelsRE.FindStringSubmatch(s); l != nil && l[1] != "" {
			labels = strings.Split(l[1], ",")
		}
		sort.Strings(labels)
		registered[fqNameRE.FindStringSubmatch(s)[1]] = labels
	}
	types := map[string]string{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		types[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	for name, labels := range registered {
		d, ok := docs[name]
		if !ok {
			t.Errorf("%s is registered but not in docs/metrics.md", name)
			continue
		}
		if !slices.Equal(d.labels, labels) {
			t.Errorf("%s: documented labels %v, registered %v", name, d.labels, labels)
		}
		if d.typ != types[name] {
			t.Errorf("%s: documented as %s, registered as %s", name, d.typ, types[name])
		}
	}
	for name := range docs {
		if _, ok := registered[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which the reassigner does not register", name)
		}
	}
}
