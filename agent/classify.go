package agent

import "time"

// verdict is one segment's computed classification.
type verdict struct {
	state   State
	reason  Reason
	expired int64
	tier    Tier
}

// Classify returns p with every segment's State, Reason, ExpiredBytes and
// Tier, and p.Tiered, set as Apache Kafka's retention would decide at now
// with cfg (spec R1.2, R1.3, R1.6, R1.7). It is a pure function and never modifies
// p.Segments: when any value changes it returns a new slice (copy on
// write), so successive snapshots share the segment slices of partitions
// that did not change. For a tiered partition, p.Remote carries the remote
// tier's offsets (ConfigSet.Classify sets it).
//
// Kafka's rules (Kafka 4.4, UnifiedLog.deleteOldSegments and
// deletableSegments): three passes in this order, each deleting only an
// unbroken run of oldest segments for which its predicate holds, each
// seeing what the previous pass left:
//  1. log start offset: a segment goes when the next segment's base
//     offset <= the log start offset;
//  2. size (retention.bytes >= 0 and the partition's .log bytes >=
//     retention.bytes): with diff = size - retention.bytes, segments go
//     while diff - segment size >= 0;
//  3. time (retention.ms >= 0): now - largest timestamp > retention.ms.
//
// Which passes run (UnifiedLog.deleteOldSegments, LogManager.cleanupLogs):
// cleanup.policy with delete runs all three; compact only the first; the
// empty policy (Kafka 4.2+) only the first, or all three with local
// retention when the topic is tiered and copying to remote storage.
// With the log cleaner disabled (log.cleaner.enable=false) Kafka's
// retention skips every log whose policy includes compact: none runs
// (p.Held is set to HeldCleanerDisabled). A -future log gets the same
// retention as a live one, except for compacted topics (the cleaner's
// retention covers current logs only). A partition whose p.Held the
// caller set (HeldMoving, HeldLogDirOffline: see ConfigSet.Holds) gets
// none either.
//
// A segment is only deletable when wholly below the high watermark (the
// next segment's base offset, or for the active segment the log end
// offset, is <= the high watermark; an unknown high watermark allows
// nothing, as in Kafka before the high watermark is initialised), and an
// empty active segment never is. When a run reaches the active segment
// Kafka rolls it and deletes it too: it is reported eligible, with
// ReasonAllExpiredActive when time retention took it.
//
// Tiered storage (UnifiedLog.isSegmentEligibleForDeletion, spec R1.7): for
// a tiered topic that copies to remote storage, size and time use
// local.retention.* (-2: retention.*), and a segment also needs to be
// uploaded (its end offset at or below the highest offset in remote
// storage) or wholly below the log start offset. The active segment is
// never uploaded, so it is never eligible (Kafka rolls it instead). With
// the upload boundary unknown (p.Remote nil or in error) nothing in the
// partition is eligible. remote.log.copy.disable=true falls back to
// retention.* without the upload condition.
func Classify(p Partition, cfg TopicConfig, now time.Time) Partition {
	p.Tiered = (p.Kind == KindLive || p.Kind == KindFuture || p.Kind == "") && cfg.Tiered(p.Topic)
	if p.Held == HeldCleanerDisabled {
		p.Held = ReasonNone
	}
	if p.Held == ReasonNone && (p.Kind == KindLive || p.Kind == "") && cfg.CleanerDisabled && cfg.CleanupPolicy.Compact {
		p.Held = HeldCleanerDisabled
	}
	n := len(p.Segments)
	if n == 0 {
		return p
	}
	vs := classify(&p, cfg, now)
	var out []Segment
	for i := range p.Segments {
		s := &p.Segments[i]
		v := vs(i)
		if s.State == v.state && s.Reason == v.reason && s.ExpiredBytes == v.expired && s.Tier == v.tier {
			continue
		}
		if out == nil {
			out = make([]Segment, n)
			copy(out, p.Segments)
		}
		out[i].State, out[i].Reason, out[i].ExpiredBytes, out[i].Tier = v.state, v.reason, v.expired, v.tier
	}
	if out != nil {
		p.Segments = out
	}
	return p
}

// classify computes every segment's verdict; the returned function gives
// the verdict of segment i.
func classify(p *Partition, cfg TopicConfig, now time.Time) func(int) verdict {
	segs := p.Segments
	n := len(segs)
	// size is the segment's size as Kafka counts it (LogSegment.size):
	// written bytes for a preallocated active segment.
	size := func(i int) int64 {
		if i == n-1 && cfg.Preallocate && p.ActiveWrittenBytes >= 0 && p.ActiveWrittenBytes < segs[i].LogBytes {
			return p.ActiveWrittenBytes
		}
		return segs[i].LogBytes
	}
	eligible := 0 // segments [0, eligible) are eligible
	var reasons [3]Reason
	var ends [3]int // pass k made segments [ends[k-1], ends[k]) eligible
	policy := cfg.CleanupPolicy
	tiered := p.Tiered
	copyEnabled := tiered && !cfg.RemoteCopyDisable
	var applies bool // does Kafka's retention visit this log at all
	switch p.Kind {
	case KindLive, "":
		applies = !(cfg.CleanerDisabled && policy.Compact)
	case KindFuture:
		applies = !policy.Compact
	}
	applies = applies && p.Held == ReasonNone
	retentionPasses := policy.Delete || (!policy.Compact && copyEnabled)
	retentionMs, retentionBytes := cfg.localRetention(copyEnabled)
	// upper is the offset a segment ends before.
	upper := func(i int) int64 {
		if i+1 < n {
			return segs[i+1].BaseOffset
		}
		return p.LogEndOffset
	}
	belowHW := func(i int) bool {
		u := upper(i)
		return p.HighWatermark >= 0 && u >= 0 && p.HighWatermark >= u
	}
	logStart := p.LogStartOffset
	if p.Remote.Known() && p.Remote.LogStart > logStart {
		logStart = p.Remote.LogStart
	}
	// uploaded: the segment's last offset is in remote storage.
	uploaded := func(i int) bool {
		u := upper(i)
		return p.Remote.Known() && u > 0 && u-1 <= p.Remote.HighestUploaded
	}
	// deletableTier is UnifiedLog.isSegmentEligibleForDeletion.
	deletableTier := func(i int) bool {
		if !copyEnabled {
			return true
		}
		if !p.Remote.Known() {
			return false
		}
		return uploaded(i) || (i+1 < n && logStart >= segs[i+1].BaseOffset)
	}
	run := func(pred func(i int) bool) {
		for i := eligible; i < n; i++ {
			last := i == n-1
			if !(belowHW(i) && pred(i)) || (last && size(i) == 0) || !deletableTier(i) {
				break
			}
			eligible = i + 1
		}
	}
	nowMs := now.UnixMilli()
	timeExpired := func(i int) bool {
		return retentionMs >= 0 && nowMs-segs[i].LargestTimestampMs > retentionMs
	}
	if applies && (!copyEnabled || p.Remote.Known()) {
		// 1. Log start offset (for a tiered log Kafka compares with the
		// local log start offset, which is never below the log start
		// offset and moves with it).
		lso := logStart
		if tiered && p.Remote.Known() && p.Remote.LocalLogStart > lso {
			lso = p.Remote.LocalLogStart
		}
		run(func(i int) bool {
			return i+1 < n && lso >= 0 && segs[i+1].BaseOffset <= lso
		})
		ends[0], reasons[0] = eligible, ReasonLogStartOffset
		reasons[1], reasons[2] = ReasonRetentionSize, ReasonRetentionTime
		if copyEnabled {
			reasons[1], reasons[2] = ReasonLocalRetentionSize, ReasonLocalRetentionTime
		}
		if retentionPasses {
			// 2. Size.
			var total int64
			for i := eligible; i < n; i++ {
				total += size(i)
			}
			if retentionBytes >= 0 && total >= retentionBytes {
				diff := total - retentionBytes
				run(func(i int) bool {
					if diff-size(i) >= 0 {
						diff -= size(i)
						return true
					}
					return false
				})
			}
			ends[1] = eligible
			// 3. Time.
			run(timeExpired)
			ends[2] = eligible
		} else {
			ends[1], ends[2] = eligible, eligible
		}
	}
	tier := func(i int) Tier {
		switch {
		case !tiered:
			return TierNone
		case !p.Remote.Known():
			return TierUnknown
		case uploaded(i):
			return TierUploaded
		}
		return TierLocalOnly
	}
	return func(i int) verdict {
		if i < eligible {
			r := reasons[0]
			switch {
			case i >= ends[1]:
				r = reasons[2]
				if i == n-1 {
					r = ReasonAllExpiredActive
				}
			case i >= ends[0]:
				r = reasons[1]
			}
			return verdict{state: StateEligible, reason: r, expired: size(i), tier: tier(i)}
		}
		if i < n-1 {
			return verdict{state: StateClosed, tier: tier(i)}
		}
		v := verdict{state: StateOpen, tier: tier(i)}
		if applies && retentionPasses && retentionMs >= 0 {
			s := segs[i]
			s.LogBytes = size(i)
			v.expired = openExpired(s, p.OpenExpiry, nowMs, retentionMs)
		}
		return v
	}
}

// openExpired estimates the bytes of an open segment whose records are all
// past retention.ms (spec R1.6): the whole segment when its largest
// timestamp is; otherwise the position of the last expiry-curve point whose
// timestamp is. The estimate is a lower bound: it ignores the batch at that
// position and the records between two index points.
func openExpired(s Segment, pts []ExpiryPoint, nowMs, retentionMs int64) int64 {
	if nowMs-s.LargestTimestampMs > retentionMs {
		return s.LogBytes
	}
	var exp int64
	for _, pt := range pts {
		if nowMs-pt.TimestampMs > retentionMs {
			exp = pt.Position
		} else {
			break
		}
	}
	if exp > s.LogBytes {
		exp = s.LogBytes
	}
	return exp
}
