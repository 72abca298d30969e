package enforcer

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// docRow is one metric of a table of docs/metrics.md.
type docRow struct {
	typ    string
	labels []string
}

// docMetrics reads the metric tables of the named sections of
// docs/metrics.md.
func docMetrics(t *testing.T, sections ...string) map[string]docRow {
	t.Helper()
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docRow{}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if !slices.Contains(sections, section) || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		r := docRow{typ: strings.TrimSpace(cells[1])}
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				r.labels = append(r.labels, l)
			}
		}
		sort.Strings(r.labels)
		out[strings.Trim(strings.TrimSpace(cells[0]), "`")] = r
	}
	return out
}

var (
	fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)
	labelsRE = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// TestMetricsDocumented: every metric the enforcer registers is in the
// Enforcer, Evidence and Write protection sections of docs/metrics.md with its labels (and
// type, for those with a series from the start), and every metric listed
// there is registered.
func TestMetricsDocumented(t *testing.T) {
	docs := docMetrics(t, "Enforcer (spec R3, R4)", "Evidence (spec R7)", "Write protection (spec R8)", "Cordon (spec R3.8)")
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.initActionSeries(CloudProfile())
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range []prometheus.Collector{m.enabled, m.band, m.actions, m.actionBytes, m.unexpiredBytes,
			m.reconciles, m.duration, m.blocked, m.lowered, m.operatorChanged, m.ev.identity, m.ev.missingRights, m.ev.clockJump, m.ev.clockJumps,
			m.ev.purgedWindow, m.ev.purgeChecks, m.ev.heldTopics, m.prot.active, m.prot.wanted, m.prot.errors,
			m.prot.cluster, m.prot.topics, m.prot.leaseAge, m.prot.lease, m.prot.recordBytes, m.prot.ledgerLost, m.prot.undecodable, m.prot.standby,
			m.cordon.cordoned, m.cordon.held, m.cordon.supported} {
			c.Describe(ch)
		}
		close(ch)
	}()
	registered := map[string][]string{}
	for d := range ch {
		s := d.String()
		name := fqNameRE.FindStringSubmatch(s)[1]
		var labels []string
		if l := labelsRE.FindStringSubmatch(s); l != nil && l[1] != "" {
			labels = strings.Split(l[1], ",")
		}
		sort.Strings(labels)
		registered[name] = labels
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, ok := registered[mf.GetName()]; !ok {
			t.Errorf("%s is registered but not described here: add its collector to the test", mf.GetName())
		}
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
	}
	for _, mf := range mfs {
		if d, ok := docs[mf.GetName()]; ok && d.typ != strings.ToLower(mf.GetType().String()) {
			t.Errorf("%s: documented as %s, registered as %s", mf.GetName(), d.typ, mf.GetType())
		}
	}
	for name := range docs {
		if _, ok := registered[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which the enforcer does not register", name)
		}
	}
}

var matcherRE = regexp.MustCompile(`kafka_disk_guard_enforcer_blocked\{reason(=~|!~|=)"([^"]+)"\}`)

// Every block reason has exactly one alert (issue 11 point 7): the
// evidence gates' their own, the others the generic blocked alert; and
// the design doc's safety table names every one.
func TestEveryBlockReasonAlertedAndDocumented(t *testing.T) {
	rules, err := os.ReadFile("../alerts/kafka-disk-guard.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	matchers := matcherRE.FindAllStringSubmatch(string(rules), -1)
	if len(matchers) == 0 {
		t.Fatal("no alert on kafka_disk_guard_enforcer_blocked")
	}
	raw, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, safety, _ := strings.Cut(string(raw), "### Safety: when destructive actions are held back")
	safety, _, _ = strings.Cut(safety, "\n### ")
	var table []string
	for _, l := range strings.Split(safety, "\n") {
		if strings.HasPrefix(l, "| ") {
			table = append(table, l)
		}
	}
	design := strings.Join(table, "\n")
	for _, r := range blockReasons() {
		n := 0
		for _, m := range matchers {
			re := regexp.MustCompile("^(?:" + m[2] + ")$")
			switch m[1] {
			case "=":
				if m[2] == string(r) {
					n++
				}
			case "=~":
				if re.MatchString(string(r)) {
					n++
				}
			case "!~":
				if !re.MatchString(string(r)) {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("block reason %s is selected by %d alert matchers, want 1", r, n)
		}
		if !strings.Contains(design, "(`"+string(r)+"`") {
			t.Errorf("docs/design.md's safety table does not name %s", r)
		}
	}
}
