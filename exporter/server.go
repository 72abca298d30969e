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
	// ListenAddress is host:port (--web.listen-address). Default ":9644".
	ListenAddress string
	// WebConfigFile is an exporter-toolkit web config file enabling TLS and
	// basic auth (--web.config.file). Empty: plain HTTP, no auth.
	WebConfigFile string
	// StaleAfter: /readyz fails when the snapshot is older than this.
	// Default 5m.
	StaleAfter time.Duration
	// ShutdownTimeout bounds the graceful shutdown. Default 5s.
	ShutdownTimeout time.Duration
	// Version is shown on the landing page.
	Version string
	// Now is the clock for staleness. Nil means time.Now.
	Now func() time.Time
	// Routes are further handlers served by path (the admission endpoint).
	Routes map[string]http.Handler
}

// Validate checks the config and fills in defaults.
func (c *ServerConfig) Validate() error {
	if c.ListenAddress == "" {
		c.ListenAddress = DefaultListenAddress
	}
	if _, _, err := net.SplitHostPort(c.ListenAddress); err != nil {
		return fmt.Errorf("web.listen-address %q: %w", c.ListenAddress, err)
	}
	if c.WebConfigFile != "" {
		if err := web.Validate(c.WebConfigFile); err != nil {
			return fmt.Errorf("web.config.file %s: %w", c.WebConfigFile, err)
		}
	}
	if c.StaleAfter < 0 || c.ShutdownTimeout < 0 {
		return errors.New("stale_after and shutdown_timeout must not be negative")
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = 5 * time.Minute
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Server serves /metrics, /healthz, /readyz and a landing page.
type Server struct {
	cfg      ServerConfig
	logger   *slog.Logger
	src      SnapshotSource
	handler  http.Handler
	listener net.Listener
}

// NewServer builds the HTTP server over gatherer (the registry the exporter
// and the other parts registered on) and src (for readiness).
func NewServer(cfg ServerConfig, logger *slog.Logger, gatherer prometheus.Gatherer, src SnapshotSource) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
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
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:      promLogger{s.logger},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", s.readyz)
	for path, h := range cfg.Routes {
		mux.Handle(path, h)
	}
	mux.Handle("/", landing)
	s.handler = mux
	return s, nil
}

// Handler returns the server's routes (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the listen address. Run calls it when it has not been
// called; calling it first lets the caller learn the bound address.
func (s *Server) Listen() error {
	if s.listener != nil {
		return nil
	}
	l, err := net.Listen("tcp", s.cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.ListenAddress, err)
	}
	s.listener = l
	return nil
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
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	webConfig := s.cfg.WebConfigFile
	systemd := false
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{s.cfg.ListenAddress},
		WebSystemdSocket:   &systemd,
		WebConfigFile:      &webConfig,
	}
	errc := make(chan error, 1)
	go func() { errc <- web.Serve(s.listener, srv, flags, s.logger) }()
	select {
	case err := <-errc:
		s.listener.Close()
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		<-errc
		return fmt.Errorf("shut down http: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
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
