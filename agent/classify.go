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
	return classifyPartition(p, cfg, now, false)
}

// classifyPartition is Classify; with owned, the caller owns p.Segments
// (a slice fresh from the scanner, in no snapshot) and the verdicts are
// written into it instead of a copy.
func classifyPartition(p Partition, cfg TopicConfig, now time.Time, owned bool) Partition {
	p.Tiered = (p.Kind == KindLive || p.Kind == KindFuture || p.Kind == "") && cfg.Tiered(p.Topic)
	p.Held = cleanerHold(&p, cfg)
	if len(p.Segments) == 0 {
		return p
	}
	c := newClassifier(&p, cfg, now)
	c.runPasses()
	p.Segments = c.apply(owned)
	return p
}

// cleanerHold returns p.Held with HeldCleanerDisabled set or cleared as
// cfg says: set on a live log whose policy includes compact when the log
// cleaner is disabled, unless another hold is already set.
func cleanerHold(p *Partition, cfg TopicConfig) Reason {
	held := p.Held
	if held == HeldCleanerDisabled {
		held = ReasonNone
	}
	if held == ReasonNone && (p.Kind == KindLive || p.Kind == "") && cfg.CleanerDisabled && cfg.CleanupPolicy.Compact {
		held = HeldCleanerDisabled
	}
	return held
}

// classifier is one partition's classification in progress: the settings
// Kafka's retention applies to it, and how far its passes got.
type classifier struct {
	segs  []Segment
	n     int
	nowMs int64

	// From the partition: its offsets, its remote tier, the active
	// segment's written bytes and expiry curve.
	part        *Partition // for its SegmentSize
	hw, logEnd  int64
	remote      *RemoteOffsets
	openExpiry  []ExpiryPoint
	preallocate bool // cfg.Preallocate: the active segment's size is its written bytes

	tiered      bool // p.Tiered
	copyEnabled bool // tiered and copying to remote storage: local.retention.* and the upload condition apply
	// applies: Kafka's retention visits this log at all.
	applies bool
	// retentionPasses: the size and time passes run, not only the log
	// start offset's.
	retentionPasses             bool
	retentionMs, retentionBytes int64
	logStart                    int64 // the log start offset across both tiers

	eligible int       // segments [0, eligible) are eligible
	ends     [3]int    // pass k made segments [ends[k-1], ends[k]) eligible
	reasons  [3]Reason // the reason each pass gives
}

func newClassifier(p *Partition, cfg TopicConfig, now time.Time) classifier {
	c := classifier{segs: p.Segments, n: len(p.Segments), nowMs: now.UnixMilli(), tiered: p.Tiered,
		part: p, hw: p.HighWatermark, logEnd: p.LogEndOffset,
		remote: p.Remote, openExpiry: p.OpenExpiry, preallocate: cfg.Preallocate}
	c.copyEnabled = c.tiered && !cfg.RemoteCopyDisable
	c.applies = retentionApplies(p, cfg)
	policy := cfg.CleanupPolicy
	c.retentionPasses = policy.Delete || (!policy.Compact && c.copyEnabled)
	c.retentionMs, c.retentionBytes = cfg.localRetention(c.copyEnabled)
	c.logStart = p.LogStartOffset
	if p.Remote.Known() && p.Remote.LogStart > c.logStart {
		c.logStart = p.Remote.LogStart
	}
	return c
}

// retentionApplies reports whether Kafka's retention visits p's log at
// all (LogManager.cleanupLogs): not a compacted log while the cleaner is
// disabled, not a compacted -future log, not a held one.
func retentionApplies(p *Partition, cfg TopicConfig) bool {
	var applies bool
	switch p.Kind {
	case KindLive, "":
		applies = !(cfg.CleanerDisabled && cfg.CleanupPolicy.Compact)
	case KindFuture:
		applies = !cfg.CleanupPolicy.Compact
	}
	return applies && p.Held == ReasonNone
}

// runPasses runs Kafka's three deletion passes in order, each extending
// the run of eligible oldest segments.
func (c *classifier) runPasses() {
	if !c.applies || (c.copyEnabled && !c.remote.Known()) {
		return
	}
	c.logStartPass()
	c.ends[0], c.reasons[0] = c.eligible, ReasonLogStartOffset
	c.reasons[1], c.reasons[2] = ReasonRetentionSize, ReasonRetentionTime
	if c.copyEnabled {
		c.reasons[1], c.reasons[2] = ReasonLocalRetentionSize, ReasonLocalRetentionTime
	}
	if !c.retentionPasses {
		c.ends[1], c.ends[2] = c.eligible, c.eligible
		return
	}
	c.sizePass()
	c.ends[1] = c.eligible
	c.run(c.timeExpired)
	c.ends[2] = c.eligible
}

// logStartPass: a segment goes when the next one starts at or below the
// log start offset (for a tiered log Kafka compares with the local log
// start offset, which is never below the log start offset and moves with
// it).
func (c *classifier) logStartPass() {
	lso := c.logStart
	if r := c.remote; c.tiered && r.Known() && r.LocalLogStart > lso {
		lso = r.LocalLogStart
	}
	c.run(func(i int) bool {
		return i+1 < c.n && lso >= 0 && c.segs[i+1].BaseOffset <= lso
	})
}

// sizePass: with the log over retention.bytes by diff, segments go while
// diff - segment size >= 0.
func (c *classifier) sizePass() {
	var total int64
	for i := c.eligible; i < c.n; i++ {
		total += c.size(i)
	}
	if c.retentionBytes < 0 || total < c.retentionBytes {
		return
	}
	diff := total - c.retentionBytes
	c.run(func(i int) bool {
		if diff-c.size(i) >= 0 {
			diff -= c.size(i)
			return true
		}
		return false
	})
}

// timeExpired: the segment's largest timestamp is older than
// retention.ms.
func (c *classifier) timeExpired(i int) bool {
	return c.retentionMs >= 0 && c.nowMs-c.segs[i].LargestTimestampMs > c.retentionMs
}

// run extends the eligible run while pred holds of the next segment and
// Kafka may delete it: wholly below the high watermark, not an empty
// active segment, and (tiered) uploaded or below the log start offset.
func (c *classifier) run(pred func(i int) bool) {
	for i := c.eligible; i < c.n; i++ {
		last := i == c.n-1
		if !(c.belowHW(i) && pred(i)) || (last && c.size(i) == 0) || !c.deletableTier(i) {
			break
		}
		c.eligible = i + 1
	}
}

// size is the segment's size as Kafka counts it (LogSegment.size):
// written bytes for a preallocated active segment.
func (c *classifier) size(i int) int64 { return c.part.SegmentSize(i, c.preallocate) }

// upper is the offset segment i ends before.
func (c *classifier) upper(i int) int64 {
	if i+1 < c.n {
		return c.segs[i+1].BaseOffset
	}
	return c.logEnd
}

// belowHW: the segment is wholly below the high watermark (an unknown one
// allows nothing).
func (c *classifier) belowHW(i int) bool {
	u := c.upper(i)
	return c.hw >= 0 && u >= 0 && c.hw >= u
}

// uploaded: the segment's last offset is in remote storage.
func (c *classifier) uploaded(i int) bool {
	u := c.upper(i)
	return c.remote.Known() && u > 0 && u-1 <= c.remote.HighestUploaded
}

// deletableTier is UnifiedLog.isSegmentEligibleForDeletion.
func (c *classifier) deletableTier(i int) bool {
	if !c.copyEnabled {
		return true
	}
	if !c.remote.Known() {
		return false
	}
	return c.uploaded(i) || (i+1 < c.n && c.logStart >= c.segs[i+1].BaseOffset)
}

// tier is segment i's place relative to remote storage.
func (c *classifier) tier(i int) Tier {
	switch {
	case !c.tiered:
		return TierNone
	case !c.remote.Known():
		return TierUnknown
	case c.uploaded(i):
		return TierUploaded
	}
	return TierLocalOnly
}

// verdictOf is segment i's classification once the passes ran.
func (c *classifier) verdictOf(i int) verdict {
	if i < c.eligible {
		r := c.reasons[0]
		switch {
		case i >= c.ends[1]:
			r = c.reasons[2]
			if i == c.n-1 {
				r = ReasonAllExpiredActive
			}
		case i >= c.ends[0]:
			r = c.reasons[1]
		}
		return verdict{state: StateEligible, reason: r, expired: c.size(i), tier: c.tier(i)}
	}
	if i < c.n-1 {
		return verdict{state: StateClosed, tier: c.tier(i)}
	}
	v := verdict{state: StateOpen, tier: c.tier(i)}
	if c.applies && c.retentionPasses && c.retentionMs >= 0 {
		s := c.segs[i]
		s.LogBytes = c.size(i)
		v.expired = openExpired(s, c.openExpiry, c.nowMs, c.retentionMs)
	}
	return v
}

// apply returns the segments with their verdicts: the same slice when no
// verdict changes, else a new one (copy on write: published snapshots
// share the old one) unless the caller owns it.
func (c *classifier) apply(owned bool) []Segment {
	var out []Segment
	if owned {
		out = c.segs
	}
	for i := range c.segs {
		s := &c.segs[i]
		v := c.verdictOf(i)
		if s.State == v.state && s.Reason == v.reason && s.ExpiredBytes == v.expired && s.Tier == v.tier {
			continue
		}
		if out == nil {
			out = make([]Segment, c.n)
			copy(out, c.segs)
		}
		out[i].State, out[i].Reason, out[i].ExpiredBytes, out[i].Tier = v.state, v.reason, v.expired, v.tier
	}
	if out == nil {
		return c.segs
	}
	return out
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
