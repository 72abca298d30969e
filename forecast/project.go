package forecast

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// DefaultSegmentRoll is Kafka's default segment.ms (log.roll.hours=168).
// The agent does not read segment.ms, so a segment is assumed to roll at
// segment.bytes or after this long, whichever comes first.
const DefaultSegmentRoll = 7 * 24 * time.Hour

// Band is a usage band's name and lower bound (ratio 0-1), for TimeTo.
type Band struct {
	Name string
	From float64
}

// LogDir is the projection of one log dir.
type LogDir struct {
	Path          string
	CapacityBytes uint64
	UsedBytes     uint64
	// Known is false when the log dir's capacity is unknown or it could
	// not be read: nothing is projected for it then.
	Known bool
	// ProjectedBytes is the steady-state usage: what the filesystem holds
	// once every topic's retention has caught up with its current ingress.
	// +Inf when a topic with ingress has neither retention.ms nor
	// retention.bytes (nor local ones for a tiered topic).
	ProjectedBytes float64
	// IngressBytesPerSecond is the estimated ingress of the log dir's
	// topics (their log and index bytes).
	IngressBytesPerSecond float64
	// GrowthBytesPerSecond is the net growth now: the ingress of the
	// partitions still under their steady-state footprint (the others'
	// deletions balance their ingress).
	GrowthBytesPerSecond float64
	// Unestimated counts the topics whose ingress is not estimated yet
	// (warming up): they are projected at their current size.
	Unestimated int

	growth []growth // sorted by the time each fills up (room/rate)
}

// growth is one partition still filling up: it grows at rate until it has
// grown by room (room may be +Inf).
type growth struct {
	rate, room float64
}

// ProjectedRatio is ProjectedBytes over the capacity (+Inf when unbounded).
func (d *LogDir) ProjectedRatio() float64 {
	if d.CapacityBytes == 0 {
		return 0
	}
	return d.ProjectedBytes / float64(d.CapacityBytes)
}

// TimeTo returns how long until usage reaches ratio of the capacity if
// every partition keeps growing at its ingress until it reaches its
// steady-state footprint, then stays there: 0 when usage is already at or
// over ratio; ok is false when usage never gets there at this ingress.
func (d *LogDir) TimeTo(ratio float64) (time.Duration, bool) {
	if !d.Known {
		return 0, false
	}
	target := ratio * float64(d.CapacityBytes)
	u := float64(d.UsedBytes)
	if u >= target {
		return 0, true
	}
	gs := d.growth // sorted by the time each fills up (projectDir)
	var slope float64
	for _, g := range gs {
		slope += g.rate
	}
	t := 0.0
	for _, g := range gs {
		if slope <= 0 {
			break
		}
		end := g.room / g.rate
		if math.IsInf(end, 1) {
			break
		}
		at := u + slope*(end-t)
		if at >= target {
			break
		}
		u, t = at, end
		slope -= g.rate
	}
	if slope <= 1e-9 {
		return 0, false
	}
	secs := t + (target-u)/slope
	if secs > float64(math.MaxInt64/int64(time.Second)) {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// Project computes the projection of every log dir of snap with the given
// per-topic ingress rates (Rates.Snapshot). It is pure.
//
// Per live partition the steady-state log size is the smaller of
// retention.bytes and rate x retention.ms (local.retention.* for a tiered
// topic with copying on), plus one segment (the open one, and the oldest
// that Kafka deletes only when all of it has expired): segment.bytes or
// rate x DefaultSegmentRoll, whichever is smaller. Index files add
// 20 bytes per index.interval.bytes (an offset and a time index entry).
// A topic's rate is spread over its partitions in the log dir in
// proportion to the bytes each was seen appending (evenly when none was).
// A partition whose topic has no estimate yet, no ingress, or no delete
// policy (compact only) is projected at its current size; other partition
// directories (future, deleted, stray) and non-Kafka files stay as they
// are.
func Project(snap *agent.Snapshot, rates map[Key]float64) []LogDir {
	out := make([]LogDir, 0, len(snap.LogDirs))
	for i := range snap.LogDirs {
		out = append(out, projectDir(snap, &snap.LogDirs[i], rates))
	}
	return out
}

func projectDir(snap *agent.Snapshot, ld *agent.LogDir, rates map[Key]float64) LogDir {
	d := LogDir{Path: ld.Path, CapacityBytes: ld.Usage.CapacityBytes, UsedBytes: ld.Usage.UsedBytes}
	d.Known = ld.Err == nil && ld.Usage.CapacityBytes > 0
	if !d.Known {
		return d
	}
	// Per topic: the sum of its partitions' appended bytes and count, for
	// the split of the topic's rate.
	type topicAgg struct {
		appended uint64
		n        int
	}
	topics := map[string]*topicAgg{}
	for p := range livePartitions(ld) {
		a := topics[p.Topic]
		if a == nil {
			a = &topicAgg{}
			topics[p.Topic] = a
		}
		a.appended += p.AppendedBytes
		a.n++
	}
	for t := range topics {
		if _, ok := rates[Key{ld.Path, t}]; !ok {
			d.Unestimated++
		}
	}
	projected := float64(ld.Usage.UsedBytes)
	for p := range livePartitions(ld) {
		rate, ok := rates[Key{ld.Path, p.Topic}]
		if !ok || rate <= 0 {
			continue
		}
		a := topics[p.Topic]
		share := 1 / float64(a.n)
		if a.appended > 0 {
			share = float64(p.AppendedBytes) / float64(a.appended)
		}
		cfg := snap.TopicConfig(p.Topic)
		r := rate * share
		if r <= 0 || !cfg.CleanupPolicy.Delete {
			continue
		}
		overhead := 1.0
		if cfg.IndexIntervalBytes > 0 {
			overhead += 20 / float64(cfg.IndexIntervalBytes)
		}
		steady := SteadyLogBytes(cfg, p.Topic, r, activeBytes(p)) * overhead
		d.IngressBytesPerSecond += r * overhead
		cur := float64(p.DiskBytes)
		projected += steady - cur
		if room := steady - cur; room > 0 {
			d.growth = append(d.growth, growth{rate: r * overhead, room: room})
			d.GrowthBytesPerSecond += r * overhead
		}
	}
	d.ProjectedBytes = projected
	slices.SortFunc(d.growth, func(a, b growth) int { return cmp.Compare(a.room/a.rate, b.room/b.rate) })
	return d
}

// activeBytes is the open segment's written bytes.
func activeBytes(p *agent.Partition) int64 {
	n := len(p.Segments)
	if n == 0 {
		return 0
	}
	if p.ActiveWrittenBytes >= 0 {
		return p.ActiveWrittenBytes
	}
	return p.Segments[n-1].LogBytes
}

// SteadyLogBytes is the log size a partition of topic settles at when it
// takes rate bytes per second under cfg's local retention: the smaller of
// retention.bytes and rate x retention.ms, plus one segment (segment.bytes
// or rate x DefaultSegmentRoll, whichever is smaller), and never less than
// active, the open segment (never deleted). +Inf when neither bound is set
// and rate > 0.
func SteadyLogBytes(cfg agent.TopicConfig, topic string, rate float64, active int64) float64 {
	ms, bytes := cfg.LocalRetention(topic)
	bound := math.Inf(1)
	if ms >= 0 {
		bound = rate * float64(ms) / 1000
	}
	if bytes >= 0 {
		bound = math.Min(bound, float64(bytes))
	}
	seg := rate * DefaultSegmentRoll.Seconds()
	if cfg.SegmentBytes > 0 {
		seg = math.Min(seg, float64(cfg.SegmentBytes))
	}
	return math.Max(bound+seg, float64(active))
}
