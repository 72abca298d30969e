package forecast

import (
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// SnapshotSource gives the agent's latest published snapshot, or nil before
// the first scan.
type SnapshotSource interface {
	Snapshot() *agent.Snapshot
}

// Config configures the foresight metrics.
type Config struct {
	// Bands are the enforcer profile's bands: a time to band is exported
	// for each band with From > 0.
	Bands []Band
	Rate  RateConfig
}

// Validate checks the bands.
func (c Config) Validate() error {
	for _, b := range c.Bands {
		if b.Name == "" || b.From < 0 || b.From > 1 {
			return fmt.Errorf("forecast band %q from %v: want a name and 0 <= from <= 1", b.Name, b.From)
		}
	}
	return nil
}

// Collector exports the projection of every log dir. A scrape feeds the
// latest snapshot to the ingress estimate (a snapshot already seen is
// ignored) and projects from it: no disk or network I/O.
type Collector struct {
	cfg    Config
	logger *slog.Logger
	src    SnapshotSource
	rates  *Rates

	projected, timeToBand, ingress *prometheus.Desc
}

// New builds the collector over src and registers it on reg.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer, src SnapshotSource) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil || reg == nil || src == nil {
		return nil, errors.New("forecast: logger, registerer and snapshot source are required")
	}
	name := func(n string) string { return prometheus.BuildFQName("kafka_disk_guard", "log_dir", n) }
	c := &Collector{
		cfg: cfg, logger: logger.With("component", "forecast"), src: src, rates: NewRates(cfg.Rate),
		projected: prometheus.NewDesc(name("projected_usage_ratio"),
			"Projected steady-state usage of the log dir's capacity once every topic's retention has caught up with its current ingress (+Inf when a topic with ingress has no retention).",
			[]string{"log_dir"}, nil),
		timeToBand: prometheus.NewDesc(name("time_to_band_seconds"),
			"Seconds until usage reaches the band at the current ingress, each partition growing until its steady-state footprint; 0 when in or over the band, absent when the band is not reached.",
			[]string{"log_dir", "band"}, nil),
		ingress: prometheus.NewDesc(name("ingress_bytes_per_second"),
			"Estimated ingress of the log dir's topics (median of 5-minute rates over the last hour), the rate the projection uses.",
			[]string{"log_dir"}, nil),
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register forecast collector: %w", err)
	}
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.projected
	ch <- c.timeToBand
	ch <- c.ingress
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.src.Snapshot()
	if snap == nil {
		return
	}
	c.rates.Observe(snap)
	for _, d := range Project(snap, c.rates.Snapshot()) {
		if !d.Known {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.projected, prometheus.GaugeValue, d.ProjectedRatio(), d.Path)
		ch <- prometheus.MustNewConstMetric(c.ingress, prometheus.GaugeValue, d.IngressBytesPerSecond, d.Path)
		for _, b := range c.cfg.Bands {
			if b.From <= 0 {
				continue
			}
			if t, ok := d.TimeTo(b.From); ok {
				ch <- prometheus.MustNewConstMetric(c.timeToBand, prometheus.GaugeValue, math.Round(t.Seconds()), d.Path, b.Name)
			}
		}
	}
}
