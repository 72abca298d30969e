package agent

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"
)

// RemoteOffsetsFetcher reads the remote tier's offsets of tiered
// partitions from their leaders. The Kafka admin adapter
// (internal/kafkaadmin) implements it with ListOffsets and Kafka's tiered
// timestamps (KIP-1005). A partition whose offsets could not be read is
// returned with Err set; the error is for the request as a whole.
type RemoteOffsetsFetcher interface {
	FetchRemoteOffsets(ctx context.Context, parts []TopicPartition) (map[TopicPartition]RemoteOffsets, error)
}

// TieredRefresherConfig configures a TieredRefresher: the same schedule
// as the configs' (Interval default 1 minute, MaxBackoff default
// Interval).
type TieredRefresherConfig = ConfigRefresherConfig

// tieredState is one published fetch.
type tieredState struct {
	offsets map[TopicPartition]RemoteOffsets
	at      time.Time
}

// TieredRefresher keeps tiered partitions' remote offsets fresh (spec
// R1.7): the highest offset in remote storage bounds what Kafka deletes
// locally. A failed fetch keeps nothing stale: the offsets it could not
// read are published with their error, so those partitions have nothing
// eligible until a fetch succeeds.
type TieredRefresher struct {
	cfg     TieredRefresherConfig
	logger  *slog.Logger
	fetcher RemoteOffsetsFetcher
	parts   func() []TopicPartition
	current atomic.Pointer[tieredState]
	// failing: partitions whose last fetch failed (owned by Run/Refresh's
	// caller: one goroutine).
	failing map[TopicPartition]string
}

// NewTieredRefresher returns a refresher for the partitions parts names
// (the tiered partitions on disk).
func NewTieredRefresher(cfg TieredRefresherConfig, logger *slog.Logger, fetcher RemoteOffsetsFetcher, parts func() []TopicPartition) (*TieredRefresher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tiered refresher: %w", err)
	}
	r := &TieredRefresher{cfg: cfg, logger: logger.With("component", "tiered"), fetcher: fetcher, parts: parts,
		failing: map[TopicPartition]string{}}
	r.current.Store(&tieredState{})
	return r, nil
}

// Current returns the latest offsets and when they were fetched (zero
// before the first fetch). The map is never modified afterwards.
func (r *TieredRefresher) Current() (map[TopicPartition]RemoteOffsets, time.Time) {
	s := r.current.Load()
	return s.offsets, s.at
}

// Refresh fetches once. Partitions that could not be read are logged
// once each when they start failing and when they recover.
func (r *TieredRefresher) Refresh(ctx context.Context) error {
	parts := r.parts()
	now := time.Now()
	var got map[TopicPartition]RemoteOffsets
	var err error
	if len(parts) > 0 {
		got, err = r.fetcher.FetchRemoteOffsets(ctx, parts)
	}
	out := make(map[TopicPartition]RemoteOffsets, len(parts))
	for _, tp := range parts {
		ro, ok := got[tp]
		switch {
		case err != nil:
			ro = RemoteOffsets{Err: err.Error()}
		case !ok:
			ro = RemoteOffsets{Err: "no answer from the leader"}
		}
		if ro.Time.IsZero() {
			ro.Time = now
		}
		out[tp] = ro
		if ro.Err != "" {
			if _, was := r.failing[tp]; !was {
				r.logger.Warn("tiered partition offsets unreadable, nothing in it is eligible", "topic", tp.Topic, "partition", tp.Partition, "err", ro.Err)
			}
			r.failing[tp] = ro.Err
		} else if _, was := r.failing[tp]; was {
			delete(r.failing, tp)
			r.logger.Info("tiered partition offsets readable again", "topic", tp.Topic, "partition", tp.Partition)
		}
	}
	for tp := range r.failing {
		if _, ok := out[tp]; !ok {
			delete(r.failing, tp)
		}
	}
	r.current.Store(&tieredState{offsets: maps.Clone(out), at: now})
	if err != nil {
		return fmt.Errorf("fetch remote offsets: %w", err)
	}
	return nil
}

// Run fetches now and then every Interval until ctx ends.
func (r *TieredRefresher) Run(ctx context.Context) error {
	return r.cfg.loop(ctx, r.logger, refreshLogs{failed: "tiered offsets refresh failed", recovered: "tiered offsets refresh recovered"}, r.Refresh)
}

// TieredPartitions lists, each once, the live partitions in dirs whose
// topic is tiered with these configs: those whose remote offsets are
// fetched from their leaders (TieredRefresher, and the scan command).
func (c ConfigSet) TieredPartitions(dirs []LogDir) []TopicPartition {
	var out []TopicPartition
	seen := map[TopicPartition]bool{}
	for i := range dirs {
		for j := range dirs[i].Partitions {
			p := &dirs[i].Partitions[j]
			tp := TopicPartition{p.Topic, p.Partition}
			if p.Kind == KindLive && !seen[tp] && c.For(p.Topic).Tiered(p.Topic) {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}
