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
	// local: the broker the guard runs beside (WithLocalBroker); seen:
	// each partition's boundaries as fetched, oldest first, for the
	// followers' settled boundary. now: the clock.
	local func() int32
	seen  map[TopicPartition][]boundarySeen
	now   func() time.Time
}

// boundarySeen is an upload boundary the leader reported at a time.
type boundarySeen struct {
	at      time.Time
	highest int64
}

// FollowerSettle is how long after the leader reports an upload boundary
// a follower is taken to delete by it: Kafka's follower task
// (RemoteLogManager's RLMFollowerTask) refreshes the follower's
// highestOffsetInRemoteStorage from the remote log metadata every
// remote.log.manager.task.interval.ms, 30 s by default.
const FollowerSettle = 30 * time.Second

// WithLocalBroker tells the refresher which broker's log dirs the guard
// reads (id() < 0: not known yet) and returns r. For a partition that
// broker does not lead, ListOffsets' boundary is the leader's, and the
// follower deletes by its own, refreshed by its follower task: the
// refresher then publishes as HighestUploaded the boundary the leader
// reported at least FollowerSettle ago (-1 before there is one), the
// leader's latest in LeaderHighestUploaded. A follower's segment thus
// counts as uploaded once its end is at or below a boundary at least one
// follower task interval old (spec R1.7; the follower's own segment
// boundaries may differ, but the condition is on offsets: a segment wholly
// at or below the follower's highest offset in remote storage goes).
func (r *TieredRefresher) WithLocalBroker(id func() int32) *TieredRefresher {
	r.local = id
	return r
}

// settle records ro's boundary for tp and, for a partition the local
// broker does not lead, replaces HighestUploaded with the settled one.
func (r *TieredRefresher) settle(tp TopicPartition, ro RemoteOffsets, now time.Time) RemoteOffsets {
	ro.LeaderHighestUploaded = ro.HighestUploaded
	if r.local == nil || ro.Err != "" {
		return ro
	}
	h := append(r.seen[tp], boundarySeen{at: now, highest: ro.HighestUploaded})
	settled, keep := int64(-1), 0
	for i, b := range h {
		if now.Sub(b.at) >= FollowerSettle {
			settled, keep = b.highest, i
		}
	}
	r.seen[tp] = h[keep:]
	if id := r.local(); id >= 0 && ro.LeaderKnown && ro.Leader != id {
		ro.HighestUploaded = min(settled, ro.HighestUploaded)
	}
	return ro
}

// NewTieredRefresher returns a refresher for the partitions parts names
// (the tiered partitions on disk).
func NewTieredRefresher(cfg TieredRefresherConfig, logger *slog.Logger, fetcher RemoteOffsetsFetcher, parts func() []TopicPartition) (*TieredRefresher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tiered refresher: %w", err)
	}
	r := &TieredRefresher{cfg: cfg, logger: logger.With("component", "tiered"), fetcher: fetcher, parts: parts,
		failing: map[TopicPartition]string{}, seen: map[TopicPartition][]boundarySeen{}, now: time.Now}
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
	now := r.now()
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
		ro = r.settle(tp, ro, now)
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
	for tp := range r.seen {
		if _, ok := out[tp]; !ok {
			delete(r.seen, tp)
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
	return r.cfg.loop(ctx, r.logger, "tiered offsets refresh failed", "tiered offsets refresh recovered", r.Refresh)
}

// TieredPartitions lists, each once, the live partitions in dirs whose
// topic is tiered with these configs: those whose remote offsets are
// fetched from their leaders (TieredRefresher, and the scan command).
func (c ConfigSet) TieredPartitions(dirs []LogDir) []TopicPartition {
	var out []TopicPartition
	seen := map[TopicPartition]bool{}
	for i := range dirs {
		for j := range dirs[i].Partitions {
			p := dirs[i].Partitions[j]
			tp := TopicPartition{p.Topic, p.Partition}
			if p.Kind == KindLive && !seen[tp] && c.For(p.Topic).Tiered(p.Topic) {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}
