package agent

import "time"

// verdict is one segment's computed classification.
type verdict struct {
	state   State
	reason  Reason
	expired int64
}

// Classify returns p with every segment's State, Reason and ExpiredBytes
// set as Apache Kafka's retention would decide at now with cfg (spec R1.2,
// R1.3, R1.6). It is a pure function and never modifies p.Segments: when
// any value changes it returns a new slice (copy on write), so successive
// snapshots share the segment slices of partitions that did not change.
//
// Kafka's rules, from UnifiedLog.deleteOldSegments: three passes in this
// order, each deleting only an unbroken run of oldest segments for which
// its predicate holds, each seeing what the previous pass left:
//  1. log start offset (always, also for compact-only topics): a segment
//     goes when the next segment's base offset <= the log start offset;
//  2. size (cleanup.policy includes delete, retention.bytes >= 0 and the
//     partition's .log bytes >= retention.bytes): with diff = size -
//     retention.bytes, segments go while diff - segment size >= 0;
//  3. time (delete, retention.ms >= 0): now - largest timestamp > retention.ms.
//
// A segment is only deletable when wholly below the high watermark (the
// next segment's base offset, or for the active segment the log end offset,
// is <= the high watermark), and an empty active segment never is. When a
// run reaches the active segment Kafka rolls it and deletes it too: it is
// reported eligible, with ReasonAllExpiredActive when time retention took
// it. Segments of non-live directories (-future, -stray, the metadata log)
// are only open or closed.
func Classify(p Partition, cfg TopicConfig, now time.Time) Partition {
	n := len(p.Segments)
	if n == 0 {
		return p
	}
	vs := classify(&p, cfg, now)
	var out []Segment
	for i := range p.Segments {
		s := &p.Segments[i]
		v := vs(i)
		if s.State == v.state && s.Reason == v.reason && s.ExpiredBytes == v.expired {
			continue
		}
		if out == nil {
			out = make([]Segment, n)
			copy(out, p.Segments)
		}
		out[i].State, out[i].Reason, out[i].ExpiredBytes = v.state, v.reason, v.expired
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
	eligible := 0 // segments [0, eligible) are eligible
	var reasons [3]Reason
	var ends [3]int // pass k made segments [ends[k-1], ends[k]) eligible
	live := p.Kind == KindLive || p.Kind == ""
	deletePolicy := cfg.CleanupPolicy.Delete || !cfg.CleanupPolicy.Compact
	// upperBound is the offset a segment ends at; belowHW says whether
	// Kafka lets it go.
	belowHW := func(i int) bool {
		if p.HighWatermark < 0 {
			return true // unknown: not a limit (documented)
		}
		upper := p.LogEndOffset
		if i+1 < n {
			upper = segs[i+1].BaseOffset
		}
		return upper >= 0 && p.HighWatermark >= upper
	}
	run := func(pred func(i int) bool) {
		for i := eligible; i < n; i++ {
			last := i == n-1
			if !(belowHW(i) && pred(i)) || (last && segs[i].LogBytes == 0) {
				break
			}
			eligible = i + 1
		}
	}
	nowMs := now.UnixMilli()
	timeExpired := func(i int) bool {
		return cfg.RetentionMs >= 0 && nowMs-segs[i].LargestTimestamp.UnixMilli() > cfg.RetentionMs
	}
	if live {
		// 1. Log start offset.
		run(func(i int) bool {
			return i+1 < n && p.LogStartOffset >= 0 && segs[i+1].BaseOffset <= p.LogStartOffset
		})
		ends[0], reasons[0] = eligible, ReasonLogStartOffset
		if deletePolicy {
			// 2. Size.
			var size int64
			for i := eligible; i < n; i++ {
				size += segs[i].LogBytes
			}
			if cfg.RetentionBytes >= 0 && size >= cfg.RetentionBytes {
				diff := size - cfg.RetentionBytes
				run(func(i int) bool {
					if diff-segs[i].LogBytes >= 0 {
						diff -= segs[i].LogBytes
						return true
					}
					return false
				})
			}
			ends[1], reasons[1] = eligible, ReasonRetentionSize
			// 3. Time.
			run(timeExpired)
			ends[2], reasons[2] = eligible, ReasonRetentionTime
		} else {
			ends[1], ends[2] = eligible, eligible
		}
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
			return verdict{state: StateEligible, reason: r, expired: segs[i].LogBytes}
		}
		if i < n-1 {
			return verdict{state: StateClosed}
		}
		v := verdict{state: StateOpen}
		if live && deletePolicy && cfg.RetentionMs >= 0 {
			v.expired = openExpired(segs[i], p.OpenExpiry, nowMs, cfg.RetentionMs)
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
	if nowMs-s.LargestTimestamp.UnixMilli() > retentionMs {
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
