package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// ConfigFetcher reads topic configs from the cluster. The Kafka admin
// adapter (internal/kafkaadmin) implements it; agent imports no Kafka
// client. FetchConfigs returns the effective config of each topic named
// (topics that do not exist are left out) and the broker defaults.
type ConfigFetcher interface {
	FetchConfigs(ctx context.Context, topics []string) (ConfigSet, error)
}

// ParseCleanupPolicy parses a cleanup.policy value as Kafka writes it:
// "delete", "compact", both separated by a comma (either order), or the
// empty list (Kafka 4.2+: no time or size retention, see Classify).
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var p CleanupPolicy
	s = strings.TrimSpace(s)
	if s == "" {
		return p, nil
	}
	for _, part := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "delete":
			p.Delete = true
		case "compact":
			p.Compact = true
		default:
			return p, fmt.Errorf("unknown cleanup policy %q", part)
		}
	}
	return p, nil
}

// ValidateTopicConfig checks values the way Kafka bounds them
// (LogConfig's validators).
func ValidateTopicConfig(c TopicConfig) error {
	switch {
	case c.RetentionMs < -1:
		return fmt.Errorf("retention.ms %d: want -1 or >= 0", c.RetentionMs)
	case c.SegmentBytes <= 0:
		return fmt.Errorf("segment.bytes %d: want > 0", c.SegmentBytes)
	case c.SegmentIndexBytes < 0:
		// Kafka's own bound is 4; 0 is accepted for what-if arithmetic
		// (reserve) where index bytes are left out.
		return fmt.Errorf("segment.index.bytes %d: want >= 0", c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("index.interval.bytes %d: want >= 0", c.IndexIntervalBytes)
	case c.LocalRetentionMs < -2:
		return fmt.Errorf("local.retention.ms %d: want -2, -1 or >= 0", c.LocalRetentionMs)
	case c.LocalRetentionBytes < -2:
		return fmt.Errorf("local.retention.bytes %d: want -2, -1 or >= 0", c.LocalRetentionBytes)
	}
	// retention.bytes has no bound in Kafka: any negative value is no limit.
	return nil
}

// applyBlock applies one YAML block of Kafka topic config names on top of
// base. where names the block in errors ("defaults", "topics.orders").
// Every Kafka topic config key is accepted (IsKafkaTopicConfig); those
// retention depends on are applied, the others ignored. A key that is not
// Kafka's is refused.
func applyBlock(n *yaml.Node, base TopicConfig, where string) (TopicConfig, error) {
	c := base
	if n.Kind == 0 || n.Tag == "!!null" {
		return c, nil
	}
	if n.Kind != yaml.MappingNode {
		return c, fmt.Errorf("%s: line %d: want a mapping of topic configs", where, n.Line)
	}
	var internalSegment *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if !IsKafkaTopicConfig(k) {
			return c, fmt.Errorf("%s.%s: line %d: unknown field: not a Kafka topic config", where, k, n.Content[i].Line)
		}
		if v.Kind != yaml.ScalarNode {
			return c, fmt.Errorf("%s.%s: line %d: want a single value", where, k, v.Line)
		}
		if k == "internal.segment.bytes" {
			internalSegment = v
			continue
		}
		if err := setTopicConfig(&c, k, v.Value); err != nil {
			return c, fmt.Errorf("%s.%s: line %d: %w", where, k, v.Line, err)
		}
	}
	if v := internalSegment; v != nil {
		if err := setTopicConfig(&c, "segment.bytes", v.Value); err != nil {
			return c, fmt.Errorf("%s.internal.segment.bytes: line %d: %w", where, v.Line, err)
		}
	}
	if err := ValidateTopicConfig(c); err != nil {
		return c, fmt.Errorf("%s.%w", where, err)
	}
	return c, nil
}

// LoadConfigFile reads offline topic configs from a YAML file:
//
//	defaults:            # override the given defaults (Kafka's, or flags)
//	  retention.ms: 604800000
//	  cleanup.policy: delete
//	topics:
//	  orders:
//	    retention.bytes: 1073741824
//	    cleanup.policy: compact,delete
//
// Keys are Kafka's topic config names (every one Kafka 4.4 defines is
// accepted; those retention depends on are applied); a topic's block
// applies on top of the defaults. Keys that are not Kafka's and bad values
// are refused with an error that names the field.
func LoadConfigFile(path string, defaults TopicConfig) (ConfigSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ConfigSet{}, fmt.Errorf("read configs file: %w", err)
	}
	cs, err := ParseConfigFile(data, defaults)
	if err != nil {
		return ConfigSet{}, fmt.Errorf("configs file %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		cs.Time = fi.ModTime()
	}
	return cs, nil
}

// ParseConfigFile is LoadConfigFile on bytes.
func ParseConfigFile(data []byte, defaults TopicConfig) (ConfigSet, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ConfigSet{}, err
	}
	var defs, topics *yaml.Node
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			return ConfigSet{}, fmt.Errorf("line %d: want a mapping with defaults and topics", root.Line)
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			switch k := root.Content[i].Value; k {
			case "defaults":
				defs = root.Content[i+1]
			case "topics":
				topics = root.Content[i+1]
			default:
				return ConfigSet{}, fmt.Errorf("%s: line %d: unknown field", k, root.Content[i].Line)
			}
		}
	}
	d := defaults
	if defs != nil {
		var err error
		if d, err = applyBlock(defs, defaults, "defaults"); err != nil {
			return ConfigSet{}, err
		}
	}
	cs := ConfigSet{Defaults: d, Topics: map[string]TopicConfig{}}
	if topics != nil && topics.Tag != "!!null" {
		if topics.Kind != yaml.MappingNode {
			return ConfigSet{}, fmt.Errorf("topics: line %d: want a mapping of topic names", topics.Line)
		}
		for i := 0; i+1 < len(topics.Content); i += 2 {
			name := topics.Content[i].Value
			if !validTopicName(name) {
				return ConfigSet{}, fmt.Errorf("topics.%s: not a valid topic name", name)
			}
			c, err := applyBlock(topics.Content[i+1], d, "topics."+name)
			if err != nil {
				return ConfigSet{}, err
			}
			cs.Topics[name] = c
		}
	}
	return cs, nil
}

// ConfigRefresherConfig configures a ConfigRefresher.
type ConfigRefresherConfig struct {
	// Interval between fetches (default 1 minute).
	Interval time.Duration
	// MaxBackoff caps the retry delay after failures (default Interval).
	MaxBackoff time.Duration
}

// WithDefaults returns c with every unset field at its default.
func (c ConfigRefresherConfig) WithDefaults() ConfigRefresherConfig {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = c.Interval
	}
	return c
}

// Validate checks the values (after defaults).
func (c ConfigRefresherConfig) Validate() error {
	c = c.WithDefaults()
	if c.Interval < 0 {
		return fmt.Errorf("interval %s: want > 0", c.Interval)
	}
	return nil
}

// ConfigRefresher keeps topic configs fresh from the cluster. On failure
// it keeps serving the last configs it had (spec R6) and retries with
// capped exponential backoff.
type ConfigRefresher struct {
	cfg     ConfigRefresherConfig
	logger  *slog.Logger
	fetcher ConfigFetcher
	topics  func() []string
	current atomic.Pointer[ConfigSet]
}

// NewConfigRefresher returns a refresher serving initial until its first
// successful fetch. topics tells which topics to fetch (those on disk).
func NewConfigRefresher(cfg ConfigRefresherConfig, logger *slog.Logger, fetcher ConfigFetcher, topics func() []string, initial ConfigSet) (*ConfigRefresher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config refresher: %w", err)
	}
	cfg = cfg.WithDefaults()
	r := &ConfigRefresher{cfg: cfg, logger: logger.With("component", "configs"), fetcher: fetcher, topics: topics}
	r.current.Store(&initial)
	return r, nil
}

// Current returns the configs in use.
func (r *ConfigRefresher) Current() ConfigSet { return *r.current.Load() }

// Refresh fetches once.
func (r *ConfigRefresher) Refresh(ctx context.Context) error {
	cs, err := r.fetcher.FetchConfigs(ctx, r.topics())
	if err != nil {
		return fmt.Errorf("fetch topic configs: %w", err)
	}
	r.current.Store(&cs)
	return nil
}

// Run fetches now and then every Interval until ctx ends.
func (r *ConfigRefresher) Run(ctx context.Context) error {
	return r.cfg.loop(ctx, r.logger, refreshLogs{failed: "topic configs refresh failed", recovered: "topic configs refresh recovered"}, r.Refresh)
}

// refreshLogs are a refresh loop's log messages.
type refreshLogs struct{ failed, recovered string }

// loop runs refresh now and then every Interval until ctx ends. After a
// failure it retries with capped exponential backoff (Interval/4, /2, ...
// up to MaxBackoff), logs the first failure and every tenth, and the
// recovery.
func (c ConfigRefresherConfig) loop(ctx context.Context, logger *slog.Logger, msgs refreshLogs, refresh func(context.Context) error) error {
	delay := time.Duration(0)
	failures := 0
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		if err := refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			if failures == 1 || failures%10 == 0 {
				logger.Warn(msgs.failed, "err", err, "failures", failures)
			}
			delay = min(c.Interval/8<<min(failures, 10), c.MaxBackoff)
			continue
		}
		if failures > 0 {
			logger.Info(msgs.recovered, "failures", failures)
		}
		failures = 0
		delay = c.Interval
	}
}
