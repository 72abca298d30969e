package enforcer

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// Evidence is what the cluster says before a destructive action (spec
// R7): the connected cluster's id and a node's own report of its log dirs
// (R7.1), and the rights of the guard's principal. Implemented by
// internal/kafkaadmin.Evidence; every call fails without a connection.
type Evidence interface {
	ClusterID(ctx context.Context) (string, error)
	BrokerLogDirs(ctx context.Context, node int32) ([]agent.BrokerLogDir, error)
	Rights(ctx context.Context, q rights.Query) (rights.Report, error)
}

// MonotonicClock is a Clock that also tells the time elapsed since some
// fixed instant on a clock that never jumps (the system's monotonic
// clock). The clock gate compares the two across passes (spec R7.5). A
// Clock without it is read with Go's monotonic reading of Now, which a
// test clock does not have: such a clock never jumps.
type MonotonicClock interface {
	Clock
	Elapsed() time.Duration
}

// SystemClock is the wall clock with the system's monotonic clock.
func SystemClock() MonotonicClock { return systemClock{start: time.Now()} }

type systemClock struct{ start time.Time }

func (systemClock) Now() time.Time           { return time.Now() }
func (c systemClock) Elapsed() time.Duration { return time.Since(c.start) }

// evidenceState is what the worker remembers of the evidence between
// passes (owned by Run / Reconcile, like the rest of the Enforcer's
// state).
type evidenceState struct {
	// Identity (R7.1): the last reads, and when they were tried.
	clusterID  string
	clusterErr error
	node       int32 // the guarded node; -1 when not known
	nodeErr    error
	brokerDirs []agent.BrokerLogDir
	dirsErr    error
	identityAt time.Time
	paths      []string // the snapshot's log dirs at the last read
	logged     map[string]agent.LogDirIdentity

	// Rights: the last report and when it was read.
	rights    *rights.Report
	rightsAt  time.Time
	rightsErr string
	rightsMsg string // the last report logged

	// Clock (R7.5): the last pass's readings, and the jump being held.
	origin    time.Time
	lastWall  time.Time
	lastMono  time.Duration
	haveClock bool
	jump      time.Duration
	jumpUntil time.Duration // monotonic

	// Purges (R7.3): unexpired bytes purged, deletions waiting to be
	// verified on disk, and log dirs where they were not.
	purges      []purgeRecord
	checks      []purgeCheck
	ineffective map[string]ineffective
}

// purgeRecord is unexpired bytes purged in a log dir at a monotonic time.
type purgeRecord struct {
	at    time.Duration
	dir   string
	bytes int64
}

// observeEvidence gathers the pass's evidence into o (after the snapshot,
// before the ownership records and offsets): the clock, the purge history
// and feedback, and, with a cluster, the identity of the log dirs and the
// guarded node and the principal's rights. Its reads fail without marking the broker
// unreachable: what could not be read is itself the reason actions are
// held back, logged once per change.
func (e *Enforcer) observeEvidence(ctx context.Context, o *Observed) {
	mono := e.readClock(o)
	snap := o.Snapshot
	o.Purged = e.purged(mono)
	o.PurgeIneffective = e.verifyPurges(snap, mono)
	if e.evidence == nil {
		o.Offline = true
		return
	}
	if e.identityDue(o) {
		e.readIdentity(ctx, o.Now, snap)
	}
	o.Identity = e.identities(snap.LogDirs)
	e.publishOffline(o.Identity)
	e.reportIdentity(snap.LogDirs, o.Identity)
	if e.rightsDue(o) {
		e.readRights(ctx, o)
	}
	o.Rights = e.ev.rights
}

// ---- Clock (R7.5) ----

// readClock detects a forward jump of the wall clock since the last pass
// (wall time elapsed minus monotonic time elapsed above the tolerance),
// holds time-based deletions for ClockJumpHold after it, and sets
// o.ClockJump. It returns the monotonic reading.
func (e *Enforcer) readClock(o *Observed) time.Duration {
	ev := &e.ev
	var mono time.Duration
	if mc, ok := e.clock.(MonotonicClock); ok {
		mono = mc.Elapsed()
	} else {
		if ev.origin.IsZero() {
			ev.origin = o.Now
		}
		mono = o.Now.Sub(ev.origin) // monotonic when the clock's times carry it
	}
	if ev.haveClock {
		wall := o.Now.Round(0).Sub(ev.lastWall.Round(0))
		if jump := wall - (mono - ev.lastMono); jump > e.cfg.Evidence.ClockJumpTolerance {
			if ev.jump == 0 {
				e.m.ev.clockJumps.Inc()
			}
			ev.jump += jump
			ev.jumpUntil = mono + e.cfg.Evidence.ClockJumpHold
			e.logger.Warn("wall clock jumped forward: deletions by retention time held back", "jump", jump.String(),
				"wall_clock", o.Now.Format(time.RFC3339), "hold", e.cfg.Evidence.ClockJumpHold.String(), "reason", BlockClockJump)
		}
	}
	ev.lastWall, ev.lastMono, ev.haveClock = o.Now, mono, true
	if ev.jump > 0 && mono >= ev.jumpUntil {
		e.logger.Info("clock jump hold over: deletions by retention time allowed again", "jump", ev.jump.String())
		ev.jump = 0
	}
	o.ClockJump = ev.jump
	e.m.ev.clockJump.Set(ev.jump.Seconds())
	return mono
}

// ---- Identity (R7.1) ----

// identityDue: never read, an IdentityInterval old, the snapshot's log
// dirs changed, or (at most once an Interval) a read failed or a log dir
// that is not another's is not confirmed.
func (e *Enforcer) identityDue(o *Observed) bool {
	ev := &e.ev
	if ev.identityAt.IsZero() || o.Now.Before(ev.identityAt) {
		return true
	}
	age := o.Now.Sub(ev.identityAt)
	if age >= e.cfg.Evidence.IdentityInterval || !slices.Equal(logDirPaths(o.Snapshot), ev.paths) {
		return true
	}
	if age < e.cfg.Interval {
		return false
	}
	if ev.clusterErr != nil || ev.nodeErr != nil || ev.dirsErr != nil {
		return true
	}
	ids := e.identities(o.Snapshot.LogDirs)
	for i := range o.Snapshot.LogDirs {
		ld := &o.Snapshot.LogDirs[i]
		if id := ids[ld.Path]; !id.Confirmed() && !(ld.Pattern != "" && (id.Reason == agent.IdentityOtherCluster || id.Reason == agent.IdentityOtherNode)) {
			return true
		}
	}
	return false
}

func logDirPaths(s *agent.Snapshot) []string {
	out := make([]string, len(s.LogDirs))
	for i := range s.LogDirs {
		out[i] = s.LogDirs[i].Path
	}
	return out
}

// readIdentity reads the connected cluster's id, picks the guarded node
// (configured, else the one node of that cluster the log dirs name) and
// reads that node's log dirs. A cluster id that cannot be read keeps the
// last one (it never changes on a connection); the node's log dirs that
// cannot be read are dropped (none can be confirmed).
func (e *Enforcer) readIdentity(ctx context.Context, now time.Time, snap *agent.Snapshot) {
	ev := &e.ev
	ev.identityAt, ev.paths = now, logDirPaths(snap)
	id, err := e.evidence.ClusterID(ctx)
	ev.clusterErr = err
	if err != nil {
		if ev.clusterID == "" {
			ev.brokerDirs, ev.dirsErr = nil, nil
		}
		return
	}
	ev.clusterID = id
	ev.node, ev.nodeErr = agent.GuardedNode(snap.LogDirs, id, e.cfg.configuredBroker())
	if ev.nodeErr != nil {
		ev.node, ev.brokerDirs, ev.dirsErr = -1, nil, nil
		return
	}
	ev.brokerDirs, ev.dirsErr = e.evidence.BrokerLogDirs(ctx, ev.node)
	if ev.dirsErr != nil {
		ev.brokerDirs = nil
	}
}

// identities checks every log dir against the last evidence read.
func (e *Enforcer) identities(dirs []agent.LogDir) map[string]agent.LogDirIdentity {
	ev := &e.ev
	out := make(map[string]agent.LogDirIdentity, len(dirs))
	if ev.clusterID == "" {
		why := "no connection to the cluster yet"
		if ev.clusterErr != nil {
			why = ev.clusterErr.Error()
		}
		for i := range dirs {
			r := agent.LogDirIdentity{Path: dirs[i].Path, Reason: agent.IdentityNotConfirmed,
				Detail: "the connected cluster's id is not known: " + why}
			if dirs[i].Err != nil {
				r.Reason, r.Detail = agent.IdentityUnreadable, dirs[i].Err.Error()
			}
			out[r.Path] = r
		}
		return out
	}
	res := agent.CheckIdentity(dirs, agent.IdentityEvidence{ClusterID: ev.clusterID, NodeID: ev.node, LogDirs: ev.brokerDirs})
	for _, r := range res {
		switch {
		case ev.nodeErr != nil && (r.Reason == agent.IdentityOtherNode || r.Reason == agent.IdentityNotConfirmed):
			// Which node is guarded is not known: none of the cluster's
			// log dirs is another's, none is confirmed.
			r.Reason, r.Detail = agent.IdentityNotConfirmed, "the guarded node is not known: "+ev.nodeErr.Error()
		case r.Reason == agent.IdentityNotConfirmed && ev.dirsErr != nil:
			r.Detail = fmt.Sprintf("node %d's log dirs could not be read: %v", ev.node, ev.dirsErr)
		}
		out[r.Path] = r
	}
	return out
}

// reportIdentity sets the identity metric and logs each log dir whose
// result changed: confirmed (info), another's (info: observed only) or
// not confirmed (warn, naming what differed).
func (e *Enforcer) reportIdentity(dirs []agent.LogDir, ids map[string]agent.LogDirIdentity) {
	ev := &e.ev
	if ev.logged == nil {
		ev.logged = map[string]agent.LogDirIdentity{}
	}
	for i := range dirs {
		ld := &dirs[i]
		id := ids[ld.Path]
		e.m.ev.setIdentity(ld.Path, id.Reason)
		prev, ok := ev.logged[ld.Path]
		if ok && prev.Reason == id.Reason && prev.MatchedBy == id.MatchedBy && (id.Confirmed() || prev.Detail == id.Detail || id.Reason == agent.IdentityNotConfirmed) {
			continue
		}
		ev.logged[ld.Path] = id
		attrs := []any{"log_dir", ld.Path, "cluster_id", ld.ClusterID, "broker_id", ld.BrokerID}
		switch {
		case id.Confirmed():
			e.logger.Info("log dir identity confirmed", append(attrs, "broker_path", id.BrokerPath, "matched_by", id.MatchedBy,
				"connected_cluster", ev.clusterID, "node", ev.node)...)
		case foreign(Observed{Identity: ids}, ld):
			e.logger.Info("log dir of another cluster or broker: observed only, never acted on",
				append(attrs, "pattern", ld.Pattern, "reason", id.Reason, "detail", id.Detail)...)
		default:
			e.logger.Warn("log dir identity not confirmed: no destructive action in it",
				append(attrs, "reason", id.Reason, "detail", id.Detail, "block_reason", BlockIdentityUnconfirmed)...)
		}
	}
	for p := range ev.logged {
		if _, ok := ids[p]; !ok {
			delete(ev.logged, p)
			e.m.ev.dropIdentity(p)
		}
	}
}

// BrokerID is the node the guard acts for: configured (enforcer.brokerId),
// else the one node of the connected cluster its log dirs name (spec
// R7.1); -1 until known.
func (e *Enforcer) BrokerID() int32 { return e.guarded.Load() }

// ---- Rights ----

// rightsDue: never read, a RightsInterval old, or (at most once an
// Interval) not known yet.
func (e *Enforcer) rightsDue(o *Observed) bool {
	ev := &e.ev
	if ev.rightsAt.IsZero() || o.Now.Before(ev.rightsAt) {
		return true
	}
	age := o.Now.Sub(ev.rightsAt)
	return age >= e.cfg.Evidence.RightsInterval || (ev.rights == nil && age >= e.cfg.Interval)
}

// readRights checks the rights of the enforcer's features on the topics
// of the log dirs it may act on, and logs the report when it changed.
func (e *Enforcer) readRights(ctx context.Context, o *Observed) {
	ev := &e.ev
	ev.rightsAt = o.Now
	var topics []string
	seen := map[string]bool{}
	for i := range o.Snapshot.LogDirs {
		ld := &o.Snapshot.LogDirs[i]
		if foreign(*o, ld) {
			continue
		}
		for k := range ld.Partitions {
			if p := ld.Partitions[k]; p.Kind == agent.KindLive && !seen[p.Topic] {
				seen[p.Topic] = true
				topics = append(topics, p.Topic)
			}
		}
	}
	slices.Sort(topics)
	r, err := e.evidence.Rights(ctx, rights.Query{Features: e.features, Topics: topics, OwnershipTopic: e.cfg.OwnershipTopic})
	if err != nil {
		if msg := err.Error(); msg != ev.rightsErr {
			e.logger.Warn("rights of the guard's principal could not be checked", "err", msg)
			ev.rightsErr = msg
		}
		return
	}
	ev.rights, ev.rightsErr = &r, ""
	e.m.ev.setRights(r)
	if msg := r.String(); msg != ev.rightsMsg {
		ev.rightsMsg = msg
		if r.OK() {
			e.logger.Info("rights of the guard's principal: all present", "features", r.Features, "topics_checked", r.Checked)
			return
		}
		var missing []string
		for _, g := range r.Gaps {
			missing = append(missing, g.String())
		}
		attrs := []any{"features", r.Features, "topics_checked", r.Checked, "missing", missing}
		if f := e.policy.Gates.ProtectFeature; f != "" && !r.FeatureOK(f) {
			attrs = append(attrs, "consequence", "write protection is not possible: nothing unexpired is purged ("+string(BlockProtectionUnavailable)+")")
		}
		e.logger.Warn("rights of the guard's principal: missing "+strings.Join(featureNames(r), ", "), attrs...)
	}
}

// featureNames lists the features with a gap.
func featureNames(r rights.Report) []string {
	var out []string
	for _, f := range r.Features {
		if len(r.Missing(f)) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

// Features lists the rights features the enforcer uses with this
// configuration (rights.Needs says what each needs): observe, deleting
// records when a band frees space, the protection strategy's feature when
// a band protects, and the relief rungs switched on (cordon, move,
// reassign).
func Features(cfg Config) ([]rights.Feature, error) {
	cfg = cfg.WithDefaults()
	p, err := ProfileFor(cfg)
	if err != nil {
		return nil, err
	}
	return enforcerFeatures(p, cfg.Protection.Strategy, cfg.Relief, nil), nil
}

// enforcerFeatures lists the rights features the enforcer uses with this
// profile and strategy, then extra (other parts of the guard).
func enforcerFeatures(p Profile, strategy string, relief ReliefConfig, extra []rights.Feature) []rights.Feature {
	fs := []rights.Feature{rights.Observe}
	for _, b := range p.Bands {
		if b.Action.frees() || b.Action == ActionScheduled {
			fs = append(fs, rights.DeleteRecords)
			break
		}
	}
	if f := protectFeature(p, strategy); f != "" {
		fs = append(fs, f)
	}
	if p.lowestPurgeBand() != "" {
		fs = append(fs, rights.Tiered) // lowering tiered topics' local retention (R7.4)
	}
	if !math.IsInf(Policy{Profile: p}.cordonFrom(relief.Cordon), 1) {
		fs = append(fs, rights.Cordon) // cordoning a filling log dir (R3.8)
	}
	if relief.Move.MoveEnabled() && purgeAt(p) > 0 {
		fs = append(fs, rights.Move) // moves within the broker (R3.8)
	}
	if relief.Reassign {
		fs = append(fs, rights.Reassign) // reassignments off the broker (R3.8)
	}
	for _, f := range extra {
		if !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
	}
	return fs
}

// protectFeature is the feature write protection needs, "" when the
// profile never protects.
func protectFeature(p Profile, strategy string) rights.Feature {
	if p.protectIndex() < 0 {
		return ""
	}
	if strategy == StrategyQuota {
		return rights.ProtectQuota
	}
	return rights.ProtectACL
}
