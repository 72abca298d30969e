package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/retry"
)

// ConfigFetcher reads topic configs from the cluster. The Kafka admin
// adapter (internal/kafkaadmin) implements it; agent imports no Kafka
// client.
//
// FetchConfigs returns, per topic named, either its effective config (in
// Topics, with its Fetched time) or why its lookup failed (in Errors;
// ErrTopicUnknown when the cluster does not have it), and the broker
// defaults (or DefaultsErr). One failing lookup does not void the others.
// The error summarises the failed lookups but unknown topics (nil when
// they all succeeded); the set is valid whatever the error, except when
// ctx ended.
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
	case c.RemoteCopyLagBytes < -1:
		return fmt.Errorf("remote.copy.lag.bytes %d: want -1 or >= 0", c.RemoteCopyLagBytes)
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
	// Interval between fetches of every topic's config (default 1 minute).
	Interval time.Duration
	// MaxBackoff caps the retry delay after failures (default Interval).
	MaxBackoff time.Duration
	// Debounce: how long Notify calls gather before the configs of topics
	// without one are fetched (default 100ms): a new topic's partition
	// directories appear one by one.
	Debounce time.Duration
}

// WithDefaults returns c with every unset field at its default.
func (c ConfigRefresherConfig) WithDefaults() ConfigRefresherConfig {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = c.Interval
	}
	if c.Debounce == 0 {
		c.Debounce = 100 * time.Millisecond
	}
	return c
}

// Validate checks the values (after defaults).
func (c ConfigRefresherConfig) Validate() error {
	c = c.WithDefaults()
	if c.Interval < 0 {
		return fmt.Errorf("interval %s: want > 0", c.Interval)
	}
	if c.Debounce < 0 {
		return fmt.Errorf("debounce %s: want > 0", c.Debounce)
	}
	return nil
}

// ConfigRefresher keeps topic configs fresh from the cluster (spec R7.2):
// every topic's every Interval, and a topic seen on disk without a config
// of its own as soon as Notify says the topics changed (after Debounce).
// Results are per topic: a failed lookup keeps that topic's previous
// config, with its old fetch time, and records the error; the others are
// updated. Failed lookups are retried with capped exponential backoff.
// Current never blocks: the configs are published through an atomic
// pointer, and a published ConfigSet is never modified.
type ConfigRefresher struct {
	cfg     ConfigRefresherConfig
	logger  *slog.Logger
	fetcher ConfigFetcher
	topics  func() []string
	now     func() time.Time
	current atomic.Pointer[ConfigSet]
	wake    chan struct{}
	mu      sync.Mutex // one fetch-and-merge at a time
}

// NewConfigRefresher returns a refresher serving initial (offline configs:
// a file's, or Kafka's defaults) until its first fetch. topics tells which
// topics to fetch: the live topics on disk.
func NewConfigRefresher(cfg ConfigRefresherConfig, logger *slog.Logger, fetcher ConfigFetcher, topics func() []string, initial ConfigSet) (*ConfigRefresher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config refresher: %w", err)
	}
	cfg = cfg.WithDefaults()
	r := &ConfigRefresher{cfg: cfg, logger: logger.With("component", "configs"), fetcher: fetcher, topics: topics,
		now: time.Now, wake: make(chan struct{}, 1)}
	r.current.Store(&initial)
	return r, nil
}

// Current returns the configs in use.
func (r *ConfigRefresher) Current() ConfigSet { return *r.current.Load() }

// Notify tells the refresher that the topics on disk may have changed:
// those without a config of their own are fetched after Debounce. It
// never blocks; calls coalesce.
func (r *ConfigRefresher) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Refresh fetches every topic's config once and merges the results. It
// returns the fetcher's error: the failed lookups, while the others were
// applied.
func (r *ConfigRefresher) Refresh(ctx context.Context) error {
	return r.fetch(ctx, r.topics(), true)
}

// missing lists the topics on disk without a config from the cluster,
// and those whose last lookup failed.
func (r *ConfigRefresher) missing() []string {
	cur := r.current.Load()
	var out []string
	for _, t := range r.topics() {
		if _, ok := cur.Fetched[t]; !ok || cur.Errors[t] != nil {
			out = append(out, t)
		}
	}
	return out
}

// fetch looks topics up and publishes the merged configs. all: topics is
// every topic on disk, so cluster configs of other topics are dropped.
func (r *ConfigRefresher) fetch(ctx context.Context, topics []string, all bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, err := r.fetcher.FetchConfigs(ctx, topics)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	next := mergeConfigs(*r.current.Load(), configFetch{topics: topics, all: all, got: got, err: err}, r.now())
	r.current.Store(&next)
	if err != nil {
		return fmt.Errorf("fetch topic configs: %w", err)
	}
	return nil
}

// configFetch is one lookup of topics: all says topics is every topic on
// disk; got and err are what the fetcher answered.
type configFetch struct {
	topics []string
	all    bool
	got    ConfigSet
	err    error
}

// mergeConfigs applies a fetch of topics (its result got and error
// fetchErr) to prev. A topic looked up successfully takes its new config
// and fetch time; a failed one keeps its previous config and fetch time
// and records the error (its own, else fetchErr). With all, cluster
// configs of topics not looked up (no longer on disk) are dropped.
// Defaults are taken when the fetch read them (DefaultsFetched set). The
// result shares no map with prev.
func mergeConfigs(prev ConfigSet, f configFetch, now time.Time) ConfigSet {
	got, fetchErr, topics, all := f.got, f.err, f.topics, f.all
	next := ConfigSet{
		Topics:          maps.Clone(prev.Topics),
		Defaults:        prev.Defaults,
		Time:            prev.Time, // now, once a lookup succeeded
		Fetched:         maps.Clone(prev.Fetched),
		Errors:          maps.Clone(prev.Errors),
		DefaultsFetched: prev.DefaultsFetched,
		DefaultsErr:     got.DefaultsErr,
	}
	if next.Topics == nil {
		next.Topics = map[string]TopicConfig{}
	}
	if next.Fetched == nil {
		next.Fetched = map[string]time.Time{}
	}
	if next.Errors == nil {
		next.Errors = map[string]error{}
	}
	if !got.DefaultsFetched.IsZero() {
		next.Defaults, next.DefaultsFetched = got.Defaults, got.DefaultsFetched
		next.Time = now
	} else if next.DefaultsErr == nil {
		next.DefaultsErr = fetchErr
	}
	asked := make(map[string]bool, len(topics))
	for _, t := range topics {
		asked[t] = true
		if tc, ok := got.Topics[t]; ok {
			at := got.Fetched[t]
			if at.IsZero() {
				at = now
			}
			next.Topics[t], next.Fetched[t] = tc, at
			delete(next.Errors, t)
			next.Time = now
			continue
		}
		err := got.Errors[t]
		if err == nil {
			err = fetchErr
		}
		if err == nil {
			err = errors.New("no answer for the topic")
		}
		next.Errors[t] = err
	}
	if all {
		for t := range next.Fetched {
			if !asked[t] {
				delete(next.Fetched, t)
				delete(next.Topics, t) // a cluster config; a file's has no Fetched
			}
		}
		for t := range next.Errors {
			if !asked[t] {
				delete(next.Errors, t)
			}
		}
	}
	return next
}

// Run fetches every topic's config now and every Interval, and the
// configs of topics without one Debounce after a Notify, until ctx ends.
// Failed lookups are retried with capped exponential backoff, each kind
// on its own timer: a new topic never waits for a backoff.
func (r *ConfigRefresher) Run(ctx context.Context) error {
	full := time.NewTimer(0)
	defer full.Stop()
	soon := time.NewTimer(time.Hour) // the next fetch of topics without a config
	soon.Stop()
	defer soon.Stop()
	var soonAt time.Time // zero: none scheduled
	schedule := func(d time.Duration) {
		if at := r.now().Add(d); soonAt.IsZero() || at.Before(soonAt) {
			soon.Reset(d)
			soonAt = at
		}
	}
	var fullFailures retry.Streak
	retries := 0 // failed fetches in a row of topics without a config
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
			schedule(r.cfg.Debounce)
			continue
		case <-soon.C:
			soonAt = time.Time{}
			missing := r.missing()
			if len(missing) == 0 {
				retries = 0
				continue
			}
			start := r.now()
			err := r.fetch(ctx, missing, false)
			if ctx.Err() != nil {
				return nil
			}
			r.logger.Debug("configs of topics without one fetched", "topics", len(missing), "duration", r.now().Sub(start).String(), "err", err)
			if err == nil {
				retries = 0
				continue
			}
			retries++
			schedule(r.cfg.backoff().Delay(retries))
			continue
		case <-full.C:
		}
		err := r.Refresh(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures, log := fullFailures.Fail()
			if log {
				cur := r.Current()
				r.logger.Warn("topic configs refresh failed", "err", err, "failures", failures,
					"topics_failed", len(cur.Errors), "topics", len(cur.Topics))
			}
			full.Reset(r.cfg.backoff().Delay(failures))
			continue
		}
		if failures := fullFailures.Succeed(); failures > 0 {
			r.logger.Info("topic configs refresh recovered", "failures", failures)
		}
		full.Reset(r.cfg.Interval)
	}
}

// backoff is the wait before the next try after failures in a row:
// Interval/4, /2, ... up to MaxBackoff (and never more than 128 Intervals).
func (c ConfigRefresherConfig) backoff() retry.Backoff {
	return retry.Backoff{First: c.Interval / 8 * 2, Max: min(c.MaxBackoff, c.Interval/8<<10)}
}

// loop runs refresh now and then every Interval until ctx ends. After a
// failure it retries with capped exponential backoff (Interval/4, /2, ...
// up to MaxBackoff), logs the first failure and every tenth (failed), and
// the recovery (recovered).
func (c ConfigRefresherConfig) loop(ctx context.Context, logger *slog.Logger, failed, recovered string, refresh func(context.Context) error) error {
	l := retry.Loop{Interval: c.Interval, Backoff: c.backoff(), Logger: logger, Failed: failed, Recovered: recovered}
	return l.Run(ctx, refresh)
}
