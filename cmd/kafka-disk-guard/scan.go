package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/forecast"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

// scanConfig is the scan subcommand's configuration, from flags.
type scanConfig struct {
	LogDirs       []string
	ConfigFile    string
	Defaults      agent.TopicConfig
	CapacityBytes uint64
	Now           time.Time
	Format        string
	Kafka         kafkaadmin.Config
	Timeout       time.Duration
	// Profile names the enforcer profile whose bands the projection gives
	// a time to.
	Profile string
}

// Validate checks the configuration.
func (c *scanConfig) Validate() error {
	if len(c.LogDirs) == 0 {
		return errors.New("--log-dirs: at least one log dir is required")
	}
	if c.Format != "table" && c.Format != "json" {
		return fmt.Errorf("--format %q: want table or json", c.Format)
	}
	if err := c.Kafka.Validate(); err != nil {
		return flagName(err)
	}
	if err := agent.ValidateTopicConfig(c.Defaults); err != nil {
		return fmt.Errorf("defaults: %w", err)
	}
	if c.Profile == enforcer.ProfileCustom {
		return fmt.Errorf("--profile %q: want cloud, local or serverless", c.Profile)
	}
	if _, err := enforcer.ProfileFor(enforcer.Config{Profile: c.Profile}); err != nil {
		return fmt.Errorf("--profile %q: want cloud, local or serverless", c.Profile)
	}
	return nil
}

func parseScanFlags(args []string, getenv env, stderr io.Writer) (scanConfig, error) {
	if err := rejectPasswordFlag(args); err != nil {
		return scanConfig{}, err
	}
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := agent.DefaultTopicConfig()
	var logDirs, policy, now string
	cfg := scanConfig{Defaults: d}
	fs.StringVar(&logDirs, "log-dirs", "", "comma-separated broker log dirs to read (required)")
	fs.StringVar(&cfg.ConfigFile, "config", "", "YAML file of topic configs (defaults and per-topic overrides, Kafka's key names)")
	fs.Int64Var(&cfg.Defaults.RetentionMs, "retention-ms", d.RetentionMs, "default retention.ms (-1: unlimited)")
	fs.Int64Var(&cfg.Defaults.RetentionBytes, "retention-bytes", d.RetentionBytes, "default retention.bytes (-1: unlimited)")
	fs.Int64Var(&cfg.Defaults.SegmentBytes, "segment-bytes", d.SegmentBytes, "default segment.bytes")
	fs.Int64Var(&cfg.Defaults.SegmentIndexBytes, "segment-index-bytes", d.SegmentIndexBytes, "default segment.index.bytes")
	fs.StringVar(&policy, "cleanup-policy", d.CleanupPolicy.String(), "default cleanup.policy: delete, compact or compact,delete")
	fs.Uint64Var(&cfg.CapacityBytes, "capacity-bytes", 0, "fixed capacity per log dir (a PVC size or quota); 0: the filesystem's")
	fs.StringVar(&now, "now", "", "the clock, RFC 3339 (default: the current time)")
	fs.StringVar(&cfg.Format, "format", "table", "output: table or json")
	fs.StringVar(&cfg.Profile, "profile", enforcer.ProfileCloud, "the enforcer profile whose bands the projection gives a time to: cloud, local or serverless")
	var kf kafkaFlags
	kf.register(fs) // with a cluster, topic configs come from it instead of flags and file
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "time allowed to read the topic configs from the cluster")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Sprintf("scan: unexpected arguments %q", fs.Args())}
	}
	for _, d := range strings.Split(logDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			cfg.LogDirs = append(cfg.LogDirs, d)
		}
	}
	p, err := agent.ParseCleanupPolicy(policy)
	if err != nil {
		return cfg, usageError{"--cleanup-policy: " + err.Error()}
	}
	cfg.Defaults.CleanupPolicy = p
	if cfg.Kafka, err = kf.apply(kafkaadmin.Config{ClientID: "kafka-disk-guard-scan"}, getenv); err != nil {
		return cfg, usageError{flagName(err).Error()}
	}
	cfg.Now = time.Now()
	if now != "" {
		if cfg.Now, err = time.Parse(time.RFC3339, now); err != nil {
			return cfg, usageError{"--now: " + err.Error()}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err.Error()}
	}
	return cfg, nil
}

// runScan reads log dirs once and reports every segment's state.
func runScan(ctx context.Context, args []string, getenv env, out streams) error {
	cfg, err := parseScanFlags(args, getenv, out.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(out.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, logger)
	if err != nil {
		return err
	}
	dirs, health := scanner.ScanLogDirs(cfg.LogDirs, cfg.CapacityBytes)
	configs, err := scanConfigs(ctx, cfg, dirs)
	if err != nil {
		return err
	}
	snap := agent.BuildSnapshot(cfg.Now, dirs, configs, health)
	bands := forecastBands(enforcer.Config{Profile: cfg.Profile})
	if cfg.Format == "json" {
		return writeScanJSON(out.stdout, snap, bands)
	}
	return writeScanTable(out.stdout, snap, bands)
}

// scanConfigs loads topic configs: from the broker when asked, else from
// the file and flags.
func scanConfigs(ctx context.Context, cfg scanConfig, dirs []agent.LogDir) (agent.ConfigSet, error) {
	cs := agent.ConfigSet{Defaults: cfg.Defaults, Topics: map[string]agent.TopicConfig{}, Time: cfg.Now}
	if cfg.ConfigFile != "" {
		var err error
		if cs, err = agent.LoadConfigFile(cfg.ConfigFile, cfg.Defaults); err != nil {
			return cs, err
		}
	}
	if !cfg.Kafka.Enabled() {
		return cs, nil
	}
	link := kafkaadmin.NewLink(cfg.Kafka, slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
	if err := link.Connect(); err != nil {
		return cs, err
	}
	defer link.Close()
	scanned := agent.Snapshot{LogDirs: dirs} // not classified yet: only its broker id and topics are read
	brokerID := scanned.BrokerID()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	online, err := link.ConfigFetcher(func() int32 { return brokerID }).FetchConfigs(ctx, scanned.LiveTopics())
	if err != nil {
		return cs, err
	}
	online.Time = time.Now()
	// Tiered partitions: the upload boundary from their leaders (spec
	// R1.7). One that cannot be read is reported with its error.
	if tiered := online.TieredPartitions(dirs); len(tiered) > 0 {
		if online.Remote, err = link.RemoteOffsetsFetcher().FetchRemoteOffsets(ctx, tiered); err != nil {
			return cs, err
		}
		online.RemoteTime = time.Now()
	}
	// Log dirs the broker has offline: Kafka's retention does not run
	// there (held: log_dir_offline). Without the broker's word (no broker
	// id in meta.properties, DescribeLogDirs failing) none is.
	if brokerID >= 0 {
		if ev, err := link.Evidence().IdentityEvidence(ctx, brokerID); err == nil {
			online.OfflineLogDirs = offlineDirs(agent.CheckIdentity(dirs, ev))
		}
	}
	return online, nil
}

// offlineDirs lists the log dirs whose identity check found them offline
// on the broker, with its word; nil when none is.
func offlineDirs(ids []agent.LogDirIdentity) map[string]string {
	var out map[string]string
	for _, id := range ids {
		if id.Reason == agent.IdentityBrokerOffline {
			if out == nil {
				out = map[string]string{}
			}
			out[id.Path] = id.Detail
		}
	}
	return out
}

// Report types: the JSON schema of `scan --format json`.
type scanReport struct {
	Time       time.Time                  `json:"time"`
	LogDirs    []logDirReport             `json:"log_dirs"`
	Topics     []topicReport              `json:"topics"`
	Partitions []partitionReport          `json:"partitions"`
	Segments   []segmentReport            `json:"segments"`
	ScanErrors map[agent.ErrorKind]uint64 `json:"scan_errors"`
}

type logDirReport struct {
	Path               string  `json:"path"`
	BrokerID           int32   `json:"broker_id"`
	ClusterID          string  `json:"cluster_id"`
	Error              string  `json:"error,omitempty"`
	CapacityBytes      uint64  `json:"capacity_bytes"`
	UsedBytes          uint64  `json:"used_bytes"`
	AvailableBytes     uint64  `json:"available_bytes"`
	UsageRatio         float64 `json:"usage_ratio"`
	CapacityBasis      string  `json:"capacity_basis"`
	DiskBytes          int64   `json:"disk_bytes"`
	PendingDeleteBytes int64   `json:"pending_delete_bytes"`
	OtherBytes         int64   `json:"other_bytes"`
	// Projection is the log dir's foresight (spec R3.8); absent when its
	// capacity is unknown.
	Projection *projectionReport `json:"projection,omitempty"`
}

// stateCounts holds a figure per segment state.
type stateCounts struct {
	Open     int64 `json:"open"`
	Closed   int64 `json:"closed"`
	Eligible int64 `json:"eligible"`
}

// retained holds expired-but-retained bytes by reason (spec R1.6).
type retained struct {
	OpenSegment      int64 `json:"open_segment"`
	AwaitingDeletion int64 `json:"awaiting_deletion"`
	PendingDelete    int64 `json:"pending_delete"`
}

// summary is agent.Summary as the report prints it: the same figures as
// the exporter's metrics (every byte figure is disk bytes).
type summary struct {
	Segments           stateCounts `json:"segments"`
	DiskBytes          stateCounts `json:"disk_bytes"`
	ExpiredRetained    retained    `json:"expired_retained_bytes"`
	OldestEligibleAgeS *float64    `json:"oldest_eligible_age_seconds"`
	// Tiered is set for tiered partitions and topics (spec R1.7).
	Tiered *tieredSummary `json:"tiered,omitempty"`
}

// tierCounts holds a figure per tier of a tiered partition's segments.
type tierCounts struct {
	LocalOnly int64 `json:"local_only"`
	Uploaded  int64 `json:"uploaded"`
	Unknown   int64 `json:"unknown"`
}

// tieredSummary is agent.TieredSummary as the report prints it: tiered
// partitions' segments and disk bytes that are only local, already
// uploaded, or of unknown upload state; the disk bytes eligible locally
// while kept in remote storage; the partitions whose remote offsets are
// unknown (nothing in them is eligible).
type tieredSummary struct {
	Segments                 tierCounts `json:"segments"`
	DiskBytes                tierCounts `json:"disk_bytes"`
	EligibleLocallyBytes     int64      `json:"eligible_locally_kept_remotely_bytes"`
	OffsetsUnknownPartitions int        `json:"offsets_unknown_partitions"`
}

func newSummary(s agent.Summary, now time.Time) summary {
	r := summary{
		Segments:        stateCounts(s.Segments),
		DiskBytes:       stateCounts(s.Bytes),
		ExpiredRetained: retained(s.Expired),
	}
	if !s.OldestEligible.IsZero() {
		age := now.Sub(s.OldestEligible).Seconds()
		r.OldestEligibleAgeS = &age
	}
	if t := s.Tiered; t.Partitions > 0 {
		r.Tiered = &tieredSummary{Segments: tierCounts(t.Segments), DiskBytes: tierCounts(t.Bytes),
			EligibleLocallyBytes: t.EligibleLocally, OffsetsUnknownPartitions: t.OffsetsUnknown}
	}
	return r
}

type topicReport struct {
	Topic          string `json:"topic"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionBytes int64  `json:"retention_bytes"`
	// LocalRetentionMs/Bytes: a tiered topic's local retention as Kafka
	// applies it (local.retention.*, -2 resolved; spec R1.7).
	LocalRetentionMs    *int64 `json:"local_retention_ms,omitempty"`
	LocalRetentionBytes *int64 `json:"local_retention_bytes,omitempty"`
	CleanupPolicy       string `json:"cleanup_policy"`
	Partitions          int    `json:"partitions"`
	summary
}

type partitionReport struct {
	LogDir         string `json:"log_dir"`
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	Dir            string `json:"dir"`
	Kind           string `json:"kind"`
	LogStartOffset int64  `json:"log_start_offset"`
	HighWatermark  int64  `json:"high_watermark"`
	LogEndOffset   int64  `json:"log_end_offset"`
	// RetentionHeld: why Kafka's retention does not run on the partition
	// (agent.HeldReasons: moving, cleaner_disabled, log_dir_offline).
	RetentionHeld string `json:"retention_held,omitempty"`
	// Remote: a tiered partition's remote tier, as its leader reported it.
	Remote *remoteReport `json:"remote,omitempty"`
	summary
}

type remoteReport struct {
	HighestUploadedOffset int64  `json:"highest_uploaded_offset"`
	LocalLogStartOffset   int64  `json:"local_log_start_offset"`
	LogStartOffset        int64  `json:"log_start_offset"`
	Error                 string `json:"error,omitempty"`
}

type segmentReport struct {
	LogDir           string    `json:"log_dir"`
	Topic            string    `json:"topic"`
	Partition        int32     `json:"partition"`
	Kind             string    `json:"kind"`
	BaseOffset       int64     `json:"base_offset"`
	State            string    `json:"state"`
	Reason           string    `json:"reason"`
	SizeBytes        int64     `json:"size_bytes"`
	DiskBytes        int64     `json:"disk_bytes"`
	LargestTimestamp time.Time `json:"largest_timestamp"`
	TimestampSource  string    `json:"timestamp_source"`
	ExpiredBytes     int64     `json:"expired_bytes"`
	Tier             string    `json:"tier,omitempty"` // tiered partitions: local_only, uploaded, unknown
}

func buildReport(snap agent.Snapshot, bands []forecast.Band) scanReport {
	r := scanReport{Time: snap.Time, ScanErrors: snap.Health.ScanErrors}
	proj := projections(&snap, bands)
	if r.ScanErrors == nil {
		r.ScanErrors = map[agent.ErrorKind]uint64{}
	}
	// A topic's figures are the sum of its summaries in every log dir.
	topics := map[string]*agent.Summary{}
	for _, d := range snap.LogDirs {
		lr := logDirReport{Path: d.Path, BrokerID: d.BrokerID, ClusterID: d.ClusterID,
			CapacityBytes: d.Usage.CapacityBytes, UsedBytes: d.Usage.UsedBytes, AvailableBytes: d.Usage.AvailableBytes,
			UsageRatio: d.Usage.Ratio(), CapacityBasis: string(d.Usage.Basis),
			DiskBytes: d.DiskBytes, PendingDeleteBytes: d.PendingDeleteBytes, OtherBytes: d.OtherBytes}
		if d.Err != nil {
			lr.Error = d.Err.Error()
		}
		lr.Projection = proj[d.Path]
		r.LogDirs = append(r.LogDirs, lr)
		for _, ts := range d.TopicSummaries() {
			if t := topics[ts.Topic]; t != nil {
				t.Add(ts.Summary)
			} else {
				topics[ts.Topic] = &ts.Summary
			}
		}
		for _, p := range d.Partitions {
			pr := partitionReport{LogDir: d.Path, Topic: p.Topic, Partition: p.Partition, Dir: p.Dir, Kind: string(p.Kind),
				LogStartOffset: p.LogStartOffset, HighWatermark: p.HighWatermark, LogEndOffset: p.LogEndOffset,
				RetentionHeld: p.Held.String(), summary: newSummary(p.Summary(), snap.Time)}
			if p.Remote != nil {
				pr.Remote = &remoteReport{HighestUploadedOffset: p.Remote.HighestUploaded, LocalLogStartOffset: p.Remote.LocalLogStart,
					LogStartOffset: p.Remote.LogStart, Error: p.Remote.Err}
			}
			r.Partitions = append(r.Partitions, pr)
			for _, s := range p.Segments {
				r.Segments = append(r.Segments, segmentReport{LogDir: d.Path, Topic: p.Topic, Partition: p.Partition, Kind: string(p.Kind),
					BaseOffset: s.BaseOffset, State: s.State.String(), Reason: s.Reason.String(), SizeBytes: s.LogBytes, DiskBytes: s.DiskBytes,
					LargestTimestamp: time.UnixMilli(s.LargestTimestampMs).UTC(), TimestampSource: s.TimestampSource.String(), ExpiredBytes: s.ExpiredBytes,
					Tier: s.Tier.String()})
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(topics)) {
		c := snap.TopicConfig(n)
		tr := topicReport{Topic: n, RetentionMs: c.RetentionMs, RetentionBytes: c.RetentionBytes,
			CleanupPolicy: c.CleanupPolicy.String(), Partitions: topics[n].Partitions, summary: newSummary(*topics[n], snap.Time)}
		if c.Tiered(n) && !c.RemoteCopyDisable {
			ms, bytes := c.LocalRetention(n)
			tr.LocalRetentionMs, tr.LocalRetentionBytes = &ms, &bytes
		}
		r.Topics = append(r.Topics, tr)
	}
	return r
}

func writeScanJSON(w io.Writer, snap agent.Snapshot, bands []forecast.Band) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(buildReport(snap, bands))
}

func writeScanTable(w io.Writer, snap agent.Snapshot, bands []forecast.Band) error {
	r := buildReport(snap, bands)
	var b strings.Builder
	fmt.Fprintf(&b, "scan at %s\n", r.Time.UTC().Format(time.RFC3339))
	for _, d := range r.LogDirs {
		fmt.Fprintf(&b, "\nlog dir %s  broker %d  cluster %s\n", d.Path, d.BrokerID, d.ClusterID)
		if d.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", d.Error)
			continue
		}
		fmt.Fprintf(&b, "  usage: %.1f%% (%s used of %s, %s), %s available\n", 100*d.UsageRatio, human.Bytes(int64(d.UsedBytes)), human.Bytes(int64(d.CapacityBytes)), d.CapacityBasis, human.Bytes(int64(d.AvailableBytes)))
		fmt.Fprintf(&b, "  disk: %s total, %s pending deletion, %s other\n", human.Bytes(d.DiskBytes), human.Bytes(d.PendingDeleteBytes), human.Bytes(d.OtherBytes))
		if d.Projection != nil {
			b.WriteString(projectionText(d.Projection, bands))
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(&b, "\ntopics (segments and disk bytes by state; expired-but-retained disk bytes by reason)")
	fmt.Fprintln(tw, "TOPIC\tPOLICY\tRETENTION\tPARTS\tOPEN\tCLOSED\tELIGIBLE\tBYTES OPEN\tBYTES CLOSED\tBYTES ELIGIBLE\tEXP OPEN SEG\tEXP AWAITING\tEXP PENDING\tOLDEST ELIGIBLE")
	for _, t := range r.Topics {
		ret := retentionText(t.RetentionMs, t.RetentionBytes)
		if t.LocalRetentionMs != nil {
			ret = "local " + retentionText(*t.LocalRetentionMs, *t.LocalRetentionBytes) + ", total " + ret
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", t.Topic, t.CleanupPolicy, ret, t.Partitions, summaryCols(t.summary))
	}
	tw.Flush()
	fmt.Fprintln(&b, "\npartitions")
	fmt.Fprintln(tw, "PARTITION\tKIND\tLOG START\tHW\tLOG END\tOPEN\tCLOSED\tELIGIBLE\tBYTES OPEN\tBYTES CLOSED\tBYTES ELIGIBLE\tEXP OPEN SEG\tEXP AWAITING\tEXP PENDING\tOLDEST ELIGIBLE")
	for _, p := range r.Partitions {
		kind := p.Kind
		if p.RetentionHeld != "" {
			kind += ", held: " + p.RetentionHeld
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Dir, kind, offsetText(p.LogStartOffset), offsetText(p.HighWatermark), offsetText(p.LogEndOffset), summaryCols(p.summary))
	}
	tw.Flush()
	writeTieredTable(&b, r)
	if len(r.ScanErrors) > 0 {
		kinds := make([]string, 0, len(r.ScanErrors))
		for k, v := range r.ScanErrors {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
		}
		slices.Sort(kinds)
		fmt.Fprintf(&b, "\nscan errors: %s\n", strings.Join(kinds, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTieredTable lists tiered partitions (spec R1.7), when there are any:
// segments and disk bytes uploaded, only local or of unknown upload state,
// the disk bytes eligible locally and kept remotely, and the remote tier's
// offsets.
func writeTieredTable(b *strings.Builder, r scanReport) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	header := false
	for _, p := range r.Partitions {
		t := p.Tiered
		if t == nil {
			continue
		}
		if !header {
			fmt.Fprintln(b, "\ntiered partitions (segments/disk bytes by tier; eligible locally = past local retention and uploaded: deleted locally, kept in remote storage)")
			fmt.Fprintln(tw, "PARTITION\tUPLOADED\tLOCAL ONLY\tUNKNOWN\tELIGIBLE LOCALLY\tHIGHEST UPLOADED\tLOCAL START\tREMOTE")
			header = true
		}
		hi, ls, state := "?", "?", "unknown: nothing eligible"
		if p.Remote != nil {
			if p.Remote.Error != "" {
				state = "unreadable: " + p.Remote.Error
			} else {
				hi, ls, state = offsetText(p.Remote.HighestUploadedOffset), offsetText(p.Remote.LocalLogStartOffset), "ok"
				if p.Remote.HighestUploadedOffset < 0 {
					hi = "none"
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d/%s\t%d/%s\t%d/%s\t%s\t%s\t%s\t%s\n", p.Dir,
			t.Segments.Uploaded, human.Bytes(t.DiskBytes.Uploaded), t.Segments.LocalOnly, human.Bytes(t.DiskBytes.LocalOnly),
			t.Segments.Unknown, human.Bytes(t.DiskBytes.Unknown), human.Bytes(t.EligibleLocallyBytes), hi, ls, state)
	}
	tw.Flush()
}

func summaryCols(s summary) string {
	age := "-"
	if s.OldestEligibleAgeS != nil {
		age = (time.Duration(*s.OldestEligibleAgeS) * time.Second).String()
	}
	return fmt.Sprintf("%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s",
		s.Segments.Open, s.Segments.Closed, s.Segments.Eligible,
		human.Bytes(s.DiskBytes.Open), human.Bytes(s.DiskBytes.Closed), human.Bytes(s.DiskBytes.Eligible),
		human.Bytes(s.ExpiredRetained.OpenSegment), human.Bytes(s.ExpiredRetained.AwaitingDeletion), human.Bytes(s.ExpiredRetained.PendingDelete), age)
}

func retentionText(ms, bytes int64) string {
	t := "ms=-1"
	if ms >= 0 {
		t = (time.Duration(ms) * time.Millisecond).String()
	}
	if bytes >= 0 {
		t += " bytes=" + human.Bytes(bytes)
	}
	return t
}

func offsetText(o int64) string {
	if o < 0 {
		return "?"
	}
	return fmt.Sprint(o)
}
