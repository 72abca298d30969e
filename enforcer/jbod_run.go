package enforcer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// MoveAdmin moves partitions between the broker's log dirs and sets its
// throttle (internal/kafkaadmin.LogDirMoves).
type MoveAdmin interface {
	// Move asks broker to move each partition to the log dir To (the
	// broker's path); the answer is per "topic/partition".
	Move(ctx context.Context, broker int32, moves []Move) (map[string]error, error)
	// Throttle reads broker's own dynamic ThrottleKey (set false: none).
	Throttle(ctx context.Context, broker int32) (value string, set bool, err error)
	// SetThrottle sets it, or deletes the broker's value when set is false.
	SetThrottle(ctx context.Context, broker int32, value string, set bool) error
}

// ThrottleStore keeps the throttle claims in the ledger.
type ThrottleStore interface {
	LoadRecords(ctx context.Context) (Records, error)
	StoreThrottle(ctx context.Context, c ledger.ThrottleClaim) error
	DeleteThrottle(ctx context.Context, broker int32) error
}

// MoveEvidence is what identifies the broker's log dirs (spec R7.1).
type MoveEvidence interface {
	IdentityEvidence(ctx context.Context, node int32) (agent.IdentityEvidence, error)
	ClusterID(ctx context.Context) (string, error)
}

// ThrottleKey is the broker config the moves run under.
const ThrottleKey = "replica.alter.log.dirs.io.max.bytes.per.second"

// MoverDeps are what the mover observes and acts through.
type MoverDeps struct {
	Snapshots SnapshotSource
	Admin     MoveAdmin
	Store     ThrottleStore
	Evidence  MoveEvidence
	// Growth is each log dir's net growth in bytes per second
	// (forecast.Collector.Growth); nil: the partitions' append rates.
	Growth func(*agent.Snapshot) map[string]float64
	Clock  Clock
	// Instance names this agent in its claim.
	Instance string
}

// Mover is the move rung of the ladder (spec R3.8): each pass it plans
// moves within the guarded broker (PlanMoves) and, enforcing with
// enforcer.relief.move.enabled on, records its throttle claim, sets the
// throttle, and starts the moves; once no move is in flight and none is
// planned it puts the operator's throttle back and removes the claim. In
// observe mode it logs and counts what it would move. A peer's claim
// whose lease expired is restored by any mover.
type Mover struct {
	cfg    Config
	pol    MovePolicy
	logger *slog.Logger
	d      MoverDeps
	dryRun bool
	m      *moveMetrics

	// Owned by Run's goroutine.
	peers map[int32]peerSeen
	mono  monotonicReader   // the clock the peers' leases run on
	skips map[string]string // log dir: the reason last logged
	// own: this process's throttle claim as it last wrote or read it
	// (nil: none, or removed by this process).
	own *ledger.ThrottleClaim
}

// NewMover builds the mover. It performs no I/O.
func NewMover(cfg Config, logger *slog.Logger, reg prometheus.Registerer, d MoverDeps) (*Mover, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	profile, err := ProfileFor(cfg)
	if err != nil {
		return nil, err
	}
	if d.Snapshots == nil || d.Admin == nil || d.Store == nil || d.Evidence == nil || d.Clock == nil || logger == nil || reg == nil {
		return nil, errors.New("mover: logger, registerer, snapshots, admin, store, evidence and clock are required")
	}
	m, err := newMoveMetrics(reg)
	if err != nil {
		return nil, err
	}
	if d.Instance == "" {
		d.Instance, _ = os.Hostname()
	}
	return &Mover{cfg: cfg, pol: cfg.Relief.Move.policy(profile), logger: logger.With("component", "mover"), d: d,
		dryRun: !cfg.Enabled, m: m, peers: map[int32]peerSeen{}, skips: map[string]string{}}, nil
}

// Run runs a pass every Interval until ctx ends.
func (mv *Mover) Run(ctx context.Context) error {
	t := time.NewTicker(mv.cfg.Interval)
	defer t.Stop()
	mv.logger.Info("mover started", "move", mv.cfg.Relief.Move.MoveEnabled(), "dry_run", mv.dryRun,
		"from", mv.pol.From, "target", mv.pol.Target, "purge_at", mv.pol.PurgeAt, "throttle_bytes_per_second", mv.pol.RateBytesPerSecond)
	if p, ok := mv.d.Store.(Preparer); ok && !mv.dryRun {
		// The ownership topic, created before the first claim needs it.
		if err := p.Prepare(ctx); err != nil && ctx.Err() == nil {
			mv.logger.Warn("prepare ledger", "err", err)
		}
	}
	return runPasses(ctx, t, mv.logger, "move pass failed", mv.Pass)
}

// Pass runs one pass.
func (mv *Mover) Pass(ctx context.Context) error {
	p, err := mv.planPass(ctx)
	if p == nil || err != nil {
		return err
	}
	broker, plan := p.broker, p.plan
	recs, err := mv.d.Store.LoadRecords(ctx)
	switch {
	case err != nil && mv.dryRun && errors.Is(err, ErrLedgerMissing):
		// Observe mode on a cluster where the guard never wrote: no claim
		// to release, and the plan is reported all the same.
		recs = ledger.NewRecords()
	case err != nil:
		// Ledger lost or unreadable (spec R8.7): nothing is claimed, nothing
		// released on its word; moves need the claim first.
		return fmt.Errorf("load records: %w", err)
	}
	mine, held := recs.Throttles[broker]
	if mine, held, err = mv.restoreOwn(ctx, mine, held); err != nil {
		return err
	}
	mv.m.setClaim(mine, held)
	if held && mine.Instance != "" && mine.Instance != mv.d.Instance && !mv.expired(broker, mine) {
		// Another agent instance acts for this broker (spec R8.8): this
		// one stands by until that claim goes unrenewed for its lease.
		return nil
	}
	peerErr := mv.restorePeers(ctx, recs, broker)

	if mv.dryRun {
		mv.logWouldMove(plan)
		if held && p.inFlight == 0 {
			return errors.Join(peerErr, mv.release(ctx, mine))
		}
		return peerErr
	}
	switch {
	case len(plan.Moves) > 0:
		return errors.Join(peerErr, mv.start(ctx, p, mine, held))
	case held && p.inFlight == 0:
		return errors.Join(peerErr, mv.release(ctx, mine))
	case held && renewDue(mv.d.Clock.Now(), mine.Renewed, mv.cfg.Protection.LeaseDuration):
		mine.Renewed, mine.Instance = mv.d.Clock.Now(), mv.d.Instance
		return errors.Join(peerErr, mv.store(ctx, mine))
	}
	return peerErr
}

// restoreOwn keeps this process's claim in memory and writes it back when
// the ledger lost it (spec R8.7: the ownership topic was deleted, or
// reshaped and repaired, and created again empty): the claim names the
// operator's value to put back, which the broker no longer shows (the
// guard's value is in place). Without it the mover would leave the
// guard's throttle once the moves end, or, starting new moves, take its
// own value for the operator's (found by the simulation, classes
// ledger_delete and ledger_reshape with relief). A claim a peer or
// `protection lift` removed after restoring the value is written back
// too, and released when the moves end: its restore changes nothing then
// (a restore changes only the guard's value).
func (mv *Mover) restoreOwn(ctx context.Context, mine ledger.ThrottleClaim, held bool) (ledger.ThrottleClaim, bool, error) {
	switch {
	case held && mine.Instance != "" && mine.Instance != mv.d.Instance:
		mv.own = nil // another instance's (spec R8.8)
	case held:
		mv.own = &mine
	case mv.own != nil && !mv.dryRun:
		c := *mv.own
		if err := mv.d.Store.StoreThrottle(ctx, c); err != nil {
			return c, false, fmt.Errorf("write back the throttle claim the ledger lost: %w", err)
		}
		mv.logger.Warn("this agent's throttle claim is missing from the ownership topic: written again from memory",
			"broker_id", c.BrokerID, "key", c.Key, "value", c.Value, "previous", ledger.ShowValue(c.Orig))
		return c, true, nil
	}
	return mine, held, nil
}

// store records c and remembers it.
func (mv *Mover) store(ctx context.Context, c ledger.ThrottleClaim) error {
	if err := mv.d.Store.StoreThrottle(ctx, c); err != nil {
		return err
	}
	mv.own = &c
	return nil
}

// movePass is what a pass found and planned: the guarded broker, its
// confirmed log dirs' paths as the broker names them (by the agent's
// path), the moves in flight and the plan.
type movePass struct {
	broker     int32
	brokerPath map[string]string
	inFlight   int
	plan       MovePlan
}

// planPass reads the snapshot and the broker's log dirs (R7.1), plans the
// moves (none when moves are off) and reports them; nil without a
// snapshot.
func (mv *Mover) planPass(ctx context.Context) (*movePass, error) {
	snap := mv.d.Snapshots.Snapshot()
	if snap == nil {
		return nil, nil
	}
	cid, err := mv.d.Evidence.ClusterID(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster id: %w", err)
	}
	conf := int32(-1)
	if mv.cfg.BrokerID != nil {
		conf = *mv.cfg.BrokerID
	}
	broker, err := agent.GuardedNode(snap.LogDirs, cid, conf)
	if err != nil {
		return nil, err
	}
	ev, err := mv.d.Evidence.IdentityEvidence(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("log dirs of broker %d: %w", broker, err)
	}
	p := &movePass{broker: broker}
	movingBytes := map[string]int64{}
	for _, d := range ev.LogDirs {
		p.inFlight += len(d.Future)
	}
	for i := range snap.LogDirs {
		for _, part := range snap.LogDirs[i].Partitions {
			if part.Kind == agent.KindFuture {
				movingBytes[snap.LogDirs[i].Path] += part.DiskBytes
			}
		}
	}
	growth := growthOf(snap)
	if mv.d.Growth != nil {
		growth = mv.d.Growth(snap)
	}
	var dirs []MoveDir
	dirs, p.brokerPath = BrokerMoveDirs(snap, growth, ev)
	p.plan = PlanMoves(dirs, mv.pol)
	if !mv.cfg.Relief.Move.MoveEnabled() {
		p.plan.Moves = nil
	}
	mv.m.report(snap, p.plan, p.inFlight, movingBytes)
	mv.logSkips(p.plan)
	return p, nil
}

// logWouldMove logs and counts observe mode's planned moves.
func (mv *Mover) logWouldMove(plan MovePlan) {
	for _, m := range plan.Moves {
		mv.logger.Info("would move partition", "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To,
			"bytes", m.Bytes, "cold", m.Cold, "duration", plan.Duration.Round(time.Second),
			eventAttr(MoveDone{Move: m, DryRun: true, Duration: plan.Duration}))
		mv.m.moves.WithLabelValues(MoveResultPlanned).Inc()
	}
}

// start claims and sets the throttle (once per episode), then starts the
// plan's moves.
func (mv *Mover) start(ctx context.Context, p *movePass, mine ledger.ThrottleClaim, held bool) error {
	broker, plan := p.broker, p.plan
	now := mv.d.Clock.Now()
	rate := strconv.FormatInt(mv.pol.RateBytesPerSecond, 10)
	prev, set, err := mv.d.Admin.Throttle(ctx, broker)
	if err != nil {
		return err
	}
	switch {
	case !held:
		mine = ledger.ThrottleClaim{BrokerID: broker, Instance: mv.d.Instance, Key: ThrottleKey, Value: rate,
			Since: now, LeaseMs: mv.cfg.Protection.LeaseDuration.Milliseconds()}
		if set {
			mine.Orig = &prev
		}
	case !set || prev != mine.Value:
		// The value in place is not the guard's: an operator set it since
		// the claim was made (or the guard's set never took effect). It is
		// the value to give back at the end (found by the seeded
		// simulation: the recorded one would have replaced it).
		mine.Orig = nil
		if set {
			mine.Orig = &prev
		}
	}
	mine.Renewed, mine.Releasing, mine.Instance = now, false, mv.d.Instance
	mine.Moves = nil // not [:0]: the slice may be the ledger cache's
	for _, m := range plan.Moves {
		mine.Moves = append(mine.Moves, fmt.Sprintf("%s/%d %s -> %s", m.Topic, m.Partition, m.From, m.To))
	}
	// The claim is recorded before the value is set: a crash in between
	// leaves a claim whose restore finds the operator's value in place.
	if err := mv.store(ctx, mine); err != nil {
		return fmt.Errorf("record throttle claim: %w", err)
	}
	if err := mv.d.Admin.SetThrottle(ctx, broker, rate, true); err != nil {
		return err
	}
	mv.logger.Info("move throttle set", "broker_id", broker, "key", ThrottleKey, "value", rate, "previous", ledger.ShowValue(mine.Orig))
	return mv.startMoves(ctx, p)
}

// startMoves submits the plan's moves (AlterReplicaLogDirs, to the log
// dirs as the broker names them) and logs and counts each one's outcome.
func (mv *Mover) startMoves(ctx context.Context, p *movePass) error {
	plan := p.plan
	req := make([]Move, 0, len(plan.Moves))
	for _, m := range plan.Moves {
		m.To = p.brokerPath[m.To]
		req = append(req, m)
	}
	res, err := mv.d.Admin.Move(ctx, p.broker, req)
	if err != nil {
		mv.m.moves.WithLabelValues(MoveResultFailed).Add(float64(len(req)))
		return err
	}
	var errs []error
	for _, m := range plan.Moves {
		key := m.Topic + "/" + strconv.Itoa(int(m.Partition))
		if perr := res[key]; perr != nil {
			mv.m.moves.WithLabelValues(MoveResultRefused).Inc()
			mv.logger.Warn("move refused", "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To, "err", perr,
				eventAttr(MoveDone{Move: m, Duration: plan.Duration, Err: perr}))
			errs = append(errs, fmt.Errorf("move %s: %w", key, perr))
			continue
		}
		mv.m.moves.WithLabelValues(MoveResultStarted).Inc()
		mv.logger.Info("move started", "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To,
			"bytes", m.Bytes, "cold", m.Cold, "throttle_bytes_per_second", mv.pol.RateBytesPerSecond,
			eventAttr(MoveDone{Move: m, Duration: plan.Duration}))
	}
	return errors.Join(errs...)
}

// release puts the operator's throttle back (spec R8.5): the claim is
// marked releasing, the value restored and read back, then the claim is
// removed. A value in place that is not the guard's (an operator changed
// it meanwhile) is left as it is (spec R8.6).
func (mv *Mover) release(ctx context.Context, c ledger.ThrottleClaim) error {
	if !c.Releasing || c.Instance != mv.d.Instance {
		c.Releasing, c.Instance = true, mv.d.Instance
		if err := mv.store(ctx, c); err != nil {
			return fmt.Errorf("record throttle release: %w", err)
		}
	}
	if err := RestoreThrottle(ctx, mv.d.Admin, c); err != nil {
		mv.m.restoreFailed.Set(1)
		return err
	}
	mv.m.restoreFailed.Set(0)
	if err := mv.d.Store.DeleteThrottle(ctx, c.BrokerID); err != nil {
		return fmt.Errorf("remove throttle claim: %w", err)
	}
	mv.own = nil
	mv.logger.Info("move throttle restored", "broker_id", c.BrokerID, "key", c.Key, "value", ledger.ShowValue(c.Orig))
	return nil
}

// RestoreThrottle puts a claim's original value back and reads it back;
// a value in place other than the guard's is the operator's and stays.
// Used by the mover, by a peer after the lease and by `protection lift`.
func RestoreThrottle(ctx context.Context, a MoveAdmin, c ledger.ThrottleClaim) error {
	cur, set, err := a.Throttle(ctx, c.BrokerID)
	if err != nil {
		return err
	}
	if !set || cur != c.Value {
		return nil // restored already, or an operator's value since
	}
	v, s := "", false
	if c.Orig != nil {
		v, s = *c.Orig, true
	}
	if err := a.SetThrottle(ctx, c.BrokerID, v, s); err != nil {
		return err
	}
	cur, set, err = a.Throttle(ctx, c.BrokerID)
	if err != nil {
		return err
	}
	if set != s || cur != v {
		// The broker applies a config change from the metadata log: the
		// next pass reads it again.
		return fmt.Errorf("broker %d %s reads %q after the restore to %s", c.BrokerID, c.Key, cur, ledger.ShowValue(c.Orig))
	}
	return nil
}

// restorePeers restores the throttle of another broker whose claim was
// not renewed for its lease on this mover's monotonic clock.
func (mv *Mover) restorePeers(ctx context.Context, recs Records, self int32) error {
	var errs []error
	// In the brokers' order, not the map's: the simulation replays a seed
	// only when the calls come in the same order every run.
	for _, id := range slices.Sorted(maps.Keys(recs.Throttles)) {
		c := recs.Throttles[id]
		if id == self {
			continue
		}
		if !mv.expired(id, c) {
			continue
		}
		if err := RestoreThrottle(ctx, mv.d.Admin, c); err != nil {
			errs = append(errs, fmt.Errorf("restore broker %d throttle after its lease: %w", id, err))
			continue
		}
		if err := mv.d.Store.DeleteThrottle(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(mv.peers, id)
		mv.logger.Info("move throttle restored after the lease", "broker_id", id, "key", c.Key, "value", ledger.ShowValue(c.Orig))
	}
	for id := range mv.peers {
		if _, ok := recs.Throttles[id]; !ok {
			delete(mv.peers, id)
		}
	}
	return errors.Join(errs...)
}

// growthOf: each dir's live partitions' append rates.
func growthOf(snap *agent.Snapshot) map[string]float64 {
	out := map[string]float64{}
	for i := range snap.LogDirs {
		for _, p := range snap.LogDirs[i].Partitions {
			if p.Kind == agent.KindLive {
				out[snap.LogDirs[i].Path] += p.WriteRateBytesPerSecond
			}
		}
	}
	return out
}

// logSkips logs a log dir in the move band that gets no move, once per
// reason.
func (mv *Mover) logSkips(plan MovePlan) {
	now := map[string]string{}
	for _, sk := range plan.Skipped {
		now[sk.Dir] = sk.Reason
		if mv.skips[sk.Dir] != sk.Reason {
			mv.logger.Info("no move for log dir", "log_dir", sk.Dir, "reason", sk.Reason)
		}
	}
	mv.skips = now
}

// expired reports whether broker id's claim has gone unrenewed for its
// lease on this mover's monotonic clock (a renewal seen restarts the
// count; peer_lease.go).
func (mv *Mover) expired(id int32, c ledger.ThrottleClaim) bool {
	return leaseRunOut(mv.peers, id, c.Renewed, c.Lease(), mv.mono.read(mv.d.Clock))
}

// runPasses runs pass at once and then at every tick until ctx ends,
// logging a failure once until the pass succeeds or fails otherwise
// (the mover's and the reassigner's loop).
func runPasses(ctx context.Context, t *time.Ticker, logger *slog.Logger, msg string, pass func(context.Context) error) error {
	last := ""
	for {
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			if err.Error() != last {
				logger.Warn(msg, "err", err)
				last = err.Error()
			}
		} else {
			last = ""
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
