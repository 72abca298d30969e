package enforcer

import (
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Bytes Kafka's next retention check frees (spec R3.5, R7.4): the
// eligible segments of tiered partitions (past local retention, already
// uploaded; typically after the guard lowered local.retention.bytes).
// The guard sends them no DeleteRecords (tiered), so without counting
// them the purge bands would purge other topics' unexpired data for bytes
// Kafka is about to free. They count as pending until they are gone or
// twice Kafka's retention check interval (log.retention.check.interval.ms)
// has passed since the enforcer first saw them eligible: then Kafka is not
// freeing them after all, and the bands go on.

// SegmentKey names one segment of one partition in one log dir.
type SegmentKey struct {
	LogDir     string
	Topic      string
	Partition  int32
	BaseOffset int64
}

// defaultRetentionCheck is Kafka's log.retention.check.interval.ms.
const defaultRetentionCheck = 5 * time.Minute

// trackEligible returns since updated for snap: the eligible segments of
// tiered live partitions, with when each was first seen (now for new
// ones); segments no longer eligible or gone are dropped.
func trackEligible(since map[SegmentKey]time.Time, snap *agent.Snapshot, now time.Time) map[SegmentKey]time.Time {
	if snap == nil {
		return since
	}
	out := map[SegmentKey]time.Time{}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		for j := range ld.Partitions {
			p := ld.Partitions[j]
			if p.Kind != agent.KindLive || !p.Tiered {
				continue
			}
			for _, s := range p.Segments {
				if s.State != agent.StateEligible {
					continue
				}
				k := SegmentKey{ld.Path, p.Topic, p.Partition, s.BaseOffset}
				if at, ok := since[k]; ok {
					out[k] = at
				} else {
					out[k] = now
				}
			}
		}
	}
	return out
}

// tieredPending is the disk bytes of the log dir's eligible tiered
// segments that Kafka's next retention check frees: seen eligible for
// less than twice the retention check interval (all of them without
// o.EligibleSince).
func tieredPending(o Observed, ld *agent.LogDir) int64 {
	var n int64
	for j := range ld.Partitions {
		p := ld.Partitions[j]
		if p.Kind != agent.KindLive || !p.Tiered || p.Held != agent.ReasonNone {
			continue
		}
		check := defaultRetentionCheck
		if ms := o.Snapshot.TopicConfig(p.Topic).RetentionCheckIntervalMs; ms > 0 {
			check = time.Duration(ms) * time.Millisecond
		}
		for _, s := range p.Segments {
			if s.State != agent.StateEligible {
				continue
			}
			if at, ok := o.EligibleSince[SegmentKey{ld.Path, p.Topic, p.Partition, s.BaseOffset}]; ok && o.Now.Sub(at) >= 2*check {
				continue
			}
			n += s.DiskBytes
		}
	}
	return n
}
