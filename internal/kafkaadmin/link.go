package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/retry"
)

// ErrNotConnected is what every adapter a Link hands out answers while the
// Link holds no connection to the cluster (before the first one, after one
// was lost, after Close). Match it with errors.Is.
var ErrNotConnected = errors.New("kafka cluster not connected")

// LinkOptions tune a Link's reconnect loop (not a YAML section: set by
// code); zero or negative values take the defaults, so there is nothing to
// validate.
type LinkOptions struct {
	// MinBackoff is the wait after the first failed connection attempt
	// (default 1s); it doubles after each failure up to MaxBackoff (30s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// HealthInterval: how often a connected Link checks the cluster still
	// answers (default 15s). HealthFailures consecutive failed checks
	// (default 2) drop the connection and reconnect from scratch.
	HealthInterval time.Duration
	HealthFailures int
}

// WithDefaults returns o with every unset field at its default.
func (o LinkOptions) WithDefaults() LinkOptions {
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = 15 * time.Second
	}
	if o.HealthFailures <= 0 {
		o.HealthFailures = 2
	}
	return o
}

// Link is the guard's one connection to the cluster. It owns the Sarama
// client, the cluster admin on it and the ownership producer; it connects
// with capped exponential backoff, checks the connection while it lasts,
// reconnects from scratch when the cluster went away, and closes
// everything when Run ends. The adapters it hands out (Enforce,
// ConfigFetcher, ClusterReader) hold no Sarama handle of their own: every
// call asks the Link for the current connection, and answers
// ErrNotConnected without one.
type Link struct {
	cfg    Config
	opts   LinkOptions
	logger *slog.Logger
	// dial opens a connection; replaced by tests that count dials.
	dial func(Config) (*conn, error)

	mu        sync.RWMutex
	c         *conn
	attempted chan struct{} // closed after the first connection attempt
	up        chan struct{} // closed at the first successful connection
	onceAtt   sync.Once
	onceUp    sync.Once
}

// conn is one set of Sarama handles.
type conn struct {
	client sarama.Client
	admin  sarama.ClusterAdmin

	mu       sync.Mutex // guards producer, closed and sending
	producer sarama.SyncProducer
	closed   bool
	sending  int // writes in flight on producer (sendMessage)
}

// close releases the producer, the admin and the client under it. A
// write in flight keeps the producer until it returns (Sarama's
// SendMessage panics on a producer closed under it); its last sender
// closes it then (sendMessage). close waits for no write.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	if c.producer != nil && c.sending == 0 {
		errs = append(errs, c.producer.Close())
		c.producer = nil
	}
	if c.admin != nil {
		errs = append(errs, c.admin.Close()) // closes the client too
	} else if c.client != nil {
		errs = append(errs, c.client.Close())
	}
	return errors.Join(errs...)
}

// NewLink returns a Link for cfg (validated by the caller). It performs no
// I/O: Run or Connect opens the connection.
func NewLink(cfg Config, logger *slog.Logger, opts LinkOptions) *Link {
	return &Link{
		cfg: cfg.WithDefaults(), opts: opts.WithDefaults(), logger: logger.With("component", "kafka"),
		dial: dial, attempted: make(chan struct{}), up: make(chan struct{}),
	}
}

// dial connects with the configuration: a client (which reads the
// cluster's metadata from a bootstrap server, so an unreachable cluster
// fails here) and a cluster admin on it.
func dial(cfg Config) (*conn, error) {
	sc, err := cfg.SaramaConfig()
	if err != nil {
		return nil, err
	}
	return dialSarama(cfg.BootstrapServers, sc)
}

func dialSarama(addrs []string, sc *sarama.Config) (*conn, error) {
	c := *sc
	// The ownership records: acknowledged by every in-sync replica, never
	// an auto-created topic.
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = false
	// The ownership topic's records go to partition 0, named in each
	// message: the default hash partitioner would ignore it. Set here,
	// before the client exists: its config is read by every connection
	// it opens, from any goroutine.
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Metadata.AllowAutoTopicCreation = false
	client, err := sarama.NewClient(addrs, &c)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(addrs, ","), err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return &conn{client: client, admin: admin}, nil
}

// Connect makes one connection attempt (for one-shot commands). Close
// releases it.
func (l *Link) Connect() error {
	c, err := l.dial(l.cfg)
	l.onceAtt.Do(func() { close(l.attempted) })
	if err != nil {
		return err
	}
	l.set(c)
	return nil
}

// Attempted is closed once the first connection attempt has ended, in
// success or failure. Parts that would only report "not connected" before
// it wait for it, so a start logs no error before the link has tried.
func (l *Link) Attempted() <-chan struct{} { return l.attempted }

// Up is closed at the first successful connection.
func (l *Link) Up() <-chan struct{} { return l.up }

// Connected reports whether the Link holds a connection now.
func (l *Link) Connected() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.c != nil
}

// conn returns the current connection or ErrNotConnected.
func (l *Link) conn() (*conn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.c == nil {
		return nil, ErrNotConnected
	}
	return l.c, nil
}

func (l *Link) set(c *conn) {
	l.mu.Lock()
	old := l.c
	l.c = c
	l.mu.Unlock()
	if old != nil {
		old.close()
	}
	// A connection is an attempt too: Attempted is closed whenever Up is.
	l.onceAtt.Do(func() { close(l.attempted) })
	l.onceUp.Do(func() { close(l.up) })
}

// Close drops the connection; the adapters answer ErrNotConnected from
// then on. Run closes the Link when it ends.
func (l *Link) Close() error {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.close()
}

// Run connects, keeps the connection healthy and reconnects until ctx
// ends; then it closes the connection. Failures are logged once when they
// start, then every tenth attempt, and recovery once.
func (l *Link) Run(ctx context.Context) error {
	defer l.Close()
	backoff := retry.Backoff{First: l.opts.MinBackoff, Max: l.opts.MaxBackoff}
	var streak retry.Streak
	attempted := func() { l.onceAtt.Do(func() { close(l.attempted) }) }
	for {
		c, err := l.dial(l.cfg)
		if err != nil {
			failures, log := streak.Fail()
			wait := backoff.Delay(failures)
			if log {
				l.logger.Warn("kafka connection failed, retrying", "err", err, "failures", failures, "retry_in", wait.String())
			}
			attempted() // after the log line: it is the first warning of a start
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			continue
		}
		l.set(c)
		l.logger.Info("kafka connected", "bootstrap_servers", strings.Join(l.cfg.BootstrapServers, ","),
			"brokers", len(c.client.Brokers()), "failed_attempts", streak.Succeed())
		attempted()
		err = l.watch(ctx, c)
		if ctx.Err() != nil {
			return nil
		}
		l.logger.Warn("kafka connection lost, reconnecting", "err", err)
		l.drop(c)
	}
}

// drop closes c if it is still the current connection.
func (l *Link) drop(c *conn) {
	l.mu.Lock()
	if l.c == c {
		l.c = nil
	}
	l.mu.Unlock()
	c.close()
}

// watch checks the connection every HealthInterval and returns after
// HealthFailures consecutive failures, or nil when ctx ends.
func (l *Link) watch(ctx context.Context, c *conn) error {
	t := time.NewTicker(l.opts.HealthInterval)
	defer t.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := ping(c.client)
		if err == nil {
			failed = 0
			continue
		}
		failed++
		if failed >= l.opts.HealthFailures {
			return err
		}
	}
}

// ping asks the brokers for their API versions, one after another until
// one answers: cheap (no topic metadata), and it fails when none answers.
func ping(client sarama.Client) error {
	if client.Closed() {
		return sarama.ErrClosedClient
	}
	var errs []error
	for _, b := range client.Brokers() {
		if err := openBroker(b, client.Config()); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 0}); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b.ID(), err))
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return errors.New("no broker known")
	}
	return errors.Join(errs...)
}

// openBroker connects b when it is not connected.
func openBroker(b *sarama.Broker, conf *sarama.Config) error {
	if ok, _ := b.Connected(); ok {
		return nil
	}
	if err := b.Open(conf); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return err
	}
	return nil
}

// fixed is a connection source over handles the caller owns (tests, the
// compatibility constructors).
type fixed struct{ c *conn }

func (f fixed) conn() (*conn, error) { return f.c, nil }

// connSource gives an adapter the connection for one call.
type connSource interface {
	conn() (*conn, error)
}

var _ connSource = (*Link)(nil)
