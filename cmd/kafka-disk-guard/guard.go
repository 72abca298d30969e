package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/exporter"
	"github.com/kafka-disk-guard/kafka-disk-guard/forecast"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// ReservePath is where the agent answers admission questions (spec R5.4).
const reservePath = "/api/v1/reserve/check"

const runUsage = `usage: kafka-disk-guard run [flags]

Runs the guard next to one broker: watches its log dirs, serves metrics,
and (with enforcement on) keeps the disk under the configured bands.
Settings come from --config, then environment variables (KDG_*), then
flags; the later wins. See docs/configuration.md.

flags:
`

// parseRunConfig builds the configuration from the file, env and flags.
// parseRunConfig builds the configuration from the file, env and flags,
// with its defaults applied. Every error is a usage error: nothing has
// started.
func parseRunConfig(args []string, getenv env, stderr io.Writer) (guardConfig, error) {
	c, err := parseRunArgs(args, getenv, stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		var ue usageError
		if !errors.As(err, &ue) {
			err = usageError{err.Error()}
		}
	}
	return c, err
}

func parseRunArgs(args []string, getenv env, stderr io.Writer) (guardConfig, error) {
	if err := rejectPasswordFlag(args); err != nil {
		return guardConfig{}, err
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	var kf kafkaFlags
	kf.register(fs)
	var (
		configFile   = fs.String("config", "", "configuration file (YAML)")
		logDirs      = fs.String("log-dirs", "", "comma-separated broker log dirs (env KDG_LOG_DIRS)")
		capacity     = fs.Uint64("capacity-bytes", 0, "fixed capacity of each log dir; 0: the filesystem's (env KDG_CAPACITY_BYTES)")
		topicConfigs = fs.String("topic-configs", "", "topic configs file for offline use (retention per topic)")
		enforce      = fs.Bool("enforce", false, "perform actions; without it the guard observes and reports (dry run)")
		profile      = fs.String("profile", "", "enforcer profile: cloud, local, serverless or custom")
		listen       = fs.String("web.listen-address", "", "address for /metrics, /healthz, /readyz and admission (default "+exporter.DefaultListenAddress+")")
		probeListen  = fs.String("web.probe-listen-address", "", "serve /healthz and /readyz here too, plain HTTP without authentication")
		webCfg       = fs.String("web.config.file", "", "exporter-toolkit web config file (TLS, basic auth)")
		perPartition = fs.Bool("metrics.per-partition", false, "add per-partition series (more series)")
		logLevel     = fs.String("log.level", "", "debug, info, warn or error")
		logFormat    = fs.String("log.format", "", "json or text")
	)
	if err := fs.Parse(args); err != nil {
		return guardConfig{}, err
	}
	if fs.NArg() > 0 {
		return guardConfig{}, usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	var c guardConfig
	if *configFile != "" {
		var err error
		if c, err = loadConfigFile(*configFile); err != nil {
			return c, err
		}
	}
	set := givenFlags(fs)
	if v, ok := set.pick(getenv, "log-dirs", "KDG_LOG_DIRS", *logDirs); ok {
		c.LogDirs = splitList(v)
	}
	if v, ok := set.pick(getenv, "capacity-bytes", "KDG_CAPACITY_BYTES", strconv.FormatUint(*capacity, 10)); ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("capacity-bytes: %q is not a byte count", v)
		}
		c.CapacityBytes = n
	}
	var err error
	if c.Kafka, err = kf.apply(c.Kafka, getenv); err != nil {
		return c, err
	}
	// A flag given overrides the file.
	for name, override := range map[string]func(){
		"topic-configs":            func() { c.TopicConfigs.File = *topicConfigs },
		"enforce":                  func() { c.Enforcer.Enabled = *enforce },
		"profile":                  func() { c.Enforcer.Profile = *profile },
		"web.listen-address":       func() { c.Web.ListenAddress = *listen },
		"web.probe-listen-address": func() { c.Web.ProbeListenAddress = *probeListen },
		"web.config.file":          func() { c.Web.ConfigFile = *webCfg },
		"metrics.per-partition":    func() { c.Metrics.PerPartition = *perPartition },
		"log.level":                func() { c.Log.Level = *logLevel },
		"log.format":               func() { c.Log.Format = *logFormat },
	} {
		if set[name] {
			override()
		}
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c.WithDefaults(), nil
}

// flagsGiven holds the names of the flags given on the command line.
type flagsGiven map[string]bool

func givenFlags(fs *flag.FlagSet) flagsGiven {
	set := flagsGiven{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// pick returns the flag's value when given, else the environment's.
func (set flagsGiven) pick(getenv env, name, envName, flagValue string) (string, bool) {
	if set[name] {
		return flagValue, true
	}
	if v := getenv(envName); v != "" {
		return v, true
	}
	return "", false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newLogger(c logConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	switch strings.ToLower(c.Level) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.ToLower(c.Format) == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func runGuard(ctx context.Context, args []string, getenv env, out streams) error {
	cfg, err := parseRunConfig(args, getenv, out.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := newLogger(cfg.Log, out.stderr)
	applyMemoryLimit(logger, getenv)
	ver, rev := buildVersion()
	logger.Info("starting", "version", ver, "log_dirs", cfg.LogDirs, "enforce", cfg.Enforcer.Enabled,
		"profile", cfg.Enforcer.Profile, "kafka", strings.Join(cfg.Kafka.BootstrapServers, ","))
	return serve(ctx, cfg, logger, build{ver, rev}, serveHooks{})
}

// serveHooks let the demo reuse serve.
type serveHooks struct {
	// ready receives the bound HTTP address once listening.
	ready func(addr string)
	// offline, when set, are the topic configs used without a cluster.
	offline *agent.ConfigSet
	// admin, when set, is the enforcer's admin API instead of the cluster's
	// (the demo's simulated broker), with its evidence (spec R7) and its
	// topic configs as the broker reads them.
	admin    enforcer.Admin
	evidence enforcer.Evidence
	configs  agent.TopicConfigSource
	// moves, when set with admin, is the mover's side of the simulated
	// broker (moves within it, spec R3.8).
	moves *demoMoves
	// extra parts run beside the guard's own, with the same lifetime.
	extra []func(ctx context.Context, a *agent.Agent, addr string) error
	// clock, when set, is the wall clock of the agent and the enforcer
	// (tests that move it, spec R7.5).
	clock enforcer.MonotonicClock
	// configFetcher, when set, wraps the cluster's topic config fetcher
	// (a test that holds a topic's lookup back, spec R7.2).
	configFetcher func(agent.ConfigFetcher) agent.ConfigFetcher
}

// demoMoves is what the mover acts through on the demo's simulated broker.
type demoMoves struct {
	admin    enforcer.MoveAdmin
	store    enforcer.ThrottleStore
	evidence enforcer.MoveEvidence
}

// firstAttemptWait bounds how long the enforcer waits for the Kafka
// link's first connection attempt before it starts anyway.
const firstAttemptWait = 30 * time.Second

// build identifies the binary in metrics and logs.
type build struct{ version, revision string }

// serve wires the parts and runs them until ctx ends or one fails.
func serve(ctx context.Context, cfg guardConfig, logger *slog.Logger, b build, hooks serveHooks) error {
	cfg = cfg.WithDefaults()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	offline, err := offlineConfigs(cfg, hooks)
	if err != nil {
		return err
	}

	// One connection to the cluster, shared by the config refresher, the
	// enforcer and admission. Without a cluster the guard observes
	// offline: configs from the file, an enforcer that plans only.
	p := &guardParts{
		configs:  staticConfigs{offline},
		admitter: unavailable("admission needs a kafka cluster (kafka.bootstrapServers)"),
	}
	if hooks.configs != nil {
		p.configs = hooks.configs
	}
	if cfg.Kafka.Enabled() {
		if err := p.connect(&cfg, logger, reg, offline, hooks.configFetcher); err != nil {
			return err
		}
	} else {
		p.admin = kafkaadmin.Offline(cfg.Enforcer.OwnershipTopic, logger)
	}
	addr, err := p.start(cfg, logger, reg, b, hooks)
	if err != nil {
		return err
	}
	err = p.run(ctx, hooks, addr)
	logger.Info("stopped")
	return err
}

// offlineConfigs are the topic configs without a cluster: Kafka's
// defaults (or the demo's), or the topicConfigs file's.
func offlineConfigs(cfg guardConfig, hooks serveHooks) (agent.ConfigSet, error) {
	offline := agent.ConfigSet{Defaults: agent.DefaultTopicConfig(), Time: time.Now()}
	if hooks.offline != nil {
		offline = *hooks.offline
	}
	if cfg.TopicConfigs.File != "" {
		cs, err := agent.LoadConfigFile(cfg.TopicConfigs.File, offline.Defaults)
		if err != nil {
			return cs, fmt.Errorf("topicConfigs.file: %w", err)
		}
		offline = cs
	}
	return offline, nil
}

// guardParts are the long-lived parts serve wires. The cluster's parts
// are built first and read the agent and the enforcer (a, enf) through
// closures, once those exist.
type guardParts struct {
	a        *agent.Agent
	enf      *enforcer.Enforcer
	mover    *enforcer.Mover      // nil without a cluster
	reassign *enforcer.Reassigner // nil without a cluster
	srv      *exporter.Server
	link     *kafkaadmin.Link // nil without a cluster
	admin    enforcer.Admin
	evidence enforcer.Evidence
	features []rights.Feature // the rights of the parts besides the enforcer
	configs  agent.TopicConfigSource
	refresh  *agent.ConfigRefresher
	tiered   *agent.TieredRefresher
	model    *reserve.Model // nil with admission off
	admitter http.Handler
}

// connect builds the parts that read the cluster: the Kafka link, the
// config and tiered-offset refreshers, and admission. cfg's exempt topics
// gain the ownership topic. wrapFetcher, when set, wraps the config
// fetcher (serveHooks.configFetcher).
func (p *guardParts) connect(cfg *guardConfig, logger *slog.Logger, reg prometheus.Registerer, offline agent.ConfigSet,
	wrapFetcher func(agent.ConfigFetcher) agent.ConfigFetcher) error {
	var err error
	p.link = kafkaadmin.NewLink(cfg.Kafka, logger, kafkaadmin.LinkOptions{})
	p.admin = p.link.Enforce(cfg.Enforcer.OwnershipTopic)
	p.evidence = p.link.Evidence()
	brokerID := func() int32 { return guardedBrokerID(p.enf, p.a) }
	var fetcher agent.ConfigFetcher = p.link.ConfigFetcher(brokerID)
	if wrapFetcher != nil {
		fetcher = wrapFetcher(fetcher)
	}
	p.refresh, err = agent.NewConfigRefresher(agent.ConfigRefresherConfig{Interval: cfg.TopicConfigs.RefreshInterval}, logger,
		fetcher, func() []string { return snapshotTopics(p.a) }, offline)
	if err != nil {
		return err
	}
	// Tiered partitions' upload boundaries (spec R1.7), refreshed with
	// the configs.
	p.tiered, err = agent.NewTieredRefresher(agent.TieredRefresherConfig{Interval: cfg.TopicConfigs.RefreshInterval}, logger,
		p.link.RemoteOffsetsFetcher(), func() []agent.TopicPartition { return snapshotTieredPartitions(p.a) })
	if err != nil {
		return err
	}
	// Followers delete by their own upload boundary (spec R1.7).
	p.tiered.WithLocalBroker(brokerID)
	p.configs = agent.OnlineConfigs{Configs: p.refresh, Tiered: p.tiered, Offline: func() map[string]string { return offlineLogDirs(p.enf) }}
	// The ownership topic is always admitted: creating it must never
	// wait for admission (spec R8.4).
	cfg.Admission.ExemptTopics = append(cfg.Admission.ExemptTopics, cfg.Enforcer.OwnershipTopic)
	if !cfg.Admission.IsEnabled() {
		p.admitter = unavailable("admission is off (admission.enabled: false)")
		return nil
	}
	p.features = append(p.features, rights.Admission)
	if p.model, err = reserve.NewModel(cfg.Admission, logger, reg, p.link.ClusterReader(), nil); err != nil {
		return err
	}
	p.admitter, err = reserve.NewHandler(cfg.Admission, logger, reg, p.model)
	return err
}

// start builds the agent, the exporter, the forecast, the enforcer and
// the HTTP server, and listens; it returns the bound address.
func (p *guardParts) start(cfg guardConfig, logger *slog.Logger, reg *prometheus.Registry, b build, hooks serveHooks) (string, error) {
	var err error
	if p.a, err = agent.New(cfg.Config, logger, p.configs); err != nil {
		return "", err
	}
	clock := enforcer.SystemClock()
	if hooks.clock != nil {
		clock = hooks.clock
		p.a.UseClock(clock.Now)
	}
	if _, err := exporter.New(exporter.Config{PerPartition: cfg.Metrics.PerPartition, CompactFlatBytes: cfg.Admission.CompactFlatBytes,
		Version: b.version, Revision: b.revision}, logger, reg, p.a); err != nil {
		return "", err
	}
	fc, err := forecast.New(forecast.Config{Bands: forecastBands(cfg.Enforcer)}, logger, reg, p.a)
	if err != nil {
		return "", err
	}
	// Without a cluster the enforcer still runs: it computes and reports
	// the plan (no evidence: identity and rights are not checked), and
	// every action fails as not connected. The demo gives it its
	// simulated broker's admin API and evidence instead.
	if hooks.admin != nil {
		p.admin, p.evidence = hooks.admin, hooks.evidence
	}
	p.enf, err = enforcer.New(cfg.Enforcer, logger, reg, enforcer.Deps{Snapshots: p.a, Admin: p.admin, Clock: clock,
		Evidence: p.evidence, Features: p.features})
	if err != nil {
		return "", err
	}
	if p.link != nil && hooks.admin == nil {
		// Moves within the broker (spec R3.8): the move rung of the ladder.
		p.mover, err = enforcer.NewMover(cfg.Enforcer, logger, reg, enforcer.MoverDeps{Snapshots: p.a,
			Admin: p.link.LogDirMoves(), Store: p.link.Enforce(cfg.Enforcer.OwnershipTopic), Evidence: p.link.Evidence(),
			Growth: fc.Growth, Clock: clock})
		if err != nil {
			return "", err
		}
		// Moves across brokers (enforcer.relief.reassign), and the peers'
		// replication throttles after their lease either way.
		p.reassign, err = enforcer.NewReassigner(cfg.Enforcer, logger, reg, enforcer.ReassignerDeps{Snapshots: p.a,
			Admin: p.link.Relief(), Store: p.link.Enforce(cfg.Enforcer.OwnershipTopic), Evidence: p.link.Evidence(),
			Growth: fc.Growth, Clock: clock})
	} else if hooks.moves != nil {
		p.mover, err = enforcer.NewMover(cfg.Enforcer, logger, reg, enforcer.MoverDeps{Snapshots: p.a,
			Admin: hooks.moves.admin, Store: hooks.moves.store, Evidence: hooks.moves.evidence, Growth: fc.Growth, Clock: clock})
	}
	if err != nil {
		return "", err
	}
	routes := map[string]http.Handler{reservePath: p.admitter}
	p.srv, err = exporter.NewServer(exporter.ServerConfig{ListenAddress: cfg.Web.ListenAddress, WebConfigFile: cfg.Web.ConfigFile,
		ProbeListenAddress: cfg.Web.ProbeListenAddress, Version: b.version, Routes: routes}, logger, reg, p.a)
	if err != nil {
		return "", err
	}
	if err := p.srv.Listen(); err != nil {
		return "", err
	}
	addr := p.srv.Addr().String()
	logger.Info("serving", "address", addr, "paths", routeList(routes))
	if hooks.ready != nil {
		hooks.ready(addr)
	}
	return addr, nil
}

// run runs the parts until ctx ends or one fails.
func (p *guardParts) run(ctx context.Context, hooks serveHooks, addr string) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, part := range hooks.extra {
		g.Go(func() error { return part(ctx, p.a, addr) })
	}
	g.Go(func() error { return p.a.Run(ctx) })
	g.Go(func() error { return p.srv.Run(ctx) })
	if p.link == nil {
		g.Go(func() error { return p.enf.Run(ctx) })
		if p.mover != nil {
			g.Go(func() error { return p.mover.Run(ctx) })
		}
		return g.Wait()
	}
	g.Go(func() error { return p.link.Run(ctx) })
	// Quiet start: what would only report "not connected" waits for the
	// link's first attempt (the enforcer, at most firstAttemptWait) or its
	// first connection (configs, admission).
	g.Go(func() error {
		select {
		case <-ctx.Done():
			return nil
		case <-p.link.Attempted():
		case <-time.After(firstAttemptWait):
		}
		return p.enf.Run(ctx)
	})
	afterUp := func(run func(context.Context) error) func() error {
		return func() error {
			select {
			case <-ctx.Done():
				return nil
			case <-p.link.Up():
			}
			return run(ctx)
		}
	}
	g.Go(afterUp(p.refresh.Run))
	g.Go(afterUp(p.tiered.Run))
	if p.mover != nil {
		g.Go(afterUp(p.mover.Run))
	}
	if p.reassign != nil {
		g.Go(afterUp(p.reassign.Run))
	}
	// A new topic's configs are fetched at once (spec R7.2).
	g.Go(func() error { return followTopics(ctx, p.a.TopicsChanged(), p.refresh) })
	if p.model != nil {
		g.Go(afterUp(p.model.Run))
	}
	return g.Wait()
}

// offlineLogDirs is enf's OfflineLogDirs; nil before enf exists.
func offlineLogDirs(enf *enforcer.Enforcer) map[string]string {
	if enf == nil {
		return nil
	}
	return enf.OfflineLogDirs()
}

// snapshotTieredPartitions lists the tiered partitions the agent has seen.
func snapshotTieredPartitions(a *agent.Agent) []agent.TopicPartition {
	if a == nil {
		return nil
	}
	return a.Snapshot().TieredPartitions()
}

// followTopics tells the config refresher whenever the agent's partition
// directories changed, until ctx ends.
func followTopics(ctx context.Context, changed <-chan struct{}, r *agent.ConfigRefresher) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			r.Notify()
		}
	}
}

// staticConfigs are the offline topic configs.
type staticConfigs struct{ cs agent.ConfigSet }

func (s staticConfigs) Current() agent.ConfigSet { return s.cs }

// unavailable answers 503 saying why.
func unavailable(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "{\"error\": %q}\n", why)
	})
}

func routeList(routes map[string]http.Handler) []string {
	out := []string{"/metrics", "/healthz", "/readyz"}
	for p := range routes {
		out = append(out, p)
	}
	sort.Strings(out[3:])
	return out
}

// guardedBrokerID is the broker whose defaults the topic configs are read
// with: the node the enforcer's identity check found (spec R7.1), else,
// until it is known, the first log dir's meta.properties (R1.5); -1
// before the first scan.
func guardedBrokerID(enf *enforcer.Enforcer, a *agent.Agent) int32 {
	if enf != nil {
		if id := enf.BrokerID(); id >= 0 {
			return id
		}
	}
	if a == nil || a.Snapshot() == nil {
		return -1
	}
	return a.Snapshot().BrokerID()
}

// snapshotTopics lists the live topics the agent has seen.
func snapshotTopics(a *agent.Agent) []string {
	if a == nil {
		return nil
	}
	return a.Snapshot().LiveTopics()
}
