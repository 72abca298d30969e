package agent

import (
	"slices"
	"strings"
	"time"
)

// The questions the snapshot's readers (the exporter, the enforcer, the
// scan and demo commands) ask of it are answered here, once.

// TopicConfig returns the config classification used for topic: its own
// entry in Configs, else Defaults (compacted for Kafka's internal topics
// that Kafka always creates compacted: ConfigSet.For).
func (s *Snapshot) TopicConfig(topic string) TopicConfig {
	return s.configSet().For(topic)
}

// configSet is the snapshot's configs as a ConfigSet (without remote
// offsets: they are already in the classified partitions).
func (s *Snapshot) configSet() ConfigSet {
	return ConfigSet{Topics: s.Configs, Defaults: s.Defaults}
}

// BrokerID is the broker the snapshot's log dirs belong to: the node.id
// (or broker.id) of the first log dir whose meta.properties gave one
// (spec R1.5); -1 when none did.
func (s *Snapshot) BrokerID() int32 {
	for i := range s.LogDirs {
		if id := s.LogDirs[i].BrokerID; id >= 0 {
			return id
		}
	}
	return -1
}

// LiveTopics lists, sorted, the topics with a live partition directory
// (KindLive) in any log dir; nil for a nil snapshot.
func (s *Snapshot) LiveTopics() []string {
	if s == nil {
		return nil
	}
	var out []string
	for i := range s.LogDirs {
		for j := range s.LogDirs[i].Partitions {
			if p := s.LogDirs[i].Partitions[j]; p.Kind == KindLive {
				out = append(out, p.Topic)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TieredPartitions lists, each once, the live partitions whose topic is
// tiered (ConfigSet.TieredPartitions with the snapshot's configs); nil for
// a nil snapshot.
func (s *Snapshot) TieredPartitions() []TopicPartition {
	if s == nil {
		return nil
	}
	return s.configSet().TieredPartitions(s.LogDirs)
}

// ByState holds one figure per segment state.
type ByState struct {
	Open, Closed, Eligible int64
}

// Of returns the figure of state st (0 for an unknown state).
func (b ByState) Of(st State) int64 {
	return figureOf(st, [3]State{StateOpen, StateClosed, StateEligible}, [3]int64{b.Open, b.Closed, b.Eligible})
}

// Total is the sum over the states.
func (b ByState) Total() int64 { return b.Open + b.Closed + b.Eligible }

// ByReason holds one figure per expired-but-retained reason (spec R1.6).
type ByReason struct {
	OpenSegment, AwaitingDeletion, PendingDelete int64
}

// Of returns the figure of reason r (0 for any other reason).
func (b ByReason) Of(r Reason) int64 {
	return figureOf(r, [3]Reason{RetainedOpenSegment, RetainedAwaitingDelete, RetainedPendingDeletion},
		[3]int64{b.OpenSegment, b.AwaitingDeletion, b.PendingDelete})
}

// Total is the sum over the reasons.
func (b ByReason) Total() int64 { return b.OpenSegment + b.AwaitingDeletion + b.PendingDelete }

// figureOf returns the figure at key's place in keys, 0 when absent.
func figureOf[K comparable](key K, keys [3]K, figures [3]int64) int64 {
	for i, k := range keys {
		if k == key {
			return figures[i]
		}
	}
	return 0
}

// ByTier holds one figure per tier of a tiered partition's segments
// (spec R1.7).
type ByTier struct {
	LocalOnly, Uploaded, Unknown int64
}

// Of returns the figure of tier t (0 for TierNone).
func (b ByTier) Of(t Tier) int64 {
	return figureOf(t, [3]Tier{TierLocalOnly, TierUploaded, TierUnknown}, [3]int64{b.LocalOnly, b.Uploaded, b.Unknown})
}

// Total is the sum over the tiers.
func (b ByTier) Total() int64 { return b.LocalOnly + b.Uploaded + b.Unknown }

// plus returns the sum of b and o, tier by tier.
func (b ByTier) plus(o ByTier) ByTier {
	return ByTier{LocalOnly: b.LocalOnly + o.LocalOnly, Uploaded: b.Uploaded + o.Uploaded, Unknown: b.Unknown + o.Unknown}
}

// add adds v to tier t's figure (nothing for TierNone).
func (b *ByTier) add(t Tier, v int64) {
	switch t {
	case TierLocalOnly:
		b.LocalOnly += v
	case TierUploaded:
		b.Uploaded += v
	case TierUnknown:
		b.Unknown += v
	}
}

// Tiers lists the tiers of a tiered partition's segments in report order.
func Tiers() []Tier { return []Tier{TierLocalOnly, TierUploaded, TierUnknown} }

// States lists the segment states in report order.
func States() []State { return []State{StateOpen, StateClosed, StateEligible} }

// RetainedReasons lists the expired-but-retained reasons in report order.
func RetainedReasons() []Reason {
	return []Reason{RetainedOpenSegment, RetainedAwaitingDelete, RetainedPendingDeletion}
}

// Summary is what a partition directory, or a topic in one log dir, holds.
// It is the one definition of these figures: the exporter's metrics, the
// scan and demo tables and the enforcer's reports all read it.
//
// Every byte figure is disk bytes: the space the files take (allocated
// blocks), what the filesystem's usage counts and what deleting them gives
// back.
//   - Bytes: the disk bytes of the segments' files (.log, indexes, producer
//     snapshot), by the segment's state.
//   - Expired: bytes past retention still on disk, by reason.
//     AwaitingDeletion is the disk bytes of the eligible segments (the
//     broker's next retention check removes them). OpenSegment is the part
//     of the active segment's .log file before its last expired index
//     point (Segment.ExpiredBytes, a lower bound; a .log file's bytes are
//     on disk one for one, and the active segment's indexes are not freed
//     by expiry). PendingDelete is the disk bytes of .deleted files and of
//     deleted partition directories (-delete), waiting for the broker's
//     file.delete.delay.ms.
//   - Tiered: the same segments again, by tier, for partitions whose topic
//     is tiered (see TieredSummary); zero for the others.
type Summary struct {
	// Partitions counts live partition directories (KindLive).
	Partitions int
	// Segments counts segments by state.
	Segments ByState
	// Bytes: disk bytes of segments by state.
	Bytes ByState
	// Expired: expired-but-retained disk bytes by reason.
	Expired ByReason
	// OldestEligible is the largest timestamp of the oldest eligible
	// segment; zero when no segment is eligible.
	OldestEligible time.Time
	// AppendedBytes: .log bytes the agent saw appended since it started
	// (Partition.AppendedBytes).
	AppendedBytes uint64
	// Tiered: the tiered partitions' segments by tier (spec R1.7).
	Tiered TieredSummary
}

// TieredSummary is what tiered partitions (Partition.Tiered, spec R1.7)
// hold, by where their segments are relative to remote storage. Byte
// figures are disk bytes, like every Summary figure: the local disk a
// tiered partition takes and what Kafka's local retention gives back;
// remote storage's own bytes are not on this disk and not counted.
type TieredSummary struct {
	// Partitions counts the tiered partition directories summed. Zero
	// means nothing here is tiered (the other figures are zero too).
	Partitions int
	// Segments counts tiered partitions' segments by tier; Bytes their
	// disk bytes by tier. Segments.Total() is the tiered partitions' share
	// of Summary.Segments.Total().
	Segments ByTier
	Bytes    ByTier
	// EligibleLocally: disk bytes of segments past local retention and
	// already uploaded (reasons local_retention_time and
	// local_retention_size): Kafka deletes the local copy, the records
	// stay readable from remote storage. Part of Bytes.Eligible.
	EligibleLocally int64
	// OffsetsUnknown counts tiered partitions whose remote offsets are
	// unknown (not fetched, or the leader could not be read): nothing in
	// them is eligible.
	OffsetsUnknown int
}

// add adds o's figures to t.
func (t *TieredSummary) add(o TieredSummary) {
	t.Partitions += o.Partitions
	t.Segments, t.Bytes = t.Segments.plus(o.Segments), t.Bytes.plus(o.Bytes)
	t.EligibleLocally += o.EligibleLocally
	t.OffsetsUnknown += o.OffsetsUnknown
}

// Summary returns the figures of one partition directory, whatever its
// kind: its segments by state, and its expired-but-retained bytes (for a
// -delete directory, all of it is PendingDelete).
func (p *Partition) Summary() Summary {
	var s Summary
	p.addTo(&s)
	return s
}

// addTo adds p's Summary to s.
func (p *Partition) addTo(s *Summary) {
	s.AppendedBytes += p.AppendedBytes
	s.Expired.PendingDelete += p.PendingDeleteBytes
	if p.Kind == KindLive {
		s.Partitions++
	}
	if p.Tiered {
		s.Tiered.Partitions++
		if !p.Remote.Known() {
			s.Tiered.OffsetsUnknown++
		}
	}
	for i := range p.Segments {
		seg := &p.Segments[i]
		if p.Tiered {
			s.Tiered.Segments.add(seg.Tier, 1)
			s.Tiered.Bytes.add(seg.Tier, seg.DiskBytes)
			if seg.Reason == ReasonLocalRetentionTime || seg.Reason == ReasonLocalRetentionSize {
				s.Tiered.EligibleLocally += seg.DiskBytes
			}
		}
		switch seg.State {
		case StateOpen:
			s.Segments.Open++
			s.Bytes.Open += seg.DiskBytes
			s.Expired.OpenSegment += seg.ExpiredBytes
		case StateClosed:
			s.Segments.Closed++
			s.Bytes.Closed += seg.DiskBytes
		case StateEligible:
			s.Segments.Eligible++
			s.Bytes.Eligible += seg.DiskBytes
			s.Expired.AwaitingDeletion += seg.DiskBytes
			if s.OldestEligible.IsZero() || seg.LargestTimestamp().Before(s.OldestEligible) {
				s.OldestEligible = seg.LargestTimestamp()
			}
		}
	}
}

// Add adds o's figures to s.
func (s *Summary) Add(o Summary) {
	s.Partitions += o.Partitions
	s.Segments.Open += o.Segments.Open
	s.Segments.Closed += o.Segments.Closed
	s.Segments.Eligible += o.Segments.Eligible
	s.Bytes.Open += o.Bytes.Open
	s.Bytes.Closed += o.Bytes.Closed
	s.Bytes.Eligible += o.Bytes.Eligible
	s.Expired.OpenSegment += o.Expired.OpenSegment
	s.Expired.AwaitingDeletion += o.Expired.AwaitingDeletion
	s.Expired.PendingDelete += o.Expired.PendingDelete
	if !o.OldestEligible.IsZero() && (s.OldestEligible.IsZero() || o.OldestEligible.Before(s.OldestEligible)) {
		s.OldestEligible = o.OldestEligible
	}
	s.AppendedBytes += o.AppendedBytes
	s.Tiered.add(o.Tiered)
}

// TopicSummary is the Summary of one topic, or of one partition of it, in
// one log dir.
type TopicSummary struct {
	Topic string
	// Partition is the partition summed, or AllPartitions.
	Partition int32
	Summary
}

// AllPartitions is TopicSummary.Partition when the summary covers every
// partition of the topic.
const AllPartitions int32 = -1

// addToTopic adds what a partition directory gives its topic's figures
// to s: a live partition all of its Summary; a -delete directory its
// pending-delete bytes (all of it); a -future or -stray directory its
// pending-delete bytes when it has some (a replica moving in is not the
// topic's data in this log dir until it replaces the live one); the
// metadata log nothing (it is not a topic). With s nil it only reports
// whether the directory gives anything.
func addToTopic(p *Partition, s *Summary) bool {
	switch p.Kind {
	case KindLive:
		if s != nil {
			p.addTo(s)
		}
		return true
	case KindDeleted, KindFuture, KindStray:
		if p.Kind != KindDeleted && p.PendingDeleteBytes == 0 {
			return false
		}
		if s != nil {
			s.Expired.PendingDelete += p.PendingDeleteBytes
		}
		return true
	}
	return false
}

// TopicSummaries returns the figures of every topic in the log dir, sorted
// by topic: each is the sum of its live partitions' Summary plus the
// pending-delete bytes of its -delete, -future and -stray directories.
// A topic that only has a -delete directory (or a -future or -stray one
// with pending-delete bytes) is listed too, with Partitions 0.
func (d *LogDir) TopicSummaries() []TopicSummary {
	return d.summaries(false)
}

// PartitionSummaries is TopicSummaries per partition, sorted by topic and
// partition.
func (d *LogDir) PartitionSummaries() []TopicSummary {
	return d.summaries(true)
}

// summaries adds up partition directories in one pass: a log dir's
// partitions are sorted by topic and partition, so those of one topic (or
// one partition) are adjacent. Unsorted input is sorted and merged after.
func (d *LogDir) summaries(perPartition bool) []TopicSummary {
	key := func(p *Partition) int32 {
		if perPartition {
			return p.Partition
		}
		return AllPartitions
	}
	// Count the summaries first (adjacent keys; exact for sorted input) so
	// the result is allocated once.
	n := 0
	var last *Partition
	for i := range d.Partitions {
		p := d.Partitions[i]
		if addToTopic(p, nil) {
			if last == nil || p.Topic != last.Topic || key(p) != key(last) {
				n++
			}
			last = p
		}
	}
	out := make([]TopicSummary, 0, n)
	sorted := true
	for i := range d.Partitions {
		p := d.Partitions[i]
		if !addToTopic(p, nil) {
			continue
		}
		part := key(p)
		if n := len(out); n > 0 {
			c := compareTopicPart(out[n-1].Topic, out[n-1].Partition, p.Topic, part)
			if c == 0 {
				addToTopic(p, &out[n-1].Summary)
				continue
			}
			sorted = sorted && c < 0
		}
		out = append(out, TopicSummary{Topic: p.Topic, Partition: part})
		addToTopic(p, &out[len(out)-1].Summary)
	}
	if sorted {
		return out
	}
	slices.SortStableFunc(out, func(a, b TopicSummary) int { return compareTopicPart(a.Topic, a.Partition, b.Topic, b.Partition) })
	merged := out[:0]
	for _, ts := range out {
		if n := len(merged); n > 0 && compareTopicPart(merged[n-1].Topic, merged[n-1].Partition, ts.Topic, ts.Partition) == 0 {
			merged[n-1].Add(ts.Summary)
			continue
		}
		merged = append(merged, ts)
	}
	return merged
}

func compareTopicPart(t1 string, p1 int32, t2 string, p2 int32) int {
	if c := strings.Compare(t1, t2); c != 0 {
		return c
	}
	switch {
	case p1 < p2:
		return -1
	case p1 > p2:
		return 1
	}
	return 0
}
