package exporter

import (
	"log/slog"
	"runtime"
	"sync"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// descs holds every metric description of the collector.
type descs struct {
	// Disk usage (spec R2).
	capacity, used, available, usageRatio, logDirPending, logDirError *prometheus.Desc
	// What fills a log dir's filesystem besides live partitions (spec R7.3).
	nonKafka *prometheus.Desc
	// Segments (spec R1).
	segments, segmentBytes, expiredRetained, oldestEligibleAge, appended *prometheus.Desc
	// Tiered partitions (spec R1.7).
	tieredSegments, tieredBytes, tieredEligibleLocally, tieredUnreadable *prometheus.Desc
	// Partitions Kafka's retention does not visit (spec R1.2).
	retentionHeld *prometheus.Desc
	// Reserved space (spec R5).
	reserved, reservedPercent *prometheus.Desc
	// Agent health.
	lastScan, scanDuration, scanErrors, rescans, rereads, watchMode, polledDirs, configsAge, buildInfo *prometheus.Desc
	// Topic config provenance per log dir (spec R7.2).
	configMaxAge, configsWithout *prometheus.Desc
}

func newDescs(perPartition bool) descs {
	name := func(n string) string { return prometheus.BuildFQName(Namespace, "", n) }
	topic := []string{"log_dir", "topic"}
	reservedLabels := []string{"topic", "basis"}
	if perPartition {
		topic = append(topic, "partition")
		reservedLabels = []string{"topic", "partition", "basis"}
	}
	with := func(base []string, extra ...string) []string {
		return append(append([]string(nil), base...), extra...)
	}
	logDir := []string{"log_dir"}
	d := descs{
		capacity: prometheus.NewDesc(name("log_dir_capacity_bytes"),
			"Capacity of the log dir in bytes: the filesystem's size or the configured capacity (basis).", []string{"log_dir", "basis"}, nil),
		used: prometheus.NewDesc(name("log_dir_used_bytes"),
			"Bytes used: filesystem used bytes, or bytes under the log dir when a capacity is configured.", logDir, nil),
		available: prometheus.NewDesc(name("log_dir_available_bytes"),
			"Bytes still free for the broker in the log dir.", logDir, nil),
		usageRatio: prometheus.NewDesc(name("log_dir_usage_ratio"),
			"Used bytes / capacity of the log dir, 0-1.", logDir, nil),
		logDirPending: prometheus.NewDesc(name("log_dir_pending_delete_bytes"),
			"Bytes in .deleted files and -delete directories of the log dir.", logDir, nil),
		logDirError: prometheus.NewDesc(name("log_dir_error"),
			"1 when the last scan could not read the log dir, else 0.", logDir, nil),
		nonKafka: prometheus.NewDesc(name("log_dir_non_kafka_bytes"),
			"Used bytes of the log dir's filesystem that live partitions do not explain, by kind; once per filesystem, on its first log dir.",
			[]string{"log_dir", "kind"}, nil),

		segments: prometheus.NewDesc(name("segments"),
			"Segments by retention state (open, closed, eligible).", with(topic, "state"), nil),
		segmentBytes: prometheus.NewDesc(name("segment_bytes"),
			"Disk bytes of segments by retention state (open, closed, eligible).", with(topic, "state"), nil),
		expiredRetained: prometheus.NewDesc(name("expired_retained_bytes"),
			"Bytes past retention still on disk, by reason (open_segment, awaiting_deletion, pending_delete).", with(topic, "reason"), nil),
		oldestEligibleAge: prometheus.NewDesc(name("oldest_eligible_segment_age_seconds"),
			"Age of the largest timestamp of the oldest eligible segment.", topic, nil),
		appended: prometheus.NewDesc(name("topic_appended_bytes_total"),
			"Bytes appended to the topic's segments, observed from segment growth since the agent started.", topic, nil),

		tieredSegments: prometheus.NewDesc(name("tiered_segments"),
			"Segments of tiered partitions by tier (uploaded, local_only, unknown).", with(topic, "tier"), nil),
		tieredBytes: prometheus.NewDesc(name("tiered_segment_bytes"),
			"Disk bytes of tiered partitions' segments by tier (uploaded, local_only, unknown).", with(topic, "tier"), nil),
		tieredEligibleLocally: prometheus.NewDesc(name("tiered_eligible_locally_bytes"),
			"Disk bytes of tiered segments past local retention and uploaded: Kafka deletes the local copy, remote storage keeps it.", topic, nil),
		tieredUnreadable: prometheus.NewDesc(name("tiered_offsets_unknown_partitions"),
			"Tiered partitions whose remote offsets could not be read from the leader: nothing in them is eligible.", topic, nil),

		retentionHeld: prometheus.NewDesc(name("retention_held_bytes"),
			"Disk bytes of partitions whose retention Kafka does not run, by reason (moving, cleaner_disabled, log_dir_offline): nothing in them is eligible.",
			[]string{"log_dir", "reason"}, nil),

		reserved: prometheus.NewDesc(name("reserved_bytes"),
			"Bytes reserved for the topic's replicas on this broker (spec R5.1), by basis.", reservedLabels, nil),
		reservedPercent: prometheus.NewDesc(name("reserved_disk_space_percent"),
			"Total reserved bytes of the broker's partitions / its configured storage x 100.", []string{"broker_id"}, nil),
	}
	d.health(name, logDir)
	return d
}

// health sets the agent health and config provenance descriptors.
func (d *descs) health(name func(string) string, logDir []string) {
	d.lastScan = prometheus.NewDesc(name("last_scan_timestamp_seconds"),
		"Unix time of the last successful full scan (0 before the first).", nil, nil)
	d.scanDuration = prometheus.NewDesc(name("scan_duration_seconds"),
		"Duration of the last full scan.", nil, nil)
	d.scanErrors = prometheus.NewDesc(name("scan_errors_total"),
		"Scan errors by kind.", []string{"kind"}, nil)
	d.rescans = prometheus.NewDesc(name("rescans_total"),
		"Full scans by trigger.", []string{"trigger"}, nil)
	d.rereads = prometheus.NewDesc(name("partition_rereads_total"),
		"Partition directories re-read after a file event.", nil, nil)
	d.watchMode = prometheus.NewDesc(name("watch_mode"),
		"1 for the current watch mode (inotify, polling).", []string{"mode"}, nil)
	d.polledDirs = prometheus.NewDesc(name("polled_dirs"),
		"Directories watched by polling because inotify watches ran out.", nil, nil)
	d.configsAge = prometheus.NewDesc(name("topic_configs_age_seconds"),
		"Age of the topic configs in use.", nil, nil)
	d.configMaxAge = prometheus.NewDesc(name("topic_config_max_age_seconds"),
		"Age of the oldest topic config fetched from the cluster among the log dir's live topics.", logDir, nil)
	d.configsWithout = prometheus.NewDesc(name("topics_without_fetched_config"),
		"Live topics of the log dir whose config in use is not a successful lookup in the cluster, by reason.", []string{"log_dir", "reason"}, nil)
	d.buildInfo = prometheus.NewDesc(name("build_info"),
		"A metric with a constant '1' value labeled by version, revision and goversion of kafka-disk-guard.",
		[]string{"version", "revision", "goversion"}, nil)
}

func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.capacity, d.used, d.available, d.usageRatio, d.logDirPending, d.logDirError, d.nonKafka,
		d.segments, d.segmentBytes, d.expiredRetained, d.oldestEligibleAge, d.appended,
		d.tieredSegments, d.tieredBytes, d.tieredEligibleLocally, d.tieredUnreadable, d.retentionHeld,
		d.reserved, d.reservedPercent,
		d.lastScan, d.scanDuration, d.scanErrors, d.rescans, d.rereads, d.watchMode, d.polledDirs, d.configsAge, d.buildInfo,
		d.configMaxAge, d.configsWithout,
	}
}

// collector is a prometheus.Collector over the agent's latest snapshot.
type collector struct {
	cfg    Config
	logger *slog.Logger
	src    SnapshotSource
	d      descs

	// The aggregation of a snapshot depends only on the snapshot (which is
	// immutable), so it is computed once per snapshot and reused by every
	// scrape until the agent publishes the next one. The snapshot is held
	// weakly and the view keeps no partitions: between two scrapes the
	// agent publishes many snapshots, and a strong reference kept the
	// partitions of an old one alive beside the current one's (18 MB at a
	// million segments).
	mu       sync.Mutex
	lastSnap weak.Pointer[agent.Snapshot]
	lastView *view
}

func newCollector(cfg Config, logger *slog.Logger, src SnapshotSource) *collector {
	return &collector{cfg: cfg, logger: logger, src: src, d: newDescs(cfg.PerPartition)}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It reads the in-memory snapshot
// only.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.d.buildInfo, prometheus.GaugeValue, 1,
		c.cfg.Version, c.cfg.Revision, runtime.Version())
	snap := c.src.Snapshot()
	if snap == nil {
		return // no scan yet: only build_info
	}
	v := c.viewOf(snap)
	now := c.cfg.Now()
	c.collectUsage(ch, v)
	c.collectTopics(ch, v, now)
	c.collectHeld(ch, snap)
	c.collectReserved(ch, v)
	c.collectEvidence(ch, v, now)
	c.collectHealth(ch, snap, now)
}

func (c *collector) viewOf(snap *agent.Snapshot) *view {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastSnap.Value() != snap {
		c.lastView = buildView(snap, c.cfg)
		c.lastSnap = weak.Make(snap)
	}
	return c.lastView
}
