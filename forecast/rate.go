// Package forecast foresees the fill of a broker's log dirs (spec R3.8):
// from the ingress the agent observes per topic and each topic's retention
// it projects the steady-state footprint of every log dir (what the disk
// will hold once retention catches up at today's ingress) and the time
// until usage reaches each band.
//
// The ingress estimate is the only state: per log dir and topic, a ring
// of a dozen bucket rates (Rates). Everything else is a pure function of
// a Snapshot and those rates (Project), so it is tested with tables.
package forecast

import (
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Defaults of the ingress estimate: the median of the last 12 five-minute
// bucket rates (one hour). A burst shorter than half the window (30 min)
// moves the median by at most one bucket's rank, so it does not move the
// projection; a step in ingress that lasts longer than that does.
const (
	DefaultBucketWidth = 5 * time.Minute
	DefaultBuckets     = 12
)

// RateConfig configures the ingress estimate.
type RateConfig struct {
	// BucketWidth is how long one bucket gathers appended bytes before its
	// rate is fixed. Zero means DefaultBucketWidth.
	BucketWidth time.Duration
	// Buckets is how many closed buckets the median is taken over. Zero
	// means DefaultBuckets.
	Buckets int
}

func (c RateConfig) withDefaults() RateConfig {
	if c.BucketWidth <= 0 {
		c.BucketWidth = DefaultBucketWidth
	}
	if c.Buckets <= 0 {
		c.Buckets = DefaultBuckets
	}
	return c
}

// Key names one topic in one log dir.
type Key struct {
	LogDir string
	Topic  string
}

// topicRate is the state kept for one topic in one log dir: a handful of
// numbers, whatever the number of its segments.
type topicRate struct {
	appended    uint64    // the topic's AppendedBytes at the last observation
	bucketStart time.Time // when the open bucket started
	bucketBytes uint64    // bytes appended in the open bucket so far
	rates       []float64 // closed bucket rates, oldest first, at most Buckets
}

// Rates estimates each topic's ingress per log dir from the appended-bytes
// counters of successive snapshots (agent.Partition.AppendedBytes, the
// figure behind kafka_disk_guard_topic_appended_bytes_total). It is safe
// for concurrent use.
type Rates struct {
	cfg RateConfig

	mu     sync.Mutex
	topics map[Key]*topicRate
	last   time.Time
}

// NewRates returns an empty estimate.
func NewRates(cfg RateConfig) *Rates {
	return &Rates{cfg: cfg.withDefaults(), topics: map[Key]*topicRate{}}
}

// livePartitions yields ld's live partitions: not future, deleted or
// stray directories.
func livePartitions(ld *agent.LogDir) iter.Seq[*agent.Partition] {
	return func(yield func(*agent.Partition) bool) {
		for j := range ld.Partitions {
			if p := ld.Partitions[j]; p.Kind == agent.KindLive && !yield(p) {
				return
			}
		}
	}
}

// Appended adds up the appended-bytes counters of the live partitions of
// each topic in each log dir of snap.
func Appended(snap *agent.Snapshot) map[Key]uint64 {
	out := map[Key]uint64{}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		for p := range livePartitions(ld) {
			out[Key{ld.Path, p.Topic}] += p.AppendedBytes
		}
	}
	return out
}

// Observe feeds one snapshot. Snapshots not newer than the last one
// observed are ignored, so it may be called at every scrape. A topic that
// left the log dir is forgotten; a counter that went down (the agent
// restarted, the partition was recreated) starts its topic afresh.
func (r *Rates) Observe(snap *agent.Snapshot) {
	if snap == nil {
		return
	}
	r.ObserveAt(snap.Time, Appended(snap))
}

// ObserveAt feeds the appended-bytes counters read at now.
func (r *Rates) ObserveAt(now time.Time, appended map[Key]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !now.After(r.last) {
		return
	}
	r.last = now
	for k := range r.topics {
		if _, ok := appended[k]; !ok {
			delete(r.topics, k)
		}
	}
	for k, a := range appended {
		t, ok := r.topics[k]
		if !ok || a < t.appended {
			r.topics[k] = &topicRate{appended: a, bucketStart: now}
			continue
		}
		t.bucketBytes += a - t.appended
		t.appended = a
		if d := now.Sub(t.bucketStart); d >= r.cfg.BucketWidth {
			t.rates = append(t.rates, float64(t.bucketBytes)/d.Seconds())
			if len(t.rates) > r.cfg.Buckets {
				t.rates = slices.Delete(t.rates, 0, len(t.rates)-r.cfg.Buckets)
			}
			t.bucketStart, t.bucketBytes = now, 0
		}
	}
}

// Rate returns a topic's estimated ingress into a log dir in bytes per
// second: the median of its closed bucket rates. ok is false until one
// bucket has closed (the estimate is warming up) or when the topic is not
// known.
func (r *Rates) Rate(k Key) (bytesPerSecond float64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, found := r.topics[k]
	if !found || len(t.rates) == 0 {
		return 0, false
	}
	return median(t.rates), true
}

// Snapshot returns every known topic's rate (see Rate), for Project.
func (r *Rates) Snapshot() map[Key]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Key]float64, len(r.topics))
	for k, t := range r.topics {
		if len(t.rates) > 0 {
			out[k] = median(t.rates)
		}
	}
	return out
}

// median of xs (not modified); the mean of the two middle values when
// their number is even.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
