package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// reserveConfig is the parsed command line of `kafka-disk-guard reserve`.
type reserveConfig struct {
	policy  reserve.Config
	request reserve.Request
	output  string

	// offline figures
	storageBytes      int64
	reservedBytes     int64
	currentPartitions int

	// online
	conn    kafkaadmin.Config
	timeout time.Duration
}

// policyViolation is a refused request: main exits 1 with its message.
type policyViolation struct{ reason string }

func (e policyViolation) Error() string { return "PolicyViolation: " + e.reason }

type configFlag map[string]string

func (c configFlag) String() string { return "" }
func (c configFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	c[k] = val
	return nil
}

type bytesFlag struct{ n *int64 }

func (b bytesFlag) String() string {
	if b.n == nil {
		return "0" // the zero flag (flag's usage compares defaults with it)
	}
	return strconv.FormatInt(*b.n, 10)
}
func (b bytesFlag) Set(v string) error {
	n, err := parseBytes(v)
	if err != nil {
		return err
	}
	*b.n = n
	return nil
}

// parseBytes reads "1073741824", "512MiB", "1GiB", "10GB" (GB = GiB here,
// as in Kafka's documentation of sizes).
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want bytes, optionally with KiB, MiB, GiB or TiB", v)
	}
	return int64(f * float64(mult)), nil
}

// policyFlagName names the flag behind an admission.* YAML path.
func policyFlagName(err error) string {
	return strings.NewReplacer("admission.limitPercent", "--limit-percent", "admission.compactFlatBytes", "--compact-flat-bytes",
		"admission.brokerStorageBytes", "--broker-storage-bytes").Replace(err.Error())
}

func parseReserveFlags(args []string, getenv env, stderr io.Writer) (reserveConfig, error) {
	var c reserveConfig
	if err := rejectPasswordFlag(args); err != nil {
		return c, err
	}
	configs := configFlag{}
	fs := flag.NewFlagSet("reserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, reserveUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.request.Topic, "topic", "", "topic name (required)")
	var partitions, rf int
	fs.IntVar(&partitions, "partitions", -1, "partitions of the new topic; with --add-partitions the new total count (-1: broker default)")
	fs.IntVar(&rf, "replication-factor", -1, "replication factor of the new topic (-1: broker default, 1 offline)")
	fs.Var(configs, "config", "topic config KEY=VALUE (repeatable): retention.bytes, retention.ms, segment.bytes, segment.index.bytes, cleanup.policy")
	add := fs.Bool("add-partitions", false, "the topic exists: --partitions is its new partition count")
	fs.Float64Var(&c.request.WriteRateBytesPerSecond, "write-rate-bytes", 0, "expected write rate per partition in bytes/s, for retention.bytes=-1")
	fs.Float64Var(&c.policy.LimitPercent, "limit-percent", reserve.DefaultLimitPercent, "refuse above this reserved percent of the storage")
	c.policy.CompactFlatBytes = reserve.DefaultCompactFlatBytes
	fs.Var(bytesFlag{&c.policy.CompactFlatBytes}, "compact-flat-bytes", "reserved size of a compact-only partition")
	fs.StringVar(&c.output, "output", "text", "text or json")
	fs.Var(bytesFlag{&c.storageBytes}, "storage-bytes", "offline: the cluster's configured storage")
	fs.Var(bytesFlag{&c.reservedBytes}, "reserved-bytes", "offline: the bytes reserved now")
	fs.IntVar(&c.currentPartitions, "current-partitions", 0, "offline with --add-partitions: the topic's partitions now")
	var kf kafkaFlags
	kf.register(fs) // online
	fs.Var(bytesFlag{&c.policy.BrokerStorageBytes}, "broker-storage-bytes", "online: each broker's configured storage, instead of DescribeLogDirs total bytes")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "online: time allowed to read the cluster")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	var err error
	if c.conn, err = kf.apply(kafkaadmin.Config{ClientID: "kafka-disk-guard-reserve"}, getenv); err != nil {
		return c, usageError{flagName(err).Error()}
	}
	online := c.conn.Enabled()
	c.request.Operation = reserve.CreateTopic
	if *add {
		c.request.Operation = reserve.CreatePartitions
	}
	c.request.Partitions, c.request.ReplicationFactor = int32(partitions), int16(rf)
	if len(configs) > 0 {
		c.request.Configs = configs
	}
	return c, c.check(online)
}

const reserveUsage = `usage: kafka-disk-guard reserve --topic NAME --partitions N [flags]

Computes the disk space a new topic (or new partitions) reserves (spec R5)
and whether the cluster's reserved storage stays under the limit. Exits 1
with a PolicyViolation message when it would not.

Offline, with given figures:  --storage-bytes 100GiB --reserved-bytes 40GiB
Online, against a cluster:    --bootstrap-server host:9092 [--command-config FILE | --sasl-mechanism ...]

flags:
`

// check rejects flags that do not go together, online or offline, and an
// invalid policy or connection.
func (c reserveConfig) check(online bool) error {
	add := c.request.Operation == reserve.CreatePartitions
	switch {
	case c.request.Topic == "":
		return usageError{"--topic is required"}
	case c.output != "text" && c.output != "json":
		return usageError{"--output: want text or json"}
	case add && c.request.Partitions <= 0:
		return usageError{"--add-partitions needs --partitions, the new total count"}
	case !online && c.storageBytes <= 0:
		return usageError{"give --bootstrap-server (online) or --storage-bytes (offline)"}
	case online && (c.storageBytes > 0 || c.reservedBytes > 0):
		return usageError{"--storage-bytes and --reserved-bytes are offline figures: not with --bootstrap-server"}
	case !online && add && c.currentPartitions <= 0:
		return usageError{"offline --add-partitions needs --current-partitions"}
	}
	if err := c.policy.Validate(); err != nil {
		return usageError{policyFlagName(err)}
	}
	if online {
		if err := c.conn.Validate(); err != nil {
			return usageError{flagName(err).Error()}
		}
	}
	return nil
}

func runReserve(ctx context.Context, args []string, getenv env, out streams) error {
	c, err := parseReserveFlags(args, getenv, out.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var st reserve.State
	if c.conn.Enabled() {
		st, err = readClusterState(ctx, c)
	} else {
		st, err = offlineState(c)
	}
	if err != nil {
		return err
	}
	d, err := reserve.Check(st, c.request, c.policy)
	if errors.Is(err, reserve.ErrInvalidRequest) {
		return usageError{err.Error()}
	}
	if err != nil {
		return err
	}
	if c.output == "json" {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		cfg := st.Defaults
		if t, ok := st.Topics[c.request.Topic]; ok && c.request.Operation == reserve.CreatePartitions {
			cfg = t.Config
		} else if applied, err := agent.ApplyTopicConfigs(st.Defaults, c.request.Configs); err == nil {
			cfg = applied
		}
		printDecision(out.stdout, d, cfg, c.request.WriteRateBytesPerSecond)
	}
	if !d.Allowed {
		return policyViolation{d.Reason}
	}
	return nil
}

// offlineState builds the state from the given figures. With
// --add-partitions the topic is described by the flags.
func offlineState(c reserveConfig) (reserve.State, error) {
	st := reserve.State{
		Defaults: agent.DefaultTopicConfig(), DefaultPartitions: 1, DefaultReplicationFactor: 1,
		StorageBytes: c.storageBytes, ReservedBytes: c.reservedBytes, Topics: map[string]reserve.TopicState{},
	}
	if c.request.Operation == reserve.CreatePartitions {
		cfg, err := agent.ApplyTopicConfigs(st.Defaults, c.request.Configs)
		if err != nil {
			return st, usageError{err.Error()}
		}
		rf := max(int(c.request.ReplicationFactor), 1)
		t := reserve.TopicState{Name: c.request.Topic, Config: cfg}
		for p := range c.currentPartitions {
			t.Partitions = append(t.Partitions, reserve.PartitionInfo{ID: int32(p), Replicas: make([]int32, rf)})
		}
		st.Topics[t.Name] = t
	}
	return st, nil
}

func readClusterState(ctx context.Context, c reserveConfig) (reserve.State, error) {
	link := kafkaadmin.NewLink(c.conn, slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
	if err := link.Connect(); err != nil {
		return reserve.State{}, err
	}
	defer link.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	info, err := link.ClusterReader().ReadCluster(ctx)
	if err != nil {
		return reserve.State{}, fmt.Errorf("read cluster: %w", err)
	}
	return reserve.NewState(info, c.policy)
}

func printDecision(w io.Writer, d reserve.Decision, cfg agent.TopicConfig, writeRate float64) {
	what := "create topic"
	if d.Operation == reserve.CreatePartitions {
		what = "add partitions to topic"
	}
	fmt.Fprintf(w, "%s %s: %d partition(s) x replication factor %d = %d new replica(s)\n",
		what, d.Topic, d.NewPartitions, d.ReplicationFactor, int64(d.NewPartitions)*int64(d.ReplicationFactor))
	fmt.Fprintf(w, "config: cleanup.policy=%s retention.bytes=%d retention.ms=%d segment.bytes=%d segment.index.bytes=%d\n",
		cfg.CleanupPolicy, cfg.RetentionBytes, cfg.RetentionMs, cfg.SegmentBytes, cfg.SegmentIndexBytes)
	fmt.Fprintf(w, "reserved per partition replica: %s (%d bytes, basis %s)\n", human.Bytes(d.PartitionBytes), d.PartitionBytes, d.Basis)
	if d.Basis != reserve.BasisCompactFlat && cfg.SegmentBytes > 0 {
		retention := max(cfg.RetentionBytes, 0)
		if d.Basis == reserve.BasisWriteRateEstimate {
			retention = int64(writeRate * float64(cfg.RetentionMs) / 1000)
		}
		n := retention/cfg.SegmentBytes + 1
		fmt.Fprintf(w, "  = retention %s + one more segment %s + indexes 2 x %s x %d segment(s)\n",
			human.Bytes(retention), human.Bytes(cfg.SegmentBytes), human.Bytes(cfg.SegmentIndexBytes), n)
	}
	if d.Basis == reserve.BasisUnbounded {
		fmt.Fprintln(w, "  note: retention.bytes=-1 without a write rate: counted as one segment plus its indexes; give --write-rate-bytes for an estimate")
	}
	fmt.Fprintf(w, "requested in total: %s (%d bytes)\n\n", human.Bytes(d.Cluster.RequestedBytes), d.Cluster.RequestedBytes)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scope\tstorage\treserved now\t%%\treserved after\t%%\tlimit\tstatus\n")
	row := func(scope string, f reserve.Figures) {
		status := "ok"
		if f.OverLimit {
			status = "OVER"
		}
		if f.BrokerID != nil && f.RequestedBytes == 0 {
			status = "unchanged"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%s\t%.1f%%\t%g%%\t%s\n", scope, human.Bytes(f.StorageBytes),
			human.Bytes(f.ReservedBytes), f.PercentBefore, human.Bytes(f.ReservedAfterBytes), f.PercentAfter, d.LimitPercent, status)
	}
	row("cluster", d.Cluster)
	brokers := append([]reserve.Figures(nil), d.Brokers...)
	sort.Slice(brokers, func(i, j int) bool { return *brokers[i].BrokerID < *brokers[j].BrokerID })
	for _, b := range brokers {
		row(fmt.Sprintf("broker %d (+%d)", *b.BrokerID, b.NewReplicasOnBroker), b)
	}
	tw.Flush()
	if d.Allowed {
		fmt.Fprintln(w, "\nresult: allowed")
	} else {
		fmt.Fprintln(w, "\nresult: refused")
	}
}
