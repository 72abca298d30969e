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
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
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
func parseRunConfig(args []string, getenv env, stderr io.Writer) (guardConfig, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	var (
		configFile   = fs.String("config", "", "configuration file (YAML)")
		logDirs      = fs.String("log-dirs", "", "comma-separated broker log dirs (env KDG_LOG_DIRS)")
		capacity     = fs.Uint64("capacity-bytes", 0, "fixed capacity of each log dir; 0: the filesystem's (env KDG_CAPACITY_BYTES)")
		bootstrap    = fs.String("bootstrap-server", "", "comma-separated Kafka bootstrap servers (env KDG_BOOTSTRAP_SERVERS)")
		saslMech     = fs.String("sasl-mechanism", "", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (env KDG_SASL_MECHANISM)")
		saslUser     = fs.String("sasl-username", "", "SASL user (env KDG_SASL_USERNAME)")
		saslPassFile = fs.String("sasl-password-file", "", "file holding the SASL password; env KDG_SASL_PASSWORD gives it directly")
		topicConfigs = fs.String("topic-configs", "", "topic configs file for offline use (retention per topic)")
		enforce      = fs.Bool("enforce", false, "perform actions; without it the guard observes and reports (dry run)")
		profile      = fs.String("profile", "", "enforcer profile: cloud, local, serverless or custom")
		listen       = fs.String("web.listen-address", "", "address for /metrics, /healthz, /readyz (default "+exporter.DefaultListenAddress+")")
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// pick returns the flag's value when given, else the environment's.
	pick := func(name, envName, flagValue string) (string, bool) {
		if set[name] {
			return flagValue, true
		}
		if v := getenv(envName); v != "" {
			return v, true
		}
		return "", false
	}
	if v, ok := pick("log-dirs", "KDG_LOG_DIRS", *logDirs); ok {
		c.LogDirs = splitList(v)
	}
	if v, ok := pick("capacity-bytes", "KDG_CAPACITY_BYTES", strconv.FormatUint(*capacity, 10)); ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("capacity-bytes: %q is not a byte count", v)
		}
		c.CapacityBytes = n
	}
	if v, ok := pick("bootstrap-server", "KDG_BOOTSTRAP_SERVERS", *bootstrap); ok {
		c.Kafka.BootstrapServers = splitList(v)
	}
	if v, ok := pick("sasl-mechanism", "KDG_SASL_MECHANISM", *saslMech); ok {
		c.Kafka.SASL.Mechanism = v
	}
	if v, ok := pick("sasl-username", "KDG_SASL_USERNAME", *saslUser); ok {
		c.Kafka.SASL.Username = v
	}
	if v := getenv("KDG_SASL_PASSWORD"); v != "" {
		c.Kafka.SASL.Password = v
	}
	if set["sasl-password-file"] {
		c.Kafka.SASL.PasswordFile = *saslPassFile
	}
	if set["topic-configs"] {
		c.TopicConfigs.File = *topicConfigs
	}
	if set["enforce"] {
		c.Enforcer.Enabled = *enforce
	}
	if set["profile"] {
		c.Enforcer.Profile = *profile
	}
	if set["web.listen-address"] {
		c.Web.ListenAddress = *listen
	}
	if set["web.config.file"] {
		c.Web.ConfigFile = *webCfg
	}
	if set["metrics.per-partition"] {
		c.Metrics.PerPartition = *perPartition
	}
	if set["log.level"] {
		c.Log.Level = *logLevel
	}
	if set["log.format"] {
		c.Log.Format = *logFormat
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
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
	ver, rev := buildVersion()
	logger.Info("starting", "version", ver, "log_dirs", cfg.LogDirs, "enforce", cfg.Enforcer.Enabled,
		"profile", cfg.Enforcer.Profile, "kafka", strings.Join(cfg.Kafka.BootstrapServers, ","))
	return serve(ctx, cfg, logger, ver, rev, serveHooks{})
}

// serveHooks let the demo reuse serve.
type serveHooks struct {
	// ready receives the bound HTTP address once listening.
	ready func(addr string)
	// offline, when set, are the topic configs used without a cluster.
	offline *agent.ConfigSet
	// extra parts run beside the guard's own, with the same lifetime.
	extra []func(ctx context.Context, a *agent.Agent, addr string) error
}

// serve wires the parts and runs them until ctx ends or one fails.
func serve(ctx context.Context, cfg guardConfig, logger *slog.Logger, ver, rev string, hooks serveHooks) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	offline := agent.ConfigSet{Defaults: agent.DefaultTopicConfig(), Time: time.Now()}
	if hooks.offline != nil {
		offline = *hooks.offline
	}
	if cfg.TopicConfigs.File != "" {
		cs, err := agent.LoadConfigFile(cfg.TopicConfigs.File, offline.Defaults)
		if err != nil {
			return err
		}
		offline = cs
	}
	var link *kafkaLink
	if cfg.Kafka.Enabled() {
		link = &kafkaLink{cfg: cfg.Kafka, ownTopic: cfg.Enforcer.OwnershipTopic, enforcing: cfg.Enforcer.Enabled,
			logger: logger.With("component", "kafka")}
	}
	a, err := agent.New(cfg.Config, logger, configSource{link: link, offline: offline})
	if err != nil {
		return err
	}
	if _, err := exporter.New(exporter.Config{PerPartition: cfg.Metrics.PerPartition, CompactFlatBytes: cfg.Admission.CompactFlatBytes,
		Version: ver, Revision: rev}, logger, reg, a); err != nil {
		return err
	}
	// Without a cluster the enforcer still runs: it computes and reports
	// the plan, and every action fails as broker_unreachable.
	enf, err := enforcer.New(cfg.Enforcer, logger, reg, a, link, systemClock{})
	if err != nil {
		return err
	}
	routes := map[string]http.Handler{reservePath: link}
	srv, err := exporter.NewServer(exporter.ServerConfig{ListenAddress: cfg.Web.ListenAddress, WebConfigFile: cfg.Web.ConfigFile,
		Version: ver, Routes: routes}, logger, reg, a)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	addr := srv.Addr().String()
	logger.Info("serving", "address", addr, "paths", routeList(routes))
	if hooks.ready != nil {
		hooks.ready(addr)
	}

	g, ctx := errgroup.WithContext(ctx)
	for _, part := range hooks.extra {
		g.Go(func() error { return part(ctx, a, addr) })
	}
	g.Go(func() error { return a.Run(ctx) })
	g.Go(func() error { return enf.Run(ctx) })
	g.Go(func() error { return srv.Run(ctx) })
	if link != nil {
		g.Go(func() error { return link.FollowTopics(ctx, a.TopicsChanged()) })
		g.Go(func() error {
			// The broker id comes from meta.properties (spec R1.5): wait for
			// the first scan.
			var id int32 = -1
			for a.Snapshot() == nil {
				select {
				case <-ctx.Done():
					return nil
				case <-a.Updated():
				}
			}
			for _, ld := range a.Snapshot().LogDirs {
				if ld.BrokerID >= 0 {
					id = ld.BrokerID
					break
				}
			}
			return link.Run(ctx, id, func() []string { return snapshotTopics(a) }, offline, cfg.TopicConfigs.RefreshInterval,
				reserve.Config{LimitPercent: cfg.Admission.LimitPercent, CompactFlatBytes: cfg.Admission.CompactFlatBytes,
					BrokerStorageBytes: cfg.Admission.BrokerStorageBytes})
		})
	}
	err = g.Wait()
	logger.Info("stopped")
	return err
}

func routeList(routes map[string]http.Handler) []string {
	out := []string{"/metrics", "/healthz", "/readyz"}
	for p := range routes {
		out = append(out, p)
	}
	sort.Strings(out[3:])
	return out
}

// snapshotTopics lists the live topics the agent has seen.
func snapshotTopics(a *agent.Agent) []string {
	if a == nil {
		return nil
	}
	s := a.Snapshot()
	if s == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, ld := range s.LogDirs {
		for _, p := range ld.Partitions {
			if p.Kind == agent.KindLive && !seen[p.Topic] {
				seen[p.Topic] = true
				out = append(out, p.Topic)
			}
		}
	}
	sort.Strings(out)
	return out
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
