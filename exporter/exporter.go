// Package exporter turns the agent's latest Snapshot into Prometheus
// metrics and serves them over HTTP. A scrape reads only the in-memory
// snapshot: it does no disk or network I/O, so its cost depends on the
// number of topics, not on the number of segments on disk.
package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// Namespace prefixes every metric of the product.
const Namespace = "kafka_disk_guard"

// SnapshotSource gives the agent's latest published snapshot, or nil before
// the first scan. The returned Snapshot must not be modified.
type SnapshotSource interface {
	Snapshot() *agent.Snapshot
}

// Config configures the metrics.
type Config struct {
	// PerPartition adds a partition label to the per-topic series
	// (--metrics.per-partition). Off by default: series then grow with
	// topics, not partitions.
	PerPartition bool
	// CompactFlatBytes is the reservation of a compact-only partition
	// (spec R5.1). Zero means reserve.DefaultCompactFlatBytes (1 GiB).
	CompactFlatBytes int64
	// Version and Revision label kafka_disk_guard_build_info.
	Version  string
	Revision string
	// Now is the clock for ages (oldest eligible segment, topic configs).
	// Nil means time.Now.
	Now func() time.Time
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.CompactFlatBytes == 0 {
		c.CompactFlatBytes = reserve.DefaultCompactFlatBytes
	}
	if c.Version == "" {
		c.Version = "(devel)"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks the values (after defaults); errors name the YAML path.
func (c Config) Validate() error {
	if c.CompactFlatBytes < 0 {
		return fmt.Errorf("admission.compactFlatBytes: %d is negative; want bytes > 0", c.CompactFlatBytes)
	}
	return nil
}

// Exporter owns the collector registered for the agent's metrics.
type Exporter struct {
	collector *collector
}

// New builds the collector over src and registers it on reg.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer, src SnapshotSource) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("exporter config: %w", err)
	}
	cfg = cfg.WithDefaults()
	if logger == nil || reg == nil || src == nil {
		return nil, errors.New("exporter: logger, registerer and snapshot source are required")
	}
	c := newCollector(cfg, logger.With("component", "exporter"), src)
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register exporter collector: %w", err)
	}
	return &Exporter{collector: c}, nil
}
