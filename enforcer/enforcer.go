// Package enforcer keeps a broker's log dirs inside their usage bands
// (spec R3, R4): it deletes eligible segments on schedule or periodically,
// purges the oldest segments when the disk fills, and switches write
// protection on and off, all through the Kafka admin API. It is a
// level-triggered reconcile loop: observe -> Desired (pure) -> PlanActions
// (pure) -> apply. Observe mode (the default) computes, logs and counts
// the same plan and performs nothing.
package enforcer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
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

// Admin is the Kafka admin API the enforcer uses. Implemented by
// internal/kafkaadmin. Every method checks every per-item error code.
type Admin interface {
	// Offsets returns the broker's log start offset and high watermark.
	Offsets(ctx context.Context, parts []TopicPartition) (map[TopicPartition]Offsets, error)
	// DeleteRecords moves log start offsets of one topic's partitions; the
	// map holds each partition's own result (nil: done).
	DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error)
	// TopicACLs lists every ACL on topic resources.
	TopicACLs(ctx context.Context) ([]ACL, error)
	CreateACLs(ctx context.Context, acls []ACL) error
	DeleteACLs(ctx context.Context, acls []ACL) error
	// DefaultProducerQuota is the default client entity's
	// producer_byte_rate (0: none).
	DefaultProducerQuota(ctx context.Context) (int64, error)
	SetDefaultProducerQuota(ctx context.Context, rate int64) error
	RemoveDefaultProducerQuota(ctx context.Context) error
	// LoadOwnership reads every agent's record from the ownership topic.
	LoadOwnership(ctx context.Context) (map[int32]Ownership, error)
	// StoreOwnership writes this agent's record (keyed by broker id).
	StoreOwnership(ctx context.Context, o Ownership) error
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
	cfg     Config
	policy  Policy
	loc     *time.Location
	hour    int
	minute  int
	logger  *slog.Logger
	m       *metrics
	src     SnapshotSource
	admin   Admin
	clock   Clock
	dryRun  bool
	brokerF *int32

	// State below is owned by the single worker (Run / Reconcile).
	lastScheduled time.Time
	ownership     map[int32]Ownership // nil until loaded
	// ownershipLoaded: when the records were last read.
	ownershipLoaded time.Time
	brokerID        int32
	windowStart     time.Time
	windowActions   int
	heldReasons     []BlockReason
	lastErr         string
	lastErrLog      time.Time
	// Observe mode: what enforcing would have set, so the dry run reports
	// the plan enforcement would follow instead of the same one each pass.
	virtualLSO map[TopicPartition]int64
	// fractionPass: when each partition last had a purge_fraction pass.
	fractionPass map[TopicPartition]time.Time
}

// New builds an enforcer. It performs no I/O.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer, src SnapshotSource, admin Admin, clock Clock) (*Enforcer, error) {
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
	e := &Enforcer{
		cfg: cfg, policy: Policy{Profile: profile, HysteresisPoints: cfg.HysteresisPoints},
		loc: loc, hour: hour, minute: minute,
		logger: logger.With("component", "enforcer"), m: m, src: src, admin: admin, clock: clock,
		dryRun: !cfg.Enabled, brokerF: cfg.BrokerID, brokerID: -1,
		lastScheduled: clock.Now(),
		virtualLSO:    map[TopicPartition]int64{},
		fractionPass:  map[TopicPartition]time.Time{},
	}
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
		"strategy", e.cfg.Protection.Strategy, "interval", e.cfg.Interval)
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
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-e.src.Updated():
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

// Reconcile runs one pass.
func (e *Enforcer) Reconcile(ctx context.Context) (err error) {
	start := time.Now()
	result := ResultOK
	defer func() {
		if err != nil {
			result = ResultError
		}
		e.m.reconciles.WithLabelValues(result).Inc()
		e.m.duration.Observe(time.Since(start).Seconds())
	}()

	now := e.clock.Now()
	snap := e.src.Snapshot()
	o := Observed{Now: now, Snapshot: snap, ScheduleDue: e.scheduleDue(now), FractionDone: map[TopicPartition]bool{}}
	for tp, at := range e.fractionPass {
		if now.Sub(at) < e.cfg.Interval && !now.Before(at) {
			o.FractionDone[tp] = true
		}
	}
	o.Stale = snap == nil || now.Sub(snap.Time) > e.cfg.StaleAfter
	if snap == nil {
		e.setBlocked([]BlockReason{BlockSnapshotStale}, nil)
		result = "blocked"
		return nil
	}
	e.learnBrokerID(snap)

	var errs []error
	var phases []any
	// Ownership: read at start, then at most once per Interval while
	// protection is relevant, and always before lifting (below). Switching
	// protection on uses the cached records: it must not wait for a read.
	mine := e.mine()
	o.Protected = dirSet(mine.LogDirs)
	goals := Desired(e.policy, o)
	loaded := false
	load := func() bool {
		t := time.Now()
		err := e.loadOwnership(ctx)
		phases = append(phases, "load_ownership", time.Since(t))
		if err != nil {
			errs = append(errs, err)
			o.BrokerUnreachable = true
			return false
		}
		e.ownershipLoaded, loaded = now, true
		mine = e.mine()
		o.Protected = dirSet(mine.LogDirs)
		goals = Desired(e.policy, o)
		return true
	}
	relevant := !mine.empty() || anyProtect(goals)
	if e.ownership == nil || (relevant && !anyNewProtect(goals, o.Protected) && (now.Sub(e.ownershipLoaded) >= e.cfg.Interval || now.Before(e.ownershipLoaded))) {
		load()
	}

	// Offsets from the broker for the log dirs that free space.
	if parts := freeingPartitions(snap, goals); len(parts) > 0 && !o.BrokerUnreachable {
		t := time.Now()
		offs, err := e.admin.Offsets(ctx, parts)
		phases = append(phases, "list_offsets", time.Since(t))
		if err != nil {
			errs = append(errs, fmt.Errorf("list offsets: %w", err))
			o.BrokerUnreachable = true
		} else {
			for tp, v := range e.virtualLSO {
				if cur, ok := offs[tp]; ok && v > cur.LogStart {
					cur.LogStart = v
					offs[tp] = cur
				}
			}
			o.Offsets = offs
		}
	}
	if o.BrokerUnreachable {
		goals = Desired(e.policy, o)
	}

	if e.ownership != nil && !o.BrokerUnreachable && (!mine.empty() || anyProtect(goals)) {
		t := time.Now()
		po, err := e.observeProtection(ctx)
		phases = append(phases, "observe_protection", time.Since(t))
		if err != nil {
			errs = append(errs, err)
			o.BrokerUnreachable = true
			goals = Desired(e.policy, o)
		} else {
			o.Protection = po
		}
	}

	plan := PlanActions(o, goals)
	if pp := plan.Protection; o.Protection != nil && !loaded && (len(pp.Delete) > 0 || pp.RemoveQuota || (pp.Record && len(pp.Create) == 0 && pp.SetQuota == 0)) {
		// Lifting or changing claims: decide on fresh records of the other
		// agents, so one never removes what another still claims.
		if load() {
			o.Protection.Ownership = e.ownership
			plan = PlanActions(o, goals)
		} else {
			plan.Protection = ProtectionPlan{Ownership: mine}
			o.Protection = nil
		}
	}
	e.reportGoals(snap, goals, o)
	if len(plan.Held) > 0 || o.Stale {
		result = "blocked"
	}
	if o.Protection == nil && e.ownership != nil {
		// Protection could not be observed: keep the gauge at what is recorded.
		plan.Protection = ProtectionPlan{Ownership: mine}
	}
	t := time.Now()
	if err := e.apply(ctx, plan, goals, o); err != nil {
		errs = append(errs, err)
	}
	if !plan.Empty() {
		phases = append(phases, "apply", time.Since(t))
		e.logger.Debug("reconcile pass", phases...)
	}
	if plan.Deletions != nil || o.ScheduleDue {
		if ran := scheduledRan(goals, o); ran {
			e.lastScheduled = now
		}
	}
	return errors.Join(errs...)
}

// scheduledRan: the schedule was due and no log dir that would run it was
// blocked.
func scheduledRan(goals []DirGoal, o Observed) bool {
	if !o.ScheduleDue {
		return false
	}
	for _, g := range goals {
		if g.Free.Action == ActionScheduled && len(g.Blocked) > 0 {
			return false
		}
	}
	return true
}

func (e *Enforcer) learnBrokerID(snap *agent.Snapshot) {
	if e.brokerF != nil && *e.brokerF >= 0 {
		e.brokerID = *e.brokerF
		return
	}
	for _, ld := range snap.LogDirs {
		if ld.BrokerID >= 0 {
			e.brokerID = ld.BrokerID
			return
		}
	}
}

func (e *Enforcer) mine() Ownership {
	if e.ownership == nil {
		return Ownership{BrokerID: e.brokerID}
	}
	o, ok := e.ownership[e.brokerID]
	if !ok {
		return Ownership{BrokerID: e.brokerID}
	}
	return o
}

func (e *Enforcer) loadOwnership(ctx context.Context) error {
	if e.dryRun && e.ownership != nil {
		// Observe mode never writes a record: keep the virtual one, refresh
		// the other agents'.
		own, err := e.admin.LoadOwnership(ctx)
		if err != nil {
			return fmt.Errorf("load ownership: %w", err)
		}
		own[e.brokerID] = e.ownership[e.brokerID]
		e.ownership = own
		return nil
	}
	own, err := e.admin.LoadOwnership(ctx)
	if err != nil {
		return fmt.Errorf("load ownership: %w", err)
	}
	if own == nil {
		own = map[int32]Ownership{}
	}
	e.ownership = own
	return nil
}

func (e *Enforcer) observeProtection(ctx context.Context) (*ProtectionObserved, error) {
	po := &ProtectionObserved{
		BrokerID: e.brokerID, Strategy: e.cfg.Protection.Strategy,
		Ownership: e.ownership, ProducerByteRate: e.cfg.Protection.ProducerByteRate,
	}
	mine := e.mine()
	if po.Strategy == StrategyACL || len(mine.ACLs) > 0 {
		acls, err := e.admin.TopicACLs(ctx)
		if err != nil {
			return nil, fmt.Errorf("list acls: %w", err)
		}
		po.ACLs = acls
		if e.dryRun {
			po.ACLs = append(po.ACLs, mine.ACLs...)
		}
	}
	if po.Strategy == StrategyQuota || mine.ProducerByteRate > 0 {
		rate, err := e.admin.DefaultProducerQuota(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe client quotas: %w", err)
		}
		po.DefaultProducerByteRate = rate
		if e.dryRun && mine.ProducerByteRate > 0 && rate == 0 {
			po.DefaultProducerByteRate = mine.ProducerByteRate
		}
	}
	return po, nil
}

// anyNewProtect: a log dir wants protection it does not have yet.
func anyNewProtect(goals []DirGoal, protected map[string]bool) bool {
	return slices.ContainsFunc(goals, func(g DirGoal) bool { return g.Protect && !protected[g.LogDir] })
}

func anyProtect(goals []DirGoal) bool {
	return slices.ContainsFunc(goals, func(g DirGoal) bool { return g.Protect })
}

func dirSet(dirs []string) map[string]bool {
	m := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	return m
}

// freeingPartitions lists the partitions of log dirs with an unblocked
// freeing goal.
func freeingPartitions(snap *agent.Snapshot, goals []DirGoal) []TopicPartition {
	var parts []TopicPartition
	for _, g := range goals {
		if g.Free.Action == "" || len(g.Blocked) > 0 {
			continue
		}
		for _, ld := range snap.LogDirs {
			if ld.Path != g.LogDir {
				continue
			}
			for _, p := range ld.Partitions {
				if p.Kind == agent.KindLive && len(p.Segments) > 1 && deletable(snap, p.Topic) {
					parts = append(parts, TopicPartition{p.Topic, p.Partition})
				}
			}
		}
	}
	return parts
}

// reportGoals sets the band and blocked gauges and logs changes in what is
// held back.
func (e *Enforcer) reportGoals(snap *agent.Snapshot, goals []DirGoal, o Observed) {
	for _, g := range goals {
		for _, b := range e.policy.Profile.Bands {
			v := 0.0
			if b.Name == g.Band.Name {
				v = 1
			}
			e.m.band.WithLabelValues(g.LogDir, b.Name).Set(v)
		}
	}
	var reasons []BlockReason
	var dirs []string
	for _, g := range goals {
		for _, r := range g.Blocked {
			if !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
		if len(g.Blocked) > 0 {
			dirs = append(dirs, g.LogDir)
		}
	}
	if o.Stale && !slices.Contains(reasons, BlockSnapshotStale) {
		reasons = append(reasons, BlockSnapshotStale)
	}
	e.setBlocked(reasons, dirs)
}

func (e *Enforcer) setBlocked(reasons []BlockReason, dirs []string) {
	slices.Sort(reasons)
	for _, r := range []BlockReason{BlockSnapshotStale, BlockBrokerUnreachable, BlockScanErrors} {
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
		e.logger.Warn("destructive actions held back", "reasons", reasons, "log_dirs", dirs)
	} else {
		e.logger.Info("destructive actions allowed again")
	}
	e.heldReasons = reasons
}
