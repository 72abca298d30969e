// Package enforcer keeps a broker's log dirs inside their usage bands
// (spec R3, R4): it deletes eligible segments on schedule or periodically,
// purges the oldest segments when the disk fills (lowering tiered topics'
// local retention instead, R7.4), and switches write protection on and
// off (R8), all through the Kafka admin API and only on the evidence of
// R7. It is a level-triggered reconcile loop: observe -> Desired (pure)
// -> PlanActions (pure) -> apply. Observe mode (the default) computes,
// logs and counts the same plan and deletes, protects and lowers
// nothing; it still gives back what an enforcing run or an expired peer
// left in place: it lifts that protection and restores lowered local
// retention (R4.4).
package enforcer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// SnapshotSource publishes the agent's snapshots. Updated returns a
// coalescing notification channel: capacity 1, the publisher sends to it
// without blocking after each new snapshot, so a slow reader sees one
// pending signal however many snapshots were published.
type SnapshotSource interface {
	Snapshot() *agent.Snapshot
	Updated() <-chan struct{}
}

// The agent's live watcher is the production SnapshotSource.
var _ SnapshotSource = (*agent.Agent)(nil)

// Clock tells the time (injected for the schedule and staleness).
type Clock interface {
	Now() time.Time
}

// Admin is the Kafka admin API the enforcer uses, made of small
// interfaces (a part that needs only one names only that one).
// Implemented by internal/kafkaadmin and internal/simbroker. Every method
// checks every per-item error code.
type Admin interface {
	DeletionAdmin
	RecordStore
	ACLAdmin
	QuotaAdmin
	ConfigAdmin
	// LiveBrokers lists the broker ids in the cluster's metadata (nil:
	// unknown, as without a cluster).
	LiveBrokers(ctx context.Context) ([]int32, error)
}

// DeletionAdmin reads offsets and deletes records (spec R4.1).
type DeletionAdmin interface {
	// Offsets returns the broker's log start offset and high watermark of
	// the partitions whose leader answered; a partition left out is not
	// deleted from.
	Offsets(ctx context.Context, parts []TopicPartition) (map[TopicPartition]Offsets, error)
	// DeleteRecords moves log start offsets of one topic's partitions; the
	// map holds each partition's own result (nil: done).
	DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error)
}

// RecordStore is the ledger: the ownership topic (spec R8.5-R8.8).
type RecordStore interface {
	// LoadRecords reads the ownership topic to its end: every agent's
	// record and lift (package ledger). A topic that is missing, has more than
	// one partition or is not compacted is ErrLedgerLost (ErrLedgerMissing
	// when missing), never "no records"; a value that does not decode is
	// skipped and counted in Records.Undecodable.
	LoadRecords(ctx context.Context) (Records, error)
	// StoreRecord writes this agent's record (keyed by its broker id,
	// acks=all, partition 0), creating the topic when missing; it returns
	// when the write is acknowledged or ctx ends.
	StoreRecord(ctx context.Context, r Record) error
	// StoreLift writes a lift of a broker's claims (acks=all).
	StoreLift(ctx context.Context, l Lift) error
}

// ACLAdmin reads and changes topic ACLs (strategy acl).
type ACLAdmin interface {
	// TopicACLs lists every ACL on topic resources; ErrNoAuthorizer when
	// the brokers run without an authorizer.
	TopicACLs(ctx context.Context) ([]ACL, error)
	// CreateACLs creates bindings; DeleteACLs deletes exactly the
	// bindings given. Both answer ErrNoAuthorizer without an authorizer.
	CreateACLs(ctx context.Context, acls []ACL) error
	DeleteACLs(ctx context.Context, acls []ACL) error
	// AllowEveryoneIfNoACLFound reads the brokers'
	// allow.everyone.if.no.acl.found (see AllowEveryone).
	AllowEveryoneIfNoACLFound(ctx context.Context) (AllowEveryone, error)
}

// QuotaAdmin reads and changes the default client quota (strategy quota).
type QuotaAdmin interface {
	// DefaultProducerQuota is the default client entity's
	// producer_byte_rate (0: none).
	DefaultProducerQuota(ctx context.Context) (int64, error)
	SetDefaultProducerQuota(ctx context.Context, rate int64) error
	RemoveDefaultProducerQuota(ctx context.Context) error
}

// ConfigAdmin reads and changes topic configs (tiered topics' local
// retention, spec R7.4).
type ConfigAdmin interface {
	// TopicConfigOverrides reads key of each topic as set on the topic
	// itself (nil: not set there, inherited from the broker or Kafka's
	// default). A topic the cluster does not have is left out of the map;
	// any other failure fails the call.
	TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error)
	// AlterTopicConfig sets key on topic (IncrementalAlterConfigs), or
	// deletes the topic's override when value is nil.
	AlterTopicConfig(ctx context.Context, topic, key string, value *string) error
}

// Preparer is optionally implemented by an Admin: Run calls Prepare once
// before the first pass when enforcing (the Sarama adapter creates the
// ownership topic there, so the first protection does not wait for it).
// A failure is logged; the adapter retries on first use.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Enforcer is the reconcile loop.
type Enforcer struct {
	cfg    Config
	policy Policy
	loc    *time.Location
	hour   int
	minute int
	logger *slog.Logger
	m      *metrics
	src    SnapshotSource
	admin  Admin
	clock  Clock
	dryRun bool
	// instance: this agent's name in its record (Deps.Instance).
	instance string

	// State below is owned by the single worker (Run / Reconcile).
	lastScheduled time.Time
	// prot: protection records, leases and what was set unrecorded.
	prot   protectionState
	cordon cordonState
	// brokerID: the broker this agent acts for and keeps its record
	// under (learnBrokerID; -1 until known); BrokerID() reads its copy
	// in guarded.
	brokerID      int32
	windowStart   time.Time
	windowActions int
	heldReasons   []BlockReason
	lastErr       string
	lastErrLog    time.Time
	// Observe mode: what enforcing would have set, so the dry run reports
	// the plan enforcement would follow instead of the same one each pass.
	virtualLSO map[TopicPartition]int64
	// fractionPass: when each partition last had a purge_fraction pass.
	fractionPass map[TopicPartition]time.Time
	// eligibleSince: when each eligible tiered segment was first seen
	// (pending.go).
	eligibleSince map[SegmentKey]time.Time
	// bands: each log dir's band at the last pass, to log changes.
	bands map[string]string
	// gate: whether a pass a new snapshot triggers can be skipped.
	gate passGate

	// Evidence for destructive actions (spec R7; evidence.go).
	evidence Evidence
	features []rights.Feature // the rights checked
	ev       evidenceState
	guarded  atomic.Int32                      // brokerID, for BrokerID()
	offline  atomic.Pointer[map[string]string] // OfflineLogDirs()
}

// Deps are what the enforcer observes and acts through.
type Deps struct {
	Snapshots SnapshotSource
	Admin     Admin
	// Clock tells the time; a MonotonicClock (SystemClock) also lets the
	// clock gate see the wall clock jump (spec R7.5).
	Clock Clock
	// Evidence reads what the cluster says before destructive actions
	// (spec R7.1, rights). Nil only without a cluster (offline): the
	// enforcer then plans and reports, every action fails as not
	// connected, and identity and rights are not checked (Observed.Offline).
	Evidence Evidence
	// Features are the rights features of the guard's other parts
	// (admission), checked and reported with the enforcer's own.
	Features []rights.Feature
	// Instance names this agent in its record (spec R8.8): a record of
	// its broker written by another instance, with a live lease, makes it
	// stand by. Default: the host name (a container restarted in its pod
	// goes on at once; another install, or a pod scheduled anew, waits a
	// lease).
	Instance string
}

// New builds an enforcer. It performs no I/O.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer, deps Deps) (*Enforcer, error) {
	src, admin, clock := deps.Snapshots, deps.Admin, deps.Clock
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	profile, err := ProfileFor(cfg)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(cfg.Schedule.Timezone)
	if err != nil {
		return nil, fmt.Errorf("enforcer.schedule.timezone: %w", err)
	}
	hour, minute, err := parseClock(cfg.Schedule.Time)
	if err != nil {
		return nil, fmt.Errorf("enforcer.schedule.time: %w", err)
	}
	if src == nil || admin == nil || clock == nil || logger == nil || reg == nil {
		return nil, errors.New("enforcer: logger, registerer, snapshot source, admin and clock are required")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register enforcer metrics: %w", err)
	}
	m.initActionSeries(profile)
	gates := Gates{ConfigMaxAge: cfg.Evidence.ConfigMaxAge, FutureTolerance: cfg.Evidence.FutureTolerance,
		ProtectFeature: protectFeature(profile, cfg.Protection.Strategy), Purge: cfg.Purge}
	e := &Enforcer{
		cfg: cfg, policy: Policy{Profile: profile, HysteresisPoints: cfg.HysteresisPoints, Gates: gates},
		loc: loc, hour: hour, minute: minute,
		logger: logger.With("component", "enforcer"), m: m, src: src, admin: admin, clock: clock,
		dryRun: !cfg.Enabled, brokerID: cfg.configuredBroker(),
		prot: protectionState{unrecorded: map[ACL]bool{}, leases: map[int32]leaseSeen{}, gone: map[int32]time.Duration{}, selfGone: -1,
			started: clock.Now()},
		lastScheduled: clock.Now(),
		bands:         map[string]string{},
		virtualLSO:    map[TopicPartition]int64{},
		fractionPass:  map[TopicPartition]time.Time{},
		evidence:      deps.Evidence,
		features:      enforcerFeatures(profile, cfg.Protection.Strategy, cfg.Relief, deps.Features),
		ev:            evidenceState{node: -1},
		instance:      deps.Instance,
	}
	if e.instance == "" {
		e.instance, _ = os.Hostname()
	}
	e.guarded.Store(e.brokerID)
	if e.dryRun {
		m.enabled.Set(0)
	} else {
		m.enabled.Set(1)
	}
	return e, nil
}

// Run reconciles on every new snapshot and every Interval until ctx ends.
func (e *Enforcer) Run(ctx context.Context) error {
	ticker := time.NewTicker(e.cfg.Interval)
	defer ticker.Stop()
	e.logger.Info("enforcer started", "dry_run", e.dryRun, "profile", e.policy.Profile.Name,
		"strategy", e.cfg.Protection.Strategy, "interval", e.cfg.Interval, "lease", e.cfg.Protection.LeaseDuration,
		"allow_everyone_if_no_acl_found", e.cfg.Protection.AllowEveryoneIfNoACLFound, "ownership_topic", e.cfg.OwnershipTopic)
	if p, ok := e.admin.(Preparer); ok && !e.dryRun {
		if err := p.Prepare(ctx); err != nil && ctx.Err() == nil {
			e.logger.Warn("prepare admin", "err", err)
		}
	}
	// Nothing to decide before the agent's first full scan: waiting for it
	// keeps a start-up race from being reported as a stale snapshot. A
	// source that never publishes is still reported, at the first tick.
	if e.src.Snapshot() == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-e.src.Updated():
		case <-ticker.C:
		}
	}
	for {
		if err := e.Reconcile(ctx); err != nil && ctx.Err() == nil {
			e.logError(err)
		}
	wait:
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-e.src.Updated():
			if e.gate.skip(e.policy, e.src.Snapshot(), len(e.ev.checks) > 0) {
				goto wait // only usage moved, within its band (passgate.go)
			}
		}
	}
}

func (e *Enforcer) logError(err error) {
	now := time.Now()
	if err.Error() != e.lastErr || now.Sub(e.lastErrLog) > time.Minute {
		e.logger.Warn("reconcile failed", "err", err)
		e.lastErr, e.lastErrLog = err.Error(), now
	}
}

// scheduleDue reports whether the daily window has come since the last
// scheduled run.
func (e *Enforcer) scheduleDue(now time.Time) bool {
	l := now.In(e.loc)
	at := time.Date(l.Year(), l.Month(), l.Day(), e.hour, e.minute, 0, 0, e.loc)
	if at.After(l) {
		at = at.AddDate(0, 0, -1)
	}
	return at.After(e.lastScheduled)
}

// Reconcile runs one pass, in the order of the package doc: observe once,
// Desired once, PlanActions once, then apply (or, in observe mode, log and
// count the plan). A read that fails holds destructive actions back for
// the pass (broker_unreachable) and is returned with any apply error.
func (e *Enforcer) Reconcile(ctx context.Context) (err error) {
	start := time.Now()
	result := ReconcileOK
	defer func() {
		if err != nil {
			result = ReconcileError
		}
		e.m.reconciles.WithLabelValues(string(result)).Inc()
		e.m.duration.Observe(time.Since(start).Seconds())
	}()

	o, phases, readErr := e.observe(ctx)
	observed := time.Since(start)
	e.gate.record(e.policy, nil, false) // until this pass is known settled
	if o.Snapshot == nil {
		e.setBlocked([]BlockReason{BlockSnapshotStale}, nil, nil)
		result = ReconcileBlocked
		return nil
	}
	goals := Desired(e.policy, o)
	calm := e.calm(o, goals)
	e.prot.calmSeen = e.prot.calmSeen || calm
	plan := PlanActions(o, goals)
	if e.report(goals, plan, o) {
		result = ReconcileBlocked
	}
	if e.prot.standby {
		// Another instance acts for this broker (spec R8.8): this one
		// changes nothing, lifts nothing, deletes nothing but what its
		// own process set unrecorded and no longer wants.
		if o.Protection != nil {
			readErr = errors.Join(readErr, e.releaseUnrecordedStandingBy(ctx, o.Protection, plan.Protection))
		}
		return readErr
	}
	t := time.Now()
	applyErr := e.apply(ctx, plan, goals, o)
	if o.Protection != nil && !e.prot.dirty && !calm {
		e.prot.calmSeen = false // the record written has answered it
	}
	if !plan.Empty() {
		e.logger.Debug("reconcile pass", append(phases, "observe", observed, "plan", t.Sub(start)-observed, "apply", time.Since(t))...)
	}
	if scheduledRan(goals, o) {
		e.lastScheduled = o.Now
	}
	err = errors.Join(readErr, applyErr)
	e.gate.record(e.policy, o.Snapshot, err == nil && plan.Empty())
	return err
}

// calm reports whether the pass sees this agent's log dirs calm: a fresh
// snapshot, and no log dir of its own under protection or above the
// restore bound of lowered local retention (the end of an episode, for
// an operator's lift: answerLift).
func (e *Enforcer) calm(o Observed, goals []DirGoal) bool {
	if o.Stale || len(goals) == 0 {
		return false
	}
	for _, g := range goals {
		if !g.Foreign && (g.Protect || g.Usage >= e.policy.lowerFrom()) {
			return false
		}
	}
	return true
}

// scheduledRan: the schedule was due and no log dir that would run it was
// blocked (its deletions by retention time included).
func scheduledRan(goals []DirGoal, o Observed) bool {
	if !o.ScheduleDue {
		return false
	}
	for _, g := range goals {
		if g.Free.Action == ActionScheduled && (len(g.Blocked) > 0 || len(g.TimeBlocked) > 0) {
			return false
		}
	}
	return true
}

// report sets the band, blocked and held-topics gauges and logs band
// changes and changes in what is held back. It reports whether the pass
// is blocked: any reason holds something back (a stale snapshot, a log
// dir's or a topic's hold, a limit on purges).
func (e *Enforcer) report(goals []DirGoal, plan Plan, o Observed) (blocked bool) {
	e.dropGoneDirs(goals)
	for _, g := range goals {
		for _, b := range e.policy.Profile.Bands {
			v := 0.0
			if b.Name == g.Band.Name {
				v = 1
			}
			e.m.band.WithLabelValues(g.LogDir, b.Name).Set(v)
		}
		if prev, ok := e.bands[g.LogDir]; !ok || prev != g.Band.Name {
			attrs := []any{"log_dir", g.LogDir, "band", g.Band.Name, "from_band", prev, "action", g.Band.Action,
				"usage_percent", math.Round(1000*g.Usage) / 10,
				eventAttr(BandChange{LogDir: g.LogDir, Band: g.Band, FromBand: prev, Usage: g.Usage})}
			if g.Band.Target > 0 {
				attrs = append(attrs, "target_percent", math.Round(1000*g.Band.Target)/10)
			}
			e.logger.Info("band changed", attrs...)
			e.bands[g.LogDir] = g.Band.Name
		}
	}
	var reasons []BlockReason
	var dirs []string
	add := func(rs []BlockReason) {
		for _, r := range rs {
			if !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	for _, g := range goals {
		held := len(reasons)
		add(g.Blocked)
		add(g.TimeBlocked)
		add(g.Purge.Reasons)
		for _, rs := range g.TimeHeldTopics {
			add(rs)
		}
		if len(reasons) > held || len(g.Blocked) > 0 {
			dirs = append(dirs, g.LogDir)
		}
		if !g.Foreign {
			e.m.ev.setHeldTopics(g)
		}
	}
	var topics []string // held topics, for the log line
	for _, h := range plan.HeldTopics {
		add(h.Reasons)
		if !slices.Contains(topics, h.Topic) {
			topics = append(topics, h.Topic)
		}
	}
	if o.Stale {
		add([]BlockReason{BlockSnapshotStale})
	}
	e.setBlocked(reasons, dirs, topics)
	return len(reasons) > 0
}

// setBlocked sets enforcer_blocked and logs each change of the reasons,
// naming the log dirs and (up to ten) topics held back.
func (e *Enforcer) setBlocked(reasons []BlockReason, dirs, topics []string) {
	slices.Sort(reasons)
	for _, r := range blockReasons() {
		if r == BlockLeaseFenced || r == BlockPurgeHistory {
			continue // decided in apply, after the pass's record writes (recordPurgesAhead)
		}
		v := 0.0
		if slices.Contains(reasons, r) {
			v = 1
		}
		e.m.blocked.WithLabelValues(string(r)).Set(v)
	}
	if slices.Equal(reasons, e.heldReasons) {
		return
	}
	if len(reasons) > 0 {
		slices.Sort(topics)
		if len(topics) > 10 {
			topics = append(topics[:10], fmt.Sprintf("... %d more", len(topics)-10))
		}
		level := slog.LevelWarn
		if slices.Equal(reasons, []BlockReason{BlockMoveInFlight}) {
			// Purges waiting for a move out of the log dir: the ladder
			// working as meant (R3.8), not a problem.
			level = slog.LevelInfo
		}
		e.logger.Log(context.Background(), level, "destructive actions held back", "reasons", reasons, "log_dirs", dirs, "topics", topics)
	} else {
		e.logger.Info("destructive actions allowed again")
	}
	e.heldReasons = reasons
}

// dropGoneDirs removes the per-log-dir series of log dirs that left the
// config or the glob (a kubelet pod path after a reschedule): a stale
// write_protection_active 1 would keep an alert firing for good.
func (e *Enforcer) dropGoneDirs(goals []DirGoal) {
	if len(goals) == 0 {
		return
	}
	now := make(map[string]bool, len(goals))
	for _, g := range goals {
		now[g.LogDir] = true
	}
	for d := range e.bands {
		if now[d] {
			continue
		}
		gone := prometheus.Labels{"log_dir": d}
		e.m.band.DeletePartialMatch(gone)
		e.m.prot.active.DeletePartialMatch(gone)
		e.m.prot.wanted.DeletePartialMatch(gone)
		delete(e.bands, d)
		e.logger.Info("log dir gone: its series are removed", "log_dir", d)
	}
}
