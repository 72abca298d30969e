package exporter

import (
	"slices"
	"sort"
	"strconv"
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
// oldest eligible segment's age and appended bytes (spec R1, R1.6): the
// figures of agent.Summary, one series per state and reason, zero
// included, so alerts and dashboards never see a series appear out of
// nothing.
func (c *collector) collectTopics(ch chan<- prometheus.Metric, v *view, now time.Time) {
	states := agent.States()
	reasons := agent.RetainedReasons()
	labels := make([]string, 0, 4)
	for _, d := range v.topics {
		for i := range d.topics {
			t := &d.topics[i]
			labels = append(labels[:0], d.logDir, t.Topic)
			if c.cfg.PerPartition {
				labels = append(labels, strconv.FormatInt(int64(t.Partition), 10))
			}
			n := len(labels)
			for _, s := range states {
				labels = append(labels[:n], string(s))
				gauge(ch, c.d.segments, float64(t.Segments.Of(s)), labels...)
				gauge(ch, c.d.segmentBytes, float64(t.Bytes.Of(s)), labels...)
			}
			for _, r := range reasons {
				labels = append(labels[:n], string(r))
				gauge(ch, c.d.expiredRetained, float64(t.Expired.Of(r)), labels...)
			}
			labels = labels[:n]
			counter(ch, c.d.appended, float64(t.AppendedBytes), labels...)
			if !t.OldestEligible.IsZero() {
				gauge(ch, c.d.oldestEligibleAge, max(0, now.Sub(t.OldestEligible).Seconds()), labels...)
			}
		}
	}
}

// collectReserved emits reserved space per topic and per broker (spec R5).
func (c *collector) collectReserved(ch chan<- prometheus.Metric, v *view) {
	for k, r := range v.reserved {
		if c.cfg.PerPartition {
			gauge(ch, c.d.reserved, r, k.topic, strconv.FormatInt(int64(k.partition), 10), string(k.basis))
		} else {
			gauge(ch, c.d.reserved, r, k.topic, string(k.basis))
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
