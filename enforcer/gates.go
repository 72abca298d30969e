package enforcer

import (
	"math"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// The evidence gates (spec R7): what Desired holds back when the guard
// lacks the evidence a destructive action needs. observe gathers the
// evidence into Observed (evidence.go); these pure functions turn it into
// holds of the DirGoal:
//
//   - identity (R7.1): a log dir whose meta.properties does not name the
//     connected cluster and this broker, or that the broker does not
//     confirm, is never acted on (dirView.holds: identity_unconfirmed, and
//     Policy.protects never switches protection on for it). A log dir
//     found by a glob that belongs to another cluster or broker is
//     observed only (DirGoal.Foreign), not held: a kubelet pods glob
//     matches every broker's volume on the node;
//   - configs (R7.2): a topic whose configs were not read from the
//     cluster within Gates.ConfigMaxAge, or whose last lookup failed, has
//     no deletion (topicHolds: config_unknown, config_offline,
//     config_fetch_failed, config_stale);
//   - rights: a topic the principal may not delete records of is held
//     (missing_rights); without the rights write protection needs, nothing
//     unexpired is purged (protection_unavailable);
//   - clock (R7.5): a forward jump of the wall clock holds back deletions
//     by retention time in every log dir (clock_jump), a partition with
//     data stamped beyond Gates.FutureTolerance those of its topic
//     (future_timestamps). Purges go by age order, not by expiry, and are
//     not held; while the clock is in doubt, bytes eligible by time count
//     as unexpired against the purge limits;
//   - usage (R7.3): purges of unexpired data are limited per pass, hour
//     and day (purge_cap), never take a partition's newest data (the
//     floor), stop short of the target by the bytes that other data than
//     live partitions explains beyond an allowance (usage_not_kafka), and
//     stop when deletions do not lower usage (purge_ineffective).
//   - moves (R3.8): while a partition of the log dir is being moved to
//     another log dir of the broker (its -future log elsewhere), nothing
//     unexpired is purged in it under the protect band (move_in_flight):
//     the move frees the dir without losing a record. At the protect band
//     (and in a profile without one) purges go on as usual; expired data
//     is deleted as usual.

// Block reasons of the evidence gates.
const (
	BlockIdentityUnconfirmed   BlockReason = "identity_unconfirmed"
	BlockConfigUnknown         BlockReason = "config_unknown"
	BlockConfigOffline         BlockReason = "config_offline"
	BlockConfigFetchFailed     BlockReason = "config_fetch_failed"
	BlockConfigStale           BlockReason = "config_stale"
	BlockMissingRights         BlockReason = "missing_rights"
	BlockClockJump             BlockReason = "clock_jump"
	BlockFutureTimestamps      BlockReason = "future_timestamps"
	BlockUsageNotKafka         BlockReason = "usage_not_kafka"
	BlockPurgeCap              BlockReason = "purge_cap"
	BlockPurgeIneffective      BlockReason = "purge_ineffective"
	BlockProtectionUnavailable BlockReason = "protection_unavailable"
	BlockMoveInFlight          BlockReason = "move_in_flight"
)

// evidenceReasons lists the gates' block reasons.
func evidenceReasons() []BlockReason {
	return []BlockReason{BlockIdentityUnconfirmed, BlockConfigUnknown, BlockConfigOffline, BlockConfigFetchFailed,
		BlockConfigStale, BlockMissingRights, BlockClockJump, BlockFutureTimestamps, BlockUsageNotKafka,
		BlockPurgeCap, BlockPurgeIneffective, BlockProtectionUnavailable, BlockMoveInFlight}
}

// topicReasons are the reasons a topic can be held for (the held_topics
// metric's label values).
func topicReasons() []BlockReason {
	return []BlockReason{BlockConfigUnknown, BlockConfigOffline, BlockConfigFetchFailed, BlockConfigStale,
		BlockMissingRights, BlockFutureTimestamps}
}

// Gates are the evidence gates' settings. A zero duration or percentage
// switches off the check that compares against it.
type Gates struct {
	// ConfigMaxAge: the oldest a topic's configs from the cluster may be
	// for its eligibility to drive deletion.
	ConfigMaxAge time.Duration
	// FutureTolerance: newest data stamped further than this after now
	// holds back the topic's deletions by retention time.
	FutureTolerance time.Duration
	// ProtectFeature is the rights feature write protection needs
	// (protect_acl or protect_quota); "" when the profile never protects:
	// purges then do not wait for protection to be possible.
	ProtectFeature rights.Feature
	// Purge limits purges of unexpired data.
	Purge PurgeConfig
}

// Purged is the unexpired bytes purged in a log dir over the trailing
// hour and day.
type Purged struct {
	Hour, Day int64
}

// PurgeLimit limits purging unexpired data in one log dir this pass. The
// zero value limits nothing.
type PurgeLimit struct {
	// Limited: the fields below apply.
	Limited bool
	// Unexpired is the most unexpired bytes purges may take this pass:
	// what the caps leave (0 when a hold stops purging).
	Unexpired int64
	// OtherExcess is the used bytes that other data than live partitions
	// explains beyond the allowance: a purge leaves usage above its target
	// by that much (R7.3). The plan limits the unexpired bytes it takes to
	// the bytes still to free minus OtherExcess.
	OtherExcess int64
	// FloorSegments, FloorPercent: a partition's newest closed segments,
	// and the newest segments holding that share of its bytes, are never
	// purged.
	FloorSegments int
	FloorPercent  float64
	// Reasons purging is held back or cut short.
	Reasons []BlockReason
}

// confirmed reports whether the log dir's identity was confirmed (R7.1),
// or does not apply (offline).
func confirmed(o Observed, ld *agent.LogDir) bool {
	id, ok := o.Identity[ld.Path]
	return o.Offline || (ok && id.Confirmed())
}

// foreign reports whether the log dir was found by a glob and its
// meta.properties names another cluster or another node: observed only.
func foreign(o Observed, ld *agent.LogDir) bool {
	if ld.Pattern == "" {
		return false
	}
	id, ok := o.Identity[ld.Path]
	return ok && (id.Reason == agent.IdentityOtherCluster || id.Reason == agent.IdentityOtherNode)
}

// gate fills the per-topic, time and purge holds of a log dir that frees
// space.
func (p Policy) gate(o Observed, ld *agent.LogDir, v *dirView, other int64, g *DirGoal) {
	g.HeldTopics = v.topics
	g.TimeHeldTopics = p.futureHolds(o, ld)
	if o.ClockJump > 0 {
		g.TimeBlocked = []BlockReason{BlockClockJump}
	}
	if g.Free.Action == ActionPurge || g.Free.Action == ActionPurgeFraction {
		g.Purge = p.purgeLimit(o, ld, other)
	}
}

// topicHolds lists the live topics of the log dir whose deletions are held
// back, with the reasons: their configs (R7.2) and the principal's
// rights. Topics internal by convention are never deleted and not listed.
func (p Policy) topicHolds(o Observed, ld *agent.LogDir) map[string][]BlockReason {
	noRights := map[string]bool{}
	if o.Rights != nil {
		for _, g := range o.Rights.Missing(rights.DeleteRecords) {
			for _, t := range g.Topics {
				noRights[t] = true
			}
		}
	}
	since := p.Gates.configSince(o.Now)
	held := map[string][]BlockReason{}
	seen := map[string]bool{}
	for i := range ld.Partitions {
		t := ld.Partitions[i].Topic
		if ld.Partitions[i].Kind != agent.KindLive || seen[t] || agent.HasInternalPrefix(t) {
			continue
		}
		seen[t] = true
		var rs []BlockReason
		if r := configHold(o.Snapshot.ConfigInfo(t), since); r != "" {
			rs = append(rs, r)
		}
		if noRights[t] {
			rs = append(rs, BlockMissingRights)
		}
		if len(rs) > 0 {
			held[t] = rs
		}
	}
	return held
}

// configSince is the oldest a topic's configs may have been read from
// the cluster to drive a destructive action at now (R7.2): now minus
// ConfigMaxAge; the zero time (any age) when the check is off.
func (g Gates) configSince(now time.Time) time.Time {
	if g.ConfigMaxAge <= 0 {
		return time.Time{}
	}
	return now.Add(-g.ConfigMaxAge)
}

// configHold says why a topic's config may not drive deletion: not read
// from the cluster, its last lookup failed, or read before since.
func configHold(info agent.TopicConfigInfo, since time.Time) BlockReason {
	switch {
	case info.Err != nil:
		return BlockConfigFetchFailed
	case info.Origin == agent.ConfigFromFile:
		return BlockConfigOffline
	case info.Origin != agent.ConfigFromCluster:
		return BlockConfigUnknown
	case info.Fetched.Before(since):
		return BlockConfigStale
	}
	return ""
}

// futureHolds lists the topics with a partition whose newest data is
// stamped further in the future than the tolerance (R7.5).
func (p Policy) futureHolds(o Observed, ld *agent.LogDir) map[string][]BlockReason {
	if p.Gates.FutureTolerance <= 0 {
		return nil
	}
	limit := o.Now.Add(p.Gates.FutureTolerance)
	var held map[string][]BlockReason
	for i := range ld.Partitions {
		pt := ld.Partitions[i]
		if pt.Kind != agent.KindLive || held[pt.Topic] != nil {
			continue
		}
		for _, s := range pt.Segments {
			if s.LargestTimestamp().After(limit) {
				if held == nil {
					held = map[string][]BlockReason{}
				}
				held[pt.Topic] = []BlockReason{BlockFutureTimestamps}
				break
			}
		}
	}
	return held
}

// purgeLimit is the purge limit of a log dir with a purge goal (R7.3).
func (p Policy) purgeLimit(o Observed, ld *agent.LogDir, other int64) PurgeLimit {
	c := p.Gates.Purge
	share := func(pct float64) int64 { return int64(math.Floor(pct / 100 * float64(ld.Usage.CapacityBytes))) }
	l := PurgeLimit{Limited: true, Unexpired: math.MaxInt64, FloorSegments: c.FloorSegments, FloorPercent: c.FloorPercent}
	add := func(r BlockReason) {
		if !slices.Contains(l.Reasons, r) {
			l.Reasons = append(l.Reasons, r)
		}
	}
	if c.MaxPercentPerPass > 0 {
		done := o.Purged[ld.Path]
		hour, day := share(c.MaxPercentPerHour)-done.Hour, share(c.MaxPercentPerDay)-done.Day
		l.Unexpired = max(0, min(share(c.MaxPercentPerPass), hour, day))
		if hour <= 0 || day <= 0 {
			add(BlockPurgeCap)
		}
	}
	if c.OtherBytesPercent > 0 {
		if l.OtherExcess = max(0, other-share(c.OtherBytesPercent)); l.OtherExcess > 0 {
			add(BlockUsageNotKafka)
		}
	}
	if o.PurgeIneffective[ld.Path] {
		l.Unexpired = 0
		add(BlockPurgeIneffective)
	}
	if p.Gates.ProtectFeature != "" && (o.Rights == nil || !o.Rights.FeatureOK(p.Gates.ProtectFeature)) {
		l.Unexpired = 0
		add(BlockProtectionUnavailable)
	}
	if pi := p.Profile.protectIndex(); pi >= 0 && ld.Usage.Ratio() < p.Profile.Bands[pi].From && movesOut(o.Snapshot, ld) {
		l.Unexpired = 0
		add(BlockMoveInFlight)
	}
	return l
}

// movesOut reports whether a partition of the log dir is being moved to
// another log dir of the broker (AlterReplicaLogDirs in flight, the
// guard's or an operator's): its -future log lives in another log dir.
func movesOut(s *agent.Snapshot, ld *agent.LogDir) bool {
	var future map[TopicPartition]bool
	for i := range s.LogDirs {
		if s.LogDirs[i].Path == ld.Path {
			continue
		}
		for j := range s.LogDirs[i].Partitions {
			if pt := s.LogDirs[i].Partitions[j]; pt.Kind == agent.KindFuture {
				if future == nil {
					future = map[TopicPartition]bool{}
				}
				future[TopicPartition{pt.Topic, pt.Partition}] = true
			}
		}
	}
	for i := range ld.Partitions {
		if pt := ld.Partitions[i]; pt.Kind == agent.KindLive && future[TopicPartition{pt.Topic, pt.Partition}] {
			return true
		}
	}
	return false
}

// otherBytes gives, per log dir, the used bytes of its usage that live
// partitions do not explain and that are not already being deleted (R7.3):
// for a log dir whose usage is its filesystem's, the filesystem's used
// bytes minus the live partitions and pending deletes of every log dir on
// it (agent.Snapshot.Filesystems); for a configured capacity (usage is the
// bytes under the log dir), or a filesystem not known, the log dir's own
// (agent.LogDir.Bytes). The agent accounts for the bytes by kind.
// What it counts: files elsewhere on the filesystem, files deleted but
// held open, filesystem overhead, -future and -stray replicas, the
// metadata log, checkpoints and unrecognised files under the log dirs.
func otherBytes(s *agent.Snapshot) map[string]int64 {
	out := make(map[string]int64, len(s.LogDirs))
	byFS := filesystemsByDir(s)
	for i := range s.LogDirs {
		ld := &s.LogDirs[i]
		used := int64(ld.Usage.UsedBytes)
		if f, ok := byFS[ld.Path]; ok && ld.Usage.Basis != agent.CapacityConfigured {
			out[ld.Path] = max(0, used-f.Live-f.PendingDelete)
			continue
		}
		b := ld.Bytes()
		out[ld.Path] = max(0, used-b.Live-b.PendingDelete)
	}
	return out
}

// timeBased reports whether the segment is eligible by retention time,
// the eligibility a wall clock decides.
func timeBased(s agent.Segment) bool {
	return s.State == agent.StateEligible && s.Reason == agent.ReasonRetentionTime
}

// floorIndex is the index of the first segment of the partition a purge
// never takes (unless eligible by retention): the newest floorSegments
// closed segments and the newest segments holding floorPercent of its
// bytes, the open segment counted. len(Segments)-1 (the open segment)
// without a floor.
func floorIndex(p *agent.Partition, l PurgeLimit) int {
	n := len(p.Segments)
	idx := max(n-1-l.FloorSegments, 0)
	if l.FloorPercent > 0 {
		var total int64
		for _, s := range p.Segments {
			total += s.DiskBytes
		}
		floor := int64(math.Ceil(l.FloorPercent / 100 * float64(total)))
		kept := p.Segments[n-1].DiskBytes
		j := n - 1
		for j > 0 && kept < floor {
			j--
			kept += p.Segments[j].DiskBytes
		}
		idx = min(idx, j)
	}
	return idx
}
