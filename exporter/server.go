package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// DefaultListenAddress is where the HTTP server listens unless told
// otherwise (--web.listen-address).
const DefaultListenAddress = ":9644"

// ServerConfig configures the HTTP server.
type ServerConfig struct {
	// ListenAddress is host:port (web.listenAddress). Default ":9644".
	ListenAddress string
	// WebConfigFile is an exporter-toolkit web config file enabling TLS and
	// basic auth (web.configFile). Empty: plain HTTP, no auth.
	WebConfigFile string
	// ProbeListenAddress, when set, serves /healthz and /readyz on a
	// listener of their own: plain HTTP without authentication, for
	// kubelet probes when the main listener requires TLS client
	// certificates or basic auth (web.probeListenAddress).
	ProbeListenAddress string
	// StaleAfter: /readyz fails when the snapshot is older than this.
	// Default 5m.
	StaleAfter time.Duration
	// ShutdownTimeout bounds the graceful shutdown. Default 5s.
	ShutdownTimeout time.Duration
	// Timeouts of every connection: reading the request headers (default
	// 10s), the whole request (30s), writing the answer (60s: a
	// per-partition scrape of a large broker takes seconds) and an idle
	// keep-alive connection (2m).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Version is shown on the landing page.
	Version string
	// Now is the clock for staleness. Nil means time.Now.
	Now func() time.Time
	// Routes are further handlers served by path (the admission endpoint).
	Routes map[string]http.Handler
}

// WithDefaults returns c with every unset field at its default.
func (c ServerConfig) WithDefaults() ServerConfig {
	if c.ListenAddress == "" {
		c.ListenAddress = DefaultListenAddress
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.StaleAfter, 5 * time.Minute}, {&c.ShutdownTimeout, 5 * time.Second},
		{&c.ReadHeaderTimeout, 10 * time.Second}, {&c.ReadTimeout, 30 * time.Second},
		{&c.WriteTimeout, 60 * time.Second}, {&c.IdleTimeout, 2 * time.Minute},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks the values (after defaults); errors name the YAML path.
// The web config file is read by NewServer.
func (c ServerConfig) Validate() error {
	c = c.WithDefaults()
	if _, _, err := net.SplitHostPort(c.ListenAddress); err != nil {
		return fmt.Errorf("web.listenAddress: %q is not host:port (default %s)", c.ListenAddress, DefaultListenAddress)
	}
	if c.ProbeListenAddress != "" {
		if _, _, err := net.SplitHostPort(c.ProbeListenAddress); err != nil {
			return fmt.Errorf("web.probeListenAddress: %q is not host:port", c.ProbeListenAddress)
		}
		if _, port, _ := net.SplitHostPort(c.ProbeListenAddress); c.ProbeListenAddress == c.ListenAddress && port != "0" {
			return fmt.Errorf("web.probeListenAddress: %q is web.listenAddress too; give another port", c.ProbeListenAddress)
		}
	}
	for _, d := range []time.Duration{c.StaleAfter, c.ShutdownTimeout, c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout} {
		if d < 0 {
			return errors.New("server timeouts must not be negative")
		}
	}
	return nil
}

// Server serves /metrics, /healthz, /readyz and a landing page, and the
// probes alone on the probe listener when one is configured.
type Server struct {
	cfg      ServerConfig
	logger   *slog.Logger
	src      SnapshotSource
	handler  http.Handler
	probes   http.Handler
	listener net.Listener
	probeL   net.Listener
}

// NewServer builds the HTTP server over gatherer (the registry the exporter
// and the other parts registered on) and src (for readiness).
func NewServer(cfg ServerConfig, logger *slog.Logger, gatherer prometheus.Gatherer, src SnapshotSource) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	cfg = cfg.WithDefaults()
	if cfg.WebConfigFile != "" {
		if err := web.Validate(cfg.WebConfigFile); err != nil {
			return nil, fmt.Errorf("web.configFile %s: %w", cfg.WebConfigFile, err)
		}
	}
	if logger == nil || gatherer == nil || src == nil {
		return nil, errors.New("server: logger, gatherer and snapshot source are required")
	}
	s := &Server{cfg: cfg, logger: logger.With("component", "http"), src: src}
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "kafka-disk-guard",
		Description: "Keeps Apache Kafka brokers from running out of disk",
		Version:     cfg.Version,
		Profiling:   "false",
		Links: []web.LandingLinks{
			{Address: "/metrics", Text: "Metrics"},
			{Address: "/healthz", Text: "Health", Description: "200 while the process runs"},
			{Address: "/readyz", Text: "Readiness", Description: "200 once a full scan exists and is fresh"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("landing page: %w", err)
	}
	healthz := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:      promLogger{s.logger},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", s.readyz)
	for path, h := range cfg.Routes {
		mux.Handle(path, h)
	}
	mux.Handle("/", landing)
	s.handler = mux
	probes := http.NewServeMux()
	probes.HandleFunc("/healthz", healthz)
	probes.HandleFunc("/readyz", s.readyz)
	s.probes = probes
	return s, nil
}

// Handler returns the server's routes (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the listen addresses. Run calls it when it has not been
// called; calling it first lets the caller learn the bound addresses.
func (s *Server) Listen() error {
	if s.listener != nil {
		return nil
	}
	l, err := net.Listen("tcp", s.cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.ListenAddress, err)
	}
	if s.cfg.ProbeListenAddress != "" {
		pl, err := net.Listen("tcp", s.cfg.ProbeListenAddress)
		if err != nil {
			l.Close()
			return fmt.Errorf("listen %s (probes): %w", s.cfg.ProbeListenAddress, err)
		}
		s.probeL = pl
	}
	s.listener = l
	return nil
}

// ProbeAddr is the probe listener's bound address, nil without one.
func (s *Server) ProbeAddr() net.Addr {
	if s.probeL == nil {
		return nil
	}
	return s.probeL.Addr()
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// Addr is the bound address, nil before Listen.
func (s *Server) Addr() net.Addr {
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// Run serves until ctx is done, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	srv := s.httpServer(s.handler)
	webConfig := s.cfg.WebConfigFile
	systemd := false
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{s.cfg.ListenAddress},
		WebSystemdSocket:   &systemd,
		WebConfigFile:      &webConfig,
	}
	servers := []*http.Server{srv}
	errc := make(chan error, 2)
	go func() { errc <- web.Serve(s.listener, srv, flags, s.logger) }()
	if s.probeL != nil {
		// Plain HTTP, no authentication: /healthz and /readyz only.
		psrv := s.httpServer(s.probes)
		servers = append(servers, psrv)
		s.logger.Info("serving probes", "address", s.probeL.Addr().String(), "paths", []string{"/healthz", "/readyz"})
		go func() { errc <- psrv.Serve(s.probeL) }()
	}
	var runErr error
	select {
	case err := <-errc:
		runErr = fmt.Errorf("serve http: %w", err)
		s.listener.Close()
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	for _, sv := range servers {
		if err := sv.Shutdown(sctx); err != nil {
			sv.Close()
			runErr = errors.Join(runErr, fmt.Errorf("shut down http: %w", err))
		}
	}
	n := len(servers)
	if runErr != nil {
		n-- // one already returned
	}
	for range n {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			runErr = errors.Join(runErr, fmt.Errorf("serve http: %w", err))
		}
	}
	return runErr
}

// readyz answers 200 once the first full scan exists and the snapshot is
// not older than StaleAfter, 503 otherwise.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	ok, why := s.ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, why)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *Server) ready() (bool, string) {
	snap := s.src.Snapshot()
	if snap == nil || snap.Health.LastFullScan.IsZero() {
		return false, "no full scan yet"
	}
	fresh := snap.Time
	if snap.Health.LastFullScan.After(fresh) {
		fresh = snap.Health.LastFullScan
	}
	if age := s.cfg.Now().Sub(fresh); age > s.cfg.StaleAfter {
		return false, fmt.Sprintf("snapshot stale: %s old (limit %s)", age.Round(time.Second), s.cfg.StaleAfter)
	}
	return true, ""
}

// promLogger adapts slog to promhttp's error log.
type promLogger struct{ logger *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.logger.Warn("metrics gathering error", "error", fmt.Sprint(v...))
}
