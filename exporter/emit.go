package exporter

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// collectUsage emits the disk usage of each log dir (spec R2). A log dir
// the last scan could not read is reported with log_dir_error 1 and what was
// known of it before; it never fails the scrape.
func (c *collector) collectUsage(ch chan<- prometheus.Metric, v *view) {
	for i := range v.logDirs {
		ld := &v.logDirs[i]
		errVal := 0.0
		if ld.Err != nil {
			errVal = 1
		}
		gauge(ch, c.d.logDirError, errVal, ld.Path)
		gauge(ch, c.d.logDirPending, float64(ld.PendingDeleteBytes), ld.Path)
		if ld.Usage.CapacityBytes == 0 {
			continue // capacity never known: no usage to report
		}
		basis := string(ld.Usage.Basis)
		if basis == "" {
			basis = string(agent.CapacityFilesystem)
		}
		gauge(ch, c.d.capacity, float64(ld.Usage.CapacityBytes), ld.Path, basis)
		gauge(ch, c.d.used, float64(ld.Usage.UsedBytes), ld.Path)
		gauge(ch, c.d.available, float64(ld.Usage.AvailableBytes), ld.Path)
		gauge(ch, c.d.usageRatio, ld.Usage.Ratio(), ld.Path)
	}
}

// collectTopics emits segment states, expired-but-retained bytes, the
// oldest eligible segment's age, appended bytes (spec R1, R1.6) and, for
// a tiered topic, its segments by tier (R1.7): the figures of
// agent.Summary, one series per state, reason and tier, zero included, so
// alerts and dashboards never see a series appear out of nothing. Each
// family is emitted whole, in the registry's sort order (emitFamily).
func (c *collector) collectTopics(ch chan<- prometheus.Metric, v *view, now time.Time) {
	states := byString(agent.States(), func(s agent.State) string { return s.String() })
	reasons := byString(agent.RetainedReasons(), func(r agent.Reason) string { return r.String() })
	tiers := byString(agent.Tiers(), agent.Tier.String)
	none := []labelled[struct{}]{{}} // the extra label of a family without one
	rows := newTopicRows(v, c.cfg.PerPartition)
	always := func(*agent.TopicSummary) bool { return true }
	tiered := func(t *agent.TopicSummary) bool { return t.Tiered.Partitions > 0 }

	emitFamily(ch, rows, family[agent.State]{c.d.segments, prometheus.GaugeValue, "state", states}, always,
		func(t *agent.TopicSummary, s agent.State) float64 { return float64(t.Segments.Of(s)) })
	emitFamily(ch, rows, family[agent.State]{c.d.segmentBytes, prometheus.GaugeValue, "state", states}, always,
		func(t *agent.TopicSummary, s agent.State) float64 { return float64(t.Bytes.Of(s)) })
	emitFamily(ch, rows, family[agent.Reason]{c.d.expiredRetained, prometheus.GaugeValue, "reason", reasons}, always,
		func(t *agent.TopicSummary, r agent.Reason) float64 { return float64(t.Expired.Of(r)) })
	emitFamily(ch, rows, family[agent.Tier]{c.d.tieredSegments, prometheus.GaugeValue, "tier", tiers}, tiered,
		func(t *agent.TopicSummary, tier agent.Tier) float64 { return float64(t.Tiered.Segments.Of(tier)) })
	emitFamily(ch, rows, family[agent.Tier]{c.d.tieredBytes, prometheus.GaugeValue, "tier", tiers}, tiered,
		func(t *agent.TopicSummary, tier agent.Tier) float64 { return float64(t.Tiered.Bytes.Of(tier)) })
	emitFamily(ch, rows, family[struct{}]{c.d.tieredEligibleLocally, prometheus.GaugeValue, "", none}, tiered,
		func(t *agent.TopicSummary, _ struct{}) float64 { return float64(t.Tiered.EligibleLocally) })
	emitFamily(ch, rows, family[struct{}]{c.d.tieredUnreadable, prometheus.GaugeValue, "", none}, tiered,
		func(t *agent.TopicSummary, _ struct{}) float64 { return float64(t.Tiered.OffsetsUnknown) })
	emitFamily(ch, rows, family[struct{}]{c.d.appended, prometheus.CounterValue, "", none}, always,
		func(t *agent.TopicSummary, _ struct{}) float64 { return float64(t.AppendedBytes) })
	emitFamily(ch, rows, family[struct{}]{c.d.oldestEligibleAge, prometheus.GaugeValue, "", none},
		func(t *agent.TopicSummary) bool { return !t.OldestEligible.IsZero() },
		func(t *agent.TopicSummary, _ struct{}) float64 { return max(0, now.Sub(t.OldestEligible).Seconds()) })
}

// family is one metric family of the per-topic rows: its descriptor and
// value type, and its extra label's name and values ("" and one empty
// value: no extra label).
type family[T any] struct {
	desc   *prometheus.Desc
	vt     prometheus.ValueType
	label  string
	values []labelled[T]
}

// labelled is a label value (a state, reason or tier) with its string.
type labelled[T any] struct {
	v T
	s string
}

// byString returns vs with their label strings, sorted by string: the
// order of that label's values in the registry's sort.
func byString[T any](vs []T, str func(T) string) []labelled[T] {
	out := make([]labelled[T], len(vs))
	for i, v := range vs {
		out[i] = labelled[T]{v, str(v)}
	}
	slices.SortFunc(out, func(a, b labelled[T]) int { return strings.Compare(a.s, b.s) })
	return out
}

// topicRow is one topic (or partition) of a log dir with its label pairs,
// built once per scrape and shared by the series of every family.
type topicRow struct {
	t                   *agent.TopicSummary
	logDir, part, topic *dto.LabelPair // part nil per topic
}

// topicRows are the rows of every log dir in the registry's order, cut
// into groups of equal log dir and partition label: within a group a
// family with an extra label (state, reason, tier) sorts by that label
// before the topic.
type topicRows struct {
	rows   []topicRow
	groups [][2]int // [start, end) in rows
}

func newTopicRows(v *view, perPartition bool) *topicRows {
	names := struct{ logDir, part, topic string }{"log_dir", "partition", "topic"}
	n := 0
	for _, d := range v.topics {
		n += len(d.rows)
	}
	out := &topicRows{rows: make([]topicRow, 0, n)}
	pairs := make([]dto.LabelPair, 0, 2*n+len(v.topics)) // one allocation for every pair
	pair := func(name, value *string) *dto.LabelPair {
		pairs = append(pairs, dto.LabelPair{Name: name, Value: value})
		return &pairs[len(pairs)-1]
	}
	for _, di := range v.topicOrder {
		d := &v.topics[di]
		logDir := pair(&names.logDir, &d.logDir)
		for g := 0; g < len(d.rows); {
			p := d.parts[d.rows[g]]
			start := len(out.rows)
			var part *dto.LabelPair
			if perPartition {
				part = pair(&names.part, &d.parts[d.rows[g]])
			}
			for ; g < len(d.rows) && d.parts[d.rows[g]] == p; g++ {
				t := &d.topics[d.rows[g]]
				out.rows = append(out.rows, topicRow{t: t, logDir: logDir, part: part, topic: pair(&names.topic, &t.Topic)})
			}
			out.groups = append(out.groups, [2]int{start, len(out.rows)})
		}
	}
	return out
}

// sharedMetric is a gauge or counter whose label pairs are shared with
// other series (see emitFamily). It is what prometheus.NewConstMetric
// builds, without a copy of each label per series.
type sharedMetric struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair // sorted by name
	value   float64
	counter bool
	gauge   dto.Gauge // most series are gauges: allocated with the metric
}

func (m *sharedMetric) Desc() *prometheus.Desc { return m.desc }

func (m *sharedMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.counter {
		out.Counter = &dto.Counter{Value: &m.value}
	} else {
		m.gauge.Value = &m.value
		out.Gauge = &m.gauge
	}
	return nil
}

// emitFamily emits one series of d per row for which has is true and per
// value of the family's extra label (none for a family without one),
// labelled log_dir, topic, (per partition) partition and extraName.
//
// The series come in the order client_golang sorts a family to before
// encoding it: by label values taken in label-name order (log_dir,
// partition, the extra label, topic). A family emitted in that order is
// sorted in one pass; emitted topic by topic, its sort took 40% of a
// per-partition scrape at 10k partitions. The label pairs of a row are
// built once per scrape and shared by every series of the row, and a
// family's series are allocated together: NewConstMetric's copy of every
// label of every series was most of the rest.
func emitFamily[T any](ch chan<- prometheus.Metric, rows *topicRows, f family[T],
	has func(*agent.TopicSummary) bool, value func(*agent.TopicSummary, T) float64) {
	d, vt, extraName, extra := f.desc, f.vt, f.label, f.values
	extraPairs := make([]*dto.LabelPair, len(extra))
	if extraName != "" {
		for i := range extra {
			extraPairs[i] = &dto.LabelPair{Name: &extraName, Value: &extra[i].s}
		}
	}
	n := 0
	for i := range rows.rows {
		if has(rows.rows[i].t) {
			n += len(extra)
		}
	}
	metrics := make([]sharedMetric, 0, n)
	labels := make([]*dto.LabelPair, 0, 4*n)
	for _, g := range rows.groups {
		for x := range extra {
			for i := g[0]; i < g[1]; i++ {
				r := &rows.rows[i]
				if !has(r.t) {
					continue
				}
				start := len(labels)
				labels = append(labels, r.logDir)
				if r.part != nil {
					labels = append(labels, r.part)
				}
				if extraPairs[x] != nil {
					labels = append(labels, extraPairs[x])
				}
				labels = append(labels, r.topic)
				metrics = append(metrics, sharedMetric{
					desc: d, labels: labels[start:len(labels):len(labels)],
					value: value(r.t, extra[x].v), counter: vt == prometheus.CounterValue,
				})
				ch <- &metrics[len(metrics)-1]
			}
		}
	}
}

// collectReserved emits reserved space per topic and per broker (spec R5).
func (c *collector) collectReserved(ch chan<- prometheus.Metric, v *view) {
	for _, r := range v.reservedRows { // in the registry's order (basis, partition, topic)
		if c.cfg.PerPartition {
			gauge(ch, c.d.reserved, r.bytes, r.topic, r.partition, r.basis)
		} else {
			gauge(ch, c.d.reserved, r.bytes, r.topic, r.basis)
		}
	}
	for id, b := range v.brokers {
		if b.storage > 0 {
			gauge(ch, c.d.reservedPercent, b.reserved/b.storage*100, id)
		}
	}
}

// Known label values emitted even at zero, so rate() and alerts work from
// the first scrape.
func errorKinds() []agent.ErrorKind {
	return []agent.ErrorKind{agent.ErrBadName, agent.ErrCorruptIndex, agent.ErrVanished,
		agent.ErrPermission, agent.ErrLogDirMissing, agent.ErrIO}
}

func rescanTriggers() []string {
	return []string{"start", "periodic", "overflow", "log_dir_recovered"}
}

func watchModes() []string { return []string{"inotify", "polling"} }

// collectHealth emits the agent's own state.
func (c *collector) collectHealth(ch chan<- prometheus.Metric, snap *agent.Snapshot, now time.Time) {
	h := &snap.Health
	last := 0.0
	if !h.LastFullScan.IsZero() {
		last = float64(h.LastFullScan.UnixNano()) / 1e9
	}
	gauge(ch, c.d.lastScan, last)
	gauge(ch, c.d.scanDuration, h.LastFullScanDuration.Seconds())

	kinds := errorKinds()
	for _, k := range kinds {
		counter(ch, c.d.scanErrors, float64(h.ScanErrors[k]), string(k))
	}
	for _, k := range sortedExtra(h.ScanErrors, kinds) {
		counter(ch, c.d.scanErrors, float64(h.ScanErrors[k]), string(k))
	}
	triggers := rescanTriggers()
	for _, t := range triggers {
		counter(ch, c.d.rescans, float64(h.Rescans[t]), t)
	}
	for _, t := range sortedExtra(h.Rescans, triggers) {
		counter(ch, c.d.rescans, float64(h.Rescans[t]), t)
	}
	counter(ch, c.d.rereads, float64(h.PartitionRereads))

	modes := watchModes()
	for _, m := range modes {
		val := 0.0
		if h.WatchMode == m {
			val = 1
		}
		gauge(ch, c.d.watchMode, val, m)
	}
	if h.WatchMode != "" && !slices.Contains(modes, h.WatchMode) {
		gauge(ch, c.d.watchMode, 1, h.WatchMode)
	}
	gauge(ch, c.d.polledDirs, float64(h.PolledDirs))
	if !snap.ConfigsTime.IsZero() {
		gauge(ch, c.d.configsAge, max(0, now.Sub(snap.ConfigsTime).Seconds()))
	}
}

// sortedExtra returns the keys of m that are not in known, sorted.
func sortedExtra[K ~string](m map[K]uint64, known []K) []K {
	var extra []K
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	return extra
}
