package exporter

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
// family is emitted whole, in the registry's sort order (emitRows).
func (c *collector) collectTopics(ch chan<- prometheus.Metric, v *view, now time.Time) {
	states := byString(agent.States(), func(s agent.State) string { return string(s) })
	reasons := byString(agent.RetainedReasons(), func(r agent.Reason) string { return string(r) })
	tiers := byString(agent.Tiers(), agent.Tier.String)
	none := []labelled[struct{}]{{}} // the extra label of a family without one
	for _, f := range []struct {
		d *prometheus.Desc
		v func(t *agent.TopicSummary, s agent.State) int64
	}{
		{c.d.segments, func(t *agent.TopicSummary, s agent.State) int64 { return t.Segments.Of(s) }},
		{c.d.segmentBytes, func(t *agent.TopicSummary, s agent.State) int64 { return t.Bytes.Of(s) }},
	} {
		emitRows(c, v, states, func(t *agent.TopicSummary, s string, x int, labels []string) {
			gauge(ch, f.d, float64(f.v(t, states[x].v)), append(labels, s)...)
		})
	}
	emitRows(c, v, reasons, func(t *agent.TopicSummary, s string, x int, labels []string) {
		gauge(ch, c.d.expiredRetained, float64(t.Expired.Of(reasons[x].v)), append(labels, s)...)
	})
	tiered := func(t *agent.TopicSummary) bool { return t.Tiered.Partitions > 0 }
	for _, f := range []struct {
		d *prometheus.Desc
		v func(t *agent.TopicSummary, tier agent.Tier) int64
	}{
		{c.d.tieredSegments, func(t *agent.TopicSummary, tier agent.Tier) int64 { return t.Tiered.Segments.Of(tier) }},
		{c.d.tieredBytes, func(t *agent.TopicSummary, tier agent.Tier) int64 { return t.Tiered.Bytes.Of(tier) }},
	} {
		emitRows(c, v, tiers, func(t *agent.TopicSummary, s string, x int, labels []string) {
			if tiered(t) {
				gauge(ch, f.d, float64(f.v(t, tiers[x].v)), append(labels, s)...)
			}
		})
	}
	emitRows(c, v, none, func(t *agent.TopicSummary, _ string, _ int, labels []string) {
		if tiered(t) {
			gauge(ch, c.d.tieredEligibleLocally, float64(t.Tiered.EligibleLocally), labels...)
		}
	})
	emitRows(c, v, none, func(t *agent.TopicSummary, _ string, _ int, labels []string) {
		if tiered(t) {
			gauge(ch, c.d.tieredUnreadable, float64(t.Tiered.OffsetsUnknown), labels...)
		}
	})
	emitRows(c, v, none, func(t *agent.TopicSummary, _ string, _ int, labels []string) {
		counter(ch, c.d.appended, float64(t.AppendedBytes), labels...)
	})
	emitRows(c, v, none, func(t *agent.TopicSummary, _ string, _ int, labels []string) {
		if !t.OldestEligible.IsZero() {
			gauge(ch, c.d.oldestEligibleAge, max(0, now.Sub(t.OldestEligible).Seconds()), labels...)
		}
	})
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

// emitRows calls emit once per topic (or partition) of every log dir and
// per value of the family's extra label (state, reason or tier; none for
// a family without one), with the labels log_dir, topic and (per
// partition) partition in the Desc's order; emit appends the extra value.
// The calls come in the order client_golang sorts a family to before
// encoding it: by label values taken in label-name order (log_dir,
// partition, then the extra label, then topic). A family emitted in that
// order is sorted in one pass; emitted topic by topic, its sort took 40%
// of a per-partition scrape at 10k partitions.
func emitRows[T any](c *collector, v *view, extra []labelled[T], emit func(t *agent.TopicSummary, s string, x int, labels []string)) {
	labels := make([]string, 0, 4)
	for _, di := range v.topicOrder {
		d := &v.topics[di]
		for g := 0; g < len(d.rows); {
			part := d.parts[d.rows[g]]
			e := g + 1
			for e < len(d.rows) && d.parts[d.rows[e]] == part {
				e++
			}
			for x := range extra {
				for _, r := range d.rows[g:e] {
					t := &d.topics[r]
					labels = append(labels[:0], d.logDir, t.Topic)
					if c.cfg.PerPartition {
						labels = append(labels, part)
					}
					emit(t, extra[x].s, x, labels)
				}
			}
			g = e
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
