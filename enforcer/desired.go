package enforcer

import (
	"math"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offsets are a partition's offsets as the broker reports them now.
type Offsets struct {
	LogStart      int64
	HighWatermark int64
}

// BlockReason says why destructive actions are held back.
type BlockReason string

// Block reasons (the enforcer_blocked metric's label).
const (
	BlockSnapshotStale     BlockReason = "snapshot_stale"
	BlockBrokerUnreachable BlockReason = "broker_unreachable"
	BlockScanErrors        BlockReason = "scan_errors"
	// BlockLeaseFenced: this agent's lease, as last written and read
	// back, is not live with the margin (leaseMargin), and the ledger,
	// read before the purge, could not be read or shows another instance
	// holding the broker: it purges nothing until it renews (spec R8.8).
	BlockLeaseFenced BlockReason = "lease_fenced"
	// BlockPurgeHistory: this process found no record of its own at its
	// first ledger read (a fresh install, or the ownership topic lost
	// while it was down): it purges no unexpired data for a lease and a
	// pass, in which a peer writes back a record the topic lost, with its
	// purge history (spec R7.3, restoreHistory).
	BlockPurgeHistory BlockReason = "purge_history"
)

// blockReasons lists every block reason: enforcer_blocked has a series for
// each, 0 or 1. A new reason is added here and in dirView.holds (or as a topic
// hold); the evidence gates' reasons (spec R7) are in gates.go.
func blockReasons() []BlockReason {
	return append([]BlockReason{BlockSnapshotStale, BlockBrokerUnreachable, BlockScanErrors, BlockLeaseFenced, BlockPurgeHistory}, evidenceReasons()...)
}

// Policy is what Desired decides by.
type Policy struct {
	Profile          Profile
	HysteresisPoints float64
	// Gates are the evidence gates' settings (spec R7); zero values
	// switch the gates that compare against them off.
	Gates Gates
}

// Observed is everything a reconcile pass knows: what observe read, for
// the pure functions Desired and PlanActions.
type Observed struct {
	Now      time.Time
	Snapshot *agent.Snapshot
	// Protected: log dirs under this agent's protection now (its
	// ownership record).
	Protected map[string]bool
	// ScheduleDue: the daily scheduled deletion window has come.
	ScheduleDue bool
	// Offsets from the broker, for the partitions of log dirs that free
	// space this pass. Partitions without an entry are not touched.
	Offsets map[TopicPartition]Offsets
	// FractionDone: partitions that already had their purge_fraction pass
	// in the current interval.
	FractionDone map[TopicPartition]bool
	// EligibleSince: when the enforcer first saw each eligible segment of
	// a tiered partition (tieredPending); nil: all seen just now.
	EligibleSince map[SegmentKey]time.Time
	// Protection state from the admin API and the ownership records (nil
	// when not observed this pass); WouldProtect: observe mode's view of
	// it, what enforcing would see (spec R8, protect_plan.go).
	Protection   *ProtectionObserved
	WouldProtect *ProtectionObserved
	// BrokerNotAlive: the cluster's metadata does not list this agent's
	// broker (fenced for a restart, or gone): none of its log dirs is a
	// reason to protect anew (spec R8.3); protection already on is kept
	// through the hysteresis.
	BrokerNotAlive bool
	// BrokerGone: BrokerNotAlive for a whole lease (decommissioned, not
	// restarting): its protection goes, as its peers lift it then.
	BrokerGone bool
	// wantProtected and lowerCandidates: the log dirs the policy wants
	// protected and the tiered topics a pass may lower
	// (Policy.protectDirs, Policy.lowerCandidates), computed once by
	// observe for the reads that depend on them.
	wantProtected   map[string]bool
	lowerCandidates []string
	// dirs: each log dir's band, freeing goal and holds (Policy.viewDirs),
	// computed once by observe after the evidence, for its offsets read,
	// the lowering candidates and Desired.
	dirs []dirView

	// Evidence for destructive actions (spec R6). What is missing here
	// becomes a hold in Desired (dirView.holds for a log dir, DirGoal.HeldTopics
	// for a topic): evidence the guard verifies before it deletes or
	// blocks (identity of the log dirs, fresh topic configs, a sane clock,
	// bytes Kafka owns) goes next to these fields, and its reasons into
	// those holds.

	// Stale: the snapshot is missing or older than staleAfter.
	Stale bool
	// BrokerUnreachable: the admin API did not answer this pass.
	BrokerUnreachable bool

	// ---- Evidence gates (spec R7; gates.go). ----

	// Offline: no cluster is configured. Nothing can be performed (every
	// action fails as not connected), so the identity gate does not apply
	// and rights are not checked; the plan is a what-if.
	Offline bool

	// Identity is each log dir's identity check against the connected
	// cluster and this broker (R7.1), by path. A log dir without an entry
	// is not confirmed.
	Identity map[string]agent.LogDirIdentity
	// Rights is what the guard's principal may do (nil: not known yet).
	Rights *rights.Report
	// ClockJump is the forward jump of the wall clock whose hold is still
	// on (R7.5; 0: none).
	ClockJump time.Duration
	// Purged is the unexpired bytes purged per log dir in the trailing
	// hour and day (R7.3 caps).
	Purged map[string]Purged
	// PurgeIneffective lists the log dirs where bytes the guard deleted
	// left the log dir but the filesystem's used bytes did not fall
	// (R7.3 feedback).
	PurgeIneffective map[string]bool
}

// Free is a log dir's freeing goal for this pass.
type Free struct {
	Action   Action  // scheduled, periodic, purge, purge_fraction; "" none
	Target   float64 // ratio; 0: no target (scheduled: all eligible)
	Fraction float64
}

// DirGoal is the desired state of one log dir.
type DirGoal struct {
	LogDir  string
	Usage   float64
	Band    Band
	Protect bool
	Free    Free
	// Blocked: destructive actions in the log dir held back for these
	// reasons (dirView.holds).
	Blocked []BlockReason
	// HeldTopics: topics whose deletions are held back in this log dir,
	// with the reasons; the plan skips them and records why
	// (Plan.HeldTopics), and the pass counts as blocked. Set for log dirs
	// that free space (topicHolds: configs, rights).
	HeldTopics map[string][]BlockReason
	// TimeBlocked: deletions of segments eligible by retention time are
	// held back in the whole log dir for these reasons; TimeHeldTopics
	// for one topic (the clock gate, spec R7.5). Purges go by age order,
	// not by expiry, and are not held by them.
	TimeBlocked    []BlockReason
	TimeHeldTopics map[string][]BlockReason
	// Purge limits purging unexpired data (spec R7.3); the zero value
	// limits nothing.
	Purge PurgeLimit
	// Foreign: the log dir was found by a glob and belongs to another
	// cluster or broker (R7.1): observed only, never acted on, not a hold.
	Foreign bool
	// Lower: the tiered topics whose local retention the pass lowers
	// instead of purging them (spec R7.4; localret.go).
	Lower lowerPlan
}

// Desired computes every log dir's goal from the policy and what is
// observed. It is pure.
func Desired(p Policy, o Observed) []DirGoal {
	if o.Snapshot == nil {
		return nil
	}
	goals := make([]DirGoal, 0, len(o.Snapshot.LogDirs))
	other := otherBytes(o.Snapshot)
	views := p.views(o)
	for i := range o.Snapshot.LogDirs {
		ld, v := &o.Snapshot.LogDirs[i], &views[i]
		g := DirGoal{LogDir: ld.Path, Usage: ld.Usage.Ratio(), Band: p.Profile.Bands[v.band], Protect: p.protects(o, ld)}
		if v.foreign {
			g.Foreign = true
			goals = append(goals, g)
			continue
		}
		g.Free, g.Blocked = v.free, v.holds(o)
		if g.Free.Action != "" {
			p.gate(o, ld, v, other[ld.Path], &g)
		}
		g.Lower = p.planLower(o, ld, g)
		goals = append(goals, g)
	}
	return goals
}

// protects reports whether the log dir must be write-protected: at or
// above the protect band, or still within its hysteresis (R3.7). A stale
// snapshot changes nothing (usage unknown: the lease is not renewed
// either, spec R8.1). A log dir the agent cannot read, or of a broker the
// cluster no longer lists, is Kafka's own failure, never a reason to
// block writes cluster-wide (spec R8.3).
//
// The identity gate (spec R7.1) applies: a log dir of another cluster or
// broker is never protected, and one whose identity is not confirmed is
// never newly protected (protection already on is kept, and lifted as
// usual).
func (p Policy) protects(o Observed, ld *agent.LogDir) bool {
	pi := p.Profile.protectIndex()
	was := o.Protected[ld.Path]
	u := ld.Usage.Ratio()
	switch {
	case foreign(o, ld):
		return false
	case o.Stale:
		return was
	case pi < 0 || unreadable(ld):
		return false
	case o.BrokerNotAlive:
		// Fenced (a restart) or gone: nothing newly protected, but
		// protection already on is kept through the hysteresis, since
		// a returning broker replicates its backlog onto the same disk
		// (spec R8.8's peers lift it once the broker stays out of the
		// metadata for a lease).
		return was && !o.BrokerGone && u >= p.Profile.Bands[pi].From-p.HysteresisPoints/100
	case u >= p.Profile.Bands[pi].From && (was || confirmed(o, ld)):
		return true
	case was && u >= p.Profile.Bands[pi].From-p.HysteresisPoints/100:
		return true
	}
	return false
}

// freeing is the freeing goal at band bi: its own freeing action, a
// protect band's nearest lower one, or the daily schedule when due.
func (p Policy) freeing(o Observed, bi int) Free {
	if fi := p.Profile.freeingBand(bi); fi >= 0 {
		fb := p.Profile.Bands[fi]
		return Free{Action: fb.Action, Target: fb.Target, Fraction: fb.Fraction}
	}
	if p.Profile.Bands[bi].Action == ActionScheduled && o.ScheduleDue {
		return Free{Action: ActionScheduled}
	}
	return Free{}
}

// dirView is what a pass knows of one log dir before it plans: its band,
// whether it is another cluster's, its freeing goal and the holds that
// do not change during the pass (the log dir's own evidence, and its
// topics' holds when it frees space). Policy.viewDirs computes it once
// per pass.
type dirView struct {
	band    int
	foreign bool
	free    Free
	// unreadable: the last scan failed or the capacity is unknown;
	// unconfirmed: the log dir's identity is not confirmed (spec R7.1).
	unreadable, unconfirmed bool
	// topics: topicHolds, for a log dir that frees space.
	topics map[string][]BlockReason
}

// viewDirs computes each log dir's view, in the snapshot's order, from
// what is observed once the evidence is read (observe keeps it in
// Observed.dirs).
func (p Policy) viewDirs(o Observed) []dirView {
	views := make([]dirView, len(o.Snapshot.LogDirs))
	for i := range o.Snapshot.LogDirs {
		ld := &o.Snapshot.LogDirs[i]
		v := dirView{band: p.Profile.BandAt(ld.Usage.Ratio()), foreign: foreign(o, ld), unreadable: unreadable(ld), unconfirmed: !confirmed(o, ld)}
		v.free = p.freeing(o, v.band)
		if v.free.Action != "" && !v.foreign {
			v.topics = p.topicHolds(o, ld)
		}
		views[i] = v
	}
	return views
}

// views returns the pass's log dir views: observe's, or computed now for
// an Observed built without them.
func (p Policy) views(o Observed) []dirView {
	if len(o.dirs) == len(o.Snapshot.LogDirs) {
		return o.dirs
	}
	return p.viewDirs(o)
}

// holds lists why destructive actions are held back in the log dir
// (spec R6): the pass's missing evidence, then the log dir's own.
func (v *dirView) holds(o Observed) []BlockReason {
	var holds []BlockReason
	if o.Stale {
		holds = append(holds, BlockSnapshotStale)
	}
	if o.BrokerUnreachable {
		holds = append(holds, BlockBrokerUnreachable)
	}
	if v.unreadable {
		holds = append(holds, BlockScanErrors)
	}
	if v.unconfirmed {
		holds = append(holds, BlockIdentityUnconfirmed)
	}
	return holds
}

// unreadable: the log dir's last scan failed or its capacity is unknown.
func unreadable(ld *agent.LogDir) bool {
	return ld.Err != nil || ld.Usage.CapacityBytes == 0
}

// protectDirs is the set of log dirs the policy wants protected.
func (p Policy) protectDirs(o Observed) map[string]bool {
	dirs := map[string]bool{}
	if o.Snapshot == nil {
		return dirs
	}
	for i := range o.Snapshot.LogDirs {
		if ld := &o.Snapshot.LogDirs[i]; p.protects(o, ld) {
			dirs[ld.Path] = true
		}
	}
	return dirs
}

// freeingPartitions lists the partitions the guard may delete from in log
// dirs whose freeing goal is not held back: those whose offsets a pass
// needs from the broker.
func (p Policy) freeingPartitions(o Observed) []TopicPartition {
	var parts []TopicPartition
	views := p.views(o)
	for i := range o.Snapshot.LogDirs {
		ld, v := &o.Snapshot.LogDirs[i], &views[i]
		if v.foreign || v.free.Action == "" || len(v.holds(o)) > 0 {
			continue
		}
		for _, pt := range ld.Partitions {
			if pt.Kind == agent.KindLive && len(pt.Segments) > 1 && deletable(o.Snapshot, pt) && len(v.topics[pt.Topic]) == 0 {
				parts = append(parts, TopicPartition{pt.Topic, pt.Partition})
			}
		}
	}
	return parts
}

// deletable reports whether the guard may DeleteRecords on the topic:
// not internal by convention (agent.HasInternalPrefix: Kafka's own topics
// are compact-only or out of the admin API's reach, and the guard's
// ownership topic and other tools' bookkeeping are left alone), its
// cleanup.policy includes delete (compact-only answers POLICY_VIOLATION),
// and it is not tiered. DeleteRecords moves the log start offset, which
// deletes the remote copy too (spec R7.4): a topic with
// remote.storage.enable=true is never deletable, whatever the broker's
// remote.log.storage.system.enable or the topic's remote.log.copy.disable.
// Nor is a partition whose retention Kafka does not run (pt.Held:
// moving to another log dir, compacted with the cleaner off, its log dir
// offline; spec R1.2): a DeleteRecords there moves the log start offset
// (the records become unreadable) but frees no disk until the hold ends.
// The rule: a DeleteRecords is planned only where Kafka's retention
// will delete the segments below the new log start offset at its next
// check. Both observe (which offsets to read) and PlanActions decide by
// it.
func deletable(s *agent.Snapshot, pt *agent.Partition) bool {
	c := s.TopicConfig(pt.Topic)
	return !agent.HasInternalPrefix(pt.Topic) && c.CleanupPolicy.Delete && !c.RemoteStorage && pt.Held == agent.ReasonNone &&
		!(c.CleanerDisabled && c.CleanupPolicy.Compact)
}

// needBytes is how many bytes must still be freed for usage to fall
// under target, given bytes already on their way out.
func needBytes(ld agent.LogDir, target float64, alreadyFreed int64) int64 {
	limit := int64(math.Floor(target * float64(ld.Usage.CapacityBytes)))
	need := int64(ld.Usage.UsedBytes) - alreadyFreed - limit + 1
	return max(need, 0)
}
