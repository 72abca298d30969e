package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/exporter"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// demoConfig is the demo subcommand's command line.
type demoConfig struct {
	listen       string
	webConfig    string
	dir          string
	kafka        kafkaadmin.Config
	logDirs      []string
	capacity     uint64
	compactFlat  int64
	interval     time.Duration
	perPartition bool
	// The generated log dir's simulated broker.
	enforce  bool
	scenario string
	speed    float64
}

// demoDefaultCapacity is the configured capacity of the generated log dir,
// so its usage ratio moves visibly.
const demoDefaultCapacity = 256 << 20

// demoCompactFlatBytes is the demo's reservation for a compact-only
// partition, scaled down with its small segments (the product default is
// 1 GiB, spec R5.1).
const demoCompactFlatBytes = 64 << 20

// Demo scenarios: fill drives usage through the bands in cycles
// (simbroker.Scenario), steady only writes at the topics' steady rates.
const (
	scenarioFill   = "fill"
	scenarioSteady = "steady"
	// demoMaxFillCapacity bounds what the fill scenario writes.
	demoMaxFillCapacity = 2 << 30
)

func parseDemoFlags(args []string, getenv env, stderr io.Writer) (demoConfig, error) {
	var c demoConfig
	var logDirs string
	if err := rejectPasswordFlag(args); err != nil {
		return c, err
	}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: kafka-disk-guard demo [flags]

Generates a realistic Kafka broker log dir in a temporary directory and
runs a simulated broker on it (records appended, segments rolled, expired
segments deleted, an admin API for the guard), fills its disk through the
usage bands and lets it fall back, and runs the guard on it: the enforcer
says what it would do at each band (observe mode) or, with --enforce, does
it. Metrics are served until interrupted. With --bootstrap-server and
--log-dirs it watches a real broker instead (observe mode; connection
flags and KDG_* variables as for run).

flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.listen, "listen", exporter.DefaultListenAddress, "address to serve /metrics on (same as --web.listen-address)")
	fs.StringVar(&c.listen, "web.listen-address", exporter.DefaultListenAddress, "address to serve /metrics on")
	fs.StringVar(&c.webConfig, "web.config.file", "", "exporter-toolkit web config file: TLS and basic auth")
	fs.StringVar(&c.dir, "dir", "", "generate the log dir here instead of a temporary directory (kept on exit)")
	var kf kafkaFlags
	kf.register(fs)
	fs.StringVar(&logDirs, "log-dirs", "", "comma-separated log dirs of the real broker (its log.dirs)")
	fs.Uint64Var(&c.capacity, "capacity-bytes", 0, "configured capacity per log dir; 0: the filesystem's (the generated log dir defaults to 256 MiB)")
	fs.Int64Var(&c.compactFlat, "reserve.compact-flat-bytes", 0, "reserved bytes per compact-only partition; 0: 1 GiB (the generated log dir defaults to 64 MiB)")
	fs.DurationVar(&c.interval, "interval", time.Second, "how often the simulated broker writes (generated log dir only)")
	fs.BoolVar(&c.perPartition, "metrics.per-partition", false, "export per-partition series")
	fs.BoolVar(&c.enforce, "enforce", false, "let the enforcer act on the simulated broker: delete records, write-protect topics (generated log dir only)")
	fs.StringVar(&c.scenario, "scenario", scenarioFill, "fill: drive usage through the bands and back, in cycles; steady: steady writes only (generated log dir only)")
	fs.Float64Var(&c.speed, "speed", 1, "run the simulated broker's scenario and retention this many times faster (generated log dir only)")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Sprintf("demo: unexpected argument %q", fs.Arg(0))}
	}
	if err := c.complete(logDirs, kf, getenv); err != nil {
		return c, err
	}
	return c, c.validateSimulation()
}

// complete sets the log dirs and the Kafka connection from the parsed
// flags, checks them and sets the generated log dir's defaults.
func (c *demoConfig) complete(logDirs string, kf kafkaFlags, getenv env) error {
	if logDirs != "" {
		for _, d := range strings.Split(logDirs, ",") {
			if d = strings.TrimSpace(d); d != "" {
				c.logDirs = append(c.logDirs, d)
			}
		}
	}
	var err error
	if c.kafka, err = kf.apply(kafkaadmin.Config{}, getenv); err != nil {
		return usageError{"demo: " + flagName(err).Error()}
	}
	if err := c.kafka.Validate(); err != nil {
		return usageError{"demo: " + flagName(err).Error()}
	}
	realBroker := c.kafka.Enabled()
	if realBroker != (len(c.logDirs) > 0) {
		return usageError{"demo: --bootstrap-server and --log-dirs go together"}
	}
	if realBroker && c.dir != "" {
		return usageError{"demo: --dir is for the generated log dir, not with --bootstrap-server"}
	}
	if c.interval <= 0 {
		return usageError{"demo: --interval must be positive"}
	}
	if c.compactFlat < 0 {
		return usageError{"demo: --reserve.compact-flat-bytes must not be negative"}
	}
	if !realBroker && c.capacity == 0 {
		c.capacity = demoDefaultCapacity
	}
	if !realBroker && c.compactFlat == 0 {
		c.compactFlat = demoCompactFlatBytes
	}
	return nil
}

// validateSimulation checks the simulated broker's flags (after the
// capacity default).
func (c demoConfig) validateSimulation() error {
	switch {
	case c.kafka.Enabled() && c.enforce:
		return usageError{"demo: --enforce acts on the simulated broker only; a real broker is observed (use run --enforce)"}
	case c.scenario != scenarioFill && c.scenario != scenarioSteady:
		return usageError{fmt.Sprintf("demo: --scenario %q is not one of fill, steady", c.scenario)}
	case c.speed <= 0 || c.speed > 20:
		return usageError{fmt.Sprintf("demo: --speed %v is outside (0, 20]", c.speed)}
	case !c.kafka.Enabled() && c.scenario == scenarioFill && c.capacity > demoMaxFillCapacity:
		return usageError{fmt.Sprintf("demo: --capacity-bytes %d: the fill scenario writes up to 93%% of it; at most %d (2 GiB), or --scenario steady",
			c.capacity, demoMaxFillCapacity)}
	}
	return nil
}

func runDemo(ctx context.Context, args []string, getenv env, out streams) error {
	cfg, err := parseDemoFlags(args, getenv, out.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := &lineWriter{w: out.stdout, held: true}
	dl := newDemoLog(lines, out.stderr)
	logger := slog.New(dl)
	version, revision := buildVersion()

	gc := guardConfig{}
	gc.LogDirs, gc.CapacityBytes = cfg.logDirs, cfg.capacity
	gc.Web = webConfig{ListenAddress: cfg.listen, ConfigFile: cfg.webConfig}
	gc.Metrics.PerPartition = cfg.perPartition
	gc.Admission.CompactFlatBytes = cfg.compactFlat
	var hooks serveHooks
	intro := func() { printScenario(out.stdout, gc.Enforcer, nil, agent.ConfigSet{}) }
	if !cfg.kafka.Enabled() {
		var cleanup func()
		if cfg.dir, cleanup, err = demoDir(cfg.dir); err != nil {
			return err
		}
		defer cleanup()
		dl.main = cfg.dir
		if intro, err = simulate(cfg, &gc, &hooks, logger, out.stdout); err != nil {
			return err
		}
	} else {
		gc.Kafka = cfg.kafka
	}
	if err := gc.Validate(); err != nil {
		return usageError{err.Error()}
	}
	// Enforcement acts through a broker: here the simulated one's admin
	// API (validate asks run for a cluster).
	gc.Enforcer.Enabled = cfg.enforce && hooks.admin != nil
	hooks.extra = append(hooks.extra, func(ctx context.Context, ag *agent.Agent, addr string) error {
		if !waitFirstSnapshot(ctx, ag) {
			return nil
		}
		printScanTable(out.stdout, ag.Snapshot(), cfg.compactFlat)
		fmt.Fprintf(out.stdout, "\nMetrics: %s\n", metricsURL(addr))
		if cfg.webConfig != "" {
			fmt.Fprintf(out.stdout, "(https and basic auth as %s sets them)\n", cfg.webConfig)
		}
		intro()
		lines.release()
		return narrateUsage(ctx, lines, ag, 10*time.Second, dl.main)
	})
	err = serve(ctx, gc, logger, build{version, revision}, hooks)
	fmt.Fprintln(out.stdout, "Stopped.")
	return err
}

// demoDir is where the simulated broker's log dir is generated: dir, or
// one in a temporary directory that cleanup removes.
func demoDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "kafka-disk-guard-demo-")
	if err != nil {
		return "", nil, fmt.Errorf("create demo dir: %w", err)
	}
	return filepath.Join(tmp, "kafka-logs"), func() { os.RemoveAll(tmp) }, nil
}

// simulate sets the guard up on a simulated broker with its log dir in
// cfg.dir: the broker runs beside the guard (hooks), with its scenario
// unless steady. It returns the introduction to print once the first
// scan is in.
func simulate(cfg demoConfig, gc *guardConfig, hooks *serveHooks, logger *slog.Logger, stdout io.Writer) (intro func(), err error) {
	dir := cfg.dir
	bcfg, sc := simbroker.Demo(simbroker.DemoOptions{Dir: dir, Now: time.Now(), Capacity: cfg.capacity, Speed: cfg.speed})
	bcfg.Spare = true
	broker, err := simbroker.New(bcfg, logger)
	if err != nil {
		return nil, err
	}
	if cfg.scenario == scenarioSteady {
		sc = nil
	}
	cs := broker.Configs()
	hooks.offline, hooks.admin, hooks.evidence, hooks.configs = &cs, broker.Admin(), broker.Evidence(), broker.ConfigSource()
	// The broker's second log dir: the mover (spec R3.8) plans moves into
	// it. The simulated broker does not copy replicas, so with --enforce
	// the mover is off (observe mode says what it would move).
	hooks.moves = &demoMoves{admin: broker.Admin(), store: broker.Admin(), evidence: broker.Evidence()}
	if cfg.enforce {
		off := false
		gc.Enforcer.Relief.Move.Enabled = &off
	}
	// The scenario fills the disk in minutes what takes hours on a
	// broker: the purge caps per hour and day (spec R7.3) are lifted
	// so that every band shows.
	gc.Enforcer.Purge = enforcer.PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100}
	gc.LogDirs = []string{dir, broker.SpareLogDir()}
	// The fill crosses the move band in seconds: the mover (whose pass
	// runs every enforcer.interval) looks every second.
	gc.Enforcer.Interval = time.Second
	// The scenario moves fast: re-read growing partitions and
	// reclassify more often than the defaults.
	gc.GrowthInterval, gc.ReclassifyInterval = 200*time.Millisecond, time.Second
	hooks.extra = append(hooks.extra, func(ctx context.Context, a *agent.Agent, _ string) error {
		if sc != nil {
			sc.Usage, sc.Logger = func() (float64, bool) { return firstUsage(a) }, logger
		}
		return broker.Run(ctx, cfg.interval, sc)
	})
	printSimulation(stdout, dir, cfg, bcfg)
	return func() { printScenario(stdout, gc.Enforcer, sc, cs) }, nil
}

func metricsURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr + "/metrics"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/metrics"
}

// printScanTable prints each log dir and a line per topic: the figures of
// agent.Summary (the same as the metrics and `scan`) and the reserved
// space of the topic's replicas.
func printScanTable(w io.Writer, snap *agent.Snapshot, compactFlat int64) {
	if snap == nil {
		return
	}
	for _, ld := range snap.LogDirs {
		fmt.Fprintf(w, "\nLog dir %s  broker %d  cluster %s\n", ld.Path, ld.BrokerID, ld.ClusterID)
		if ld.Err != nil {
			fmt.Fprintf(w, "  error: %v\n", ld.Err)
			continue
		}
		fmt.Fprintf(w, "  used %s of %s (%.1f%%, %s capacity), pending deletion %s\n\n",
			human.Bytes(int64(ld.Usage.UsedBytes)), human.Bytes(int64(ld.Usage.CapacityBytes)), 100*ld.Usage.Ratio(), ld.Usage.Basis,
			human.Bytes(ld.PendingDeleteBytes))
		if len(ld.Partitions) == 0 {
			fmt.Fprintln(w, "  no partitions")
			continue
		}
		reserved := map[string]int64{}
		bases := map[string][]string{}
		var other []string
		for i := range ld.Partitions {
			p := ld.Partitions[i]
			if p.Kind != agent.KindLive {
				other = append(other, fmt.Sprintf("%s (%s, %s)", p.Dir, p.Kind, human.Bytes(p.DiskBytes)))
				continue
			}
			b, basis := reserve.Replica(snap, p, compactFlat)
			reserved[p.Topic] += b
			if !slices.Contains(bases[p.Topic], string(basis)) {
				bases[p.Topic] = append(bases[p.Topic], string(basis))
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTS\tOPEN\tCLOSED\tELIGIBLE\tDISK BYTES\tEXPIRED ON DISK\tRESERVED\tBASIS\t")
		for _, t := range ld.TopicSummaries() {
			basis := strings.Join(bases[t.Topic], ",")
			if basis == "" {
				basis = "-"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", t.Topic, t.Partitions,
				t.Segments.Open, t.Segments.Closed, t.Segments.Eligible,
				human.Bytes(t.Bytes.Total()), human.Bytes(t.Expired.Total()), human.Bytes(reserved[t.Topic]), basis)
		}
		tw.Flush()
		fmt.Fprintln(w, "  (disk bytes of the segments; expired on disk: open segment + awaiting deletion + pending delete)")
		if len(other) > 0 {
			fmt.Fprintf(w, "  also: %s\n", strings.Join(other, ", "))
		}
	}
}
