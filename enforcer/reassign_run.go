package enforcer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// The reassign rung (spec R3.8, enforcer.relief.reassign): when the
// guarded broker's log dir is in the move band and no move within the
// broker relieves it, the agent moves replicas to brokers with room
// (relief.Compute: capacity first, then racks, leaders kept), throttled,
// the throttle a ledger claim (reassign_throttle.go); one reassignment in
// the cluster at a time.

// DefaultReassignBytesPerSecond is the default replication throttle.
const DefaultReassignBytesPerSecond = 50 << 20

// ReassignAdmin reads the cluster and runs reassignments
// (internal/kafkaadmin.Relief).
type ReassignAdmin interface {
	ThrottleConfigAdmin
	// ReadCluster reads brokers, partitions and log dir usage
	// (capacityBytes 0: DescribeLogDirs' total and usable bytes).
	ReadCluster(ctx context.Context, capacityBytes int64) (relief.Cluster, error)
	// AnyReassignment lists every partition Kafka is reassigning now.
	AnyReassignment(ctx context.Context) ([]string, error)
	// Reassigning returns which of parts ("topic/partition") Kafka is
	// reassigning now.
	Reassigning(ctx context.Context, parts []string) ([]string, error)
	// Reassign submits the plan (AlterPartitionReassignments) and reads
	// back that Kafka took every move.
	Reassign(ctx context.Context, plan relief.Plan) error
}

// ReassignerDeps are what the reassigner observes and acts through.
type ReassignerDeps struct {
	Snapshots SnapshotSource
	Admin     ReassignAdmin
	Store     ReassignStore
	Evidence  MoveEvidence
	// Growth: each log dir's net growth in bytes per second (nil: the
	// partitions' append rates).
	Growth   func(*agent.Snapshot) map[string]float64
	Clock    Clock
	Instance string
}

// Reasons the reassigner starts nothing for a log dir in the band
// (metric label values).
const (
	ReassignSkipBusy     = "busy"              // a reassignment runs in the cluster, or another owner holds a claim
	ReassignSkipThrottle = "throttle_in_place" // a replication throttle is set where the plan would set one
	ReassignSkipNoPlan   = "no_plan"           // no replica this broker follows fits another broker under the target
	ReassignSkipTooSlow  = "too_slow"          // at the throttle the copy would end after the purge band
)

// ReassignSkipReasons lists every skip reason, for metrics.
func ReassignSkipReasons() []string {
	return []string{ReassignSkipBusy, ReassignSkipThrottle, ReassignSkipNoPlan, ReassignSkipTooSlow}
}

// Reassigner is the cross-broker rung: each pass it releases its own
// claim once its partitions are reassigned, restores a peer's claim
// unrenewed for its lease once that claim's partitions are done, and,
// with enforcer.relief.reassign on, plans and starts a reassignment off
// its broker (observe mode: logs and counts what it would move).
type Reassigner struct {
	cfg    Config
	pol    MovePolicy
	rate   int64
	logger *slog.Logger
	d      ReassignerDeps
	dryRun bool
	m      *reassignMetrics

	// Owned by Run's goroutine.
	peers    map[string]peerSeen
	mono     monotonicReader // the clock the peers' leases run on
	lastSkip string
	// own: this process's claim as it last wrote or read it (nil: none,
	// or removed by this process).
	own *ledger.ReassignClaim
	// releasing: peers' claims this process took over to restore after
	// their lease (marked releasing under its instance), until it removed
	// them: no other process remembers them (restorePeers).
	releasing map[string]ledger.ReassignClaim
}

// NewReassigner builds the reassigner. It performs no I/O.
func NewReassigner(cfg Config, logger *slog.Logger, reg prometheus.Registerer, d ReassignerDeps) (*Reassigner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	profile, err := ProfileFor(cfg)
	if err != nil {
		return nil, err
	}
	if d.Snapshots == nil || d.Admin == nil || d.Store == nil || d.Evidence == nil || d.Clock == nil || logger == nil || reg == nil {
		return nil, errors.New("reassigner: logger, registerer, snapshots, admin, store, evidence and clock are required")
	}
	m, err := newReassignMetrics(reg)
	if err != nil {
		return nil, err
	}
	if d.Instance == "" {
		d.Instance, _ = os.Hostname()
	}
	rate := cfg.Relief.ReassignBytesPerSecond
	if rate == 0 {
		rate = DefaultReassignBytesPerSecond
	}
	return &Reassigner{cfg: cfg, pol: cfg.Relief.Move.policy(profile), rate: rate, logger: logger.With("component", "reassigner"),
		d: d, dryRun: !cfg.Enabled, m: m, peers: map[string]peerSeen{}, releasing: map[string]ledger.ReassignClaim{}}, nil
}

// Run runs a pass every Interval until ctx ends.
func (r *Reassigner) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	r.logger.Info("reassigner started", "reassign", r.cfg.Relief.Reassign, "dry_run", r.dryRun,
		"from", r.pol.From, "target", r.pol.Target, "purge_at", r.pol.PurgeAt, "throttle_bytes_per_second", r.rate)
	return runPasses(ctx, t, r.logger, "reassign pass failed", r.Pass)
}

// Pass runs one pass.
func (r *Reassigner) Pass(ctx context.Context) error {
	snap := r.d.Snapshots.Snapshot()
	if snap == nil {
		return nil
	}
	cid, err := r.d.Evidence.ClusterID(ctx)
	if err != nil {
		return fmt.Errorf("cluster id: %w", err)
	}
	conf := int32(-1)
	if r.cfg.BrokerID != nil {
		conf = *r.cfg.BrokerID
	}
	broker, err := agent.GuardedNode(snap.LogDirs, cid, conf)
	if err != nil {
		return err
	}
	recs, err := r.d.Store.LoadRecords(ctx)
	switch {
	case err != nil && errors.Is(err, ErrLedgerMissing) && (r.dryRun || !r.cfg.Relief.Reassign):
		recs = ledger.NewRecords() // no claim anywhere
	case err != nil:
		return fmt.Errorf("load records: %w", err) // nothing claimed or released on its word (spec R8.7)
	}
	owner := ledger.ReassignOwner(broker)
	mine, held := recs.Reassigns[owner]
	if mine, held, err = r.restoreOwn(ctx, mine, held); err != nil {
		return err
	}
	r.m.setClaim(mine, held)
	if held && mine.Instance != "" && mine.Instance != r.d.Instance && !r.expired(owner, mine) {
		return nil // another instance acts for this broker (spec R8.8)
	}
	peerErr := r.restorePeers(ctx, recs, owner)
	if held {
		return errors.Join(peerErr, r.tend(ctx, mine))
	}
	if !r.cfg.Relief.Reassign {
		r.skip("", "")
		return peerErr
	}
	return errors.Join(peerErr, r.consider(ctx, snap, broker, recs))
}

// tend renews this agent's claim while its partitions are being
// reassigned and releases it once none is.
func (r *Reassigner) tend(ctx context.Context, c ledger.ReassignClaim) error {
	busy, err := r.d.Admin.Reassigning(ctx, c.Partitions)
	if err != nil {
		return fmt.Errorf("list partition reassignments: %w", err)
	}
	r.m.inProgress.Set(float64(len(busy)))
	if len(busy) > 0 && !c.Releasing {
		if renewDue(r.d.Clock.Now(), c.Renewed, r.cfg.Protection.LeaseDuration) || c.Instance != r.d.Instance {
			c.Renewed, c.Instance = r.d.Clock.Now(), r.d.Instance
			return r.store(ctx, c)
		}
		return nil
	}
	if err := ReleaseReassign(ctx, r.d.Admin, r.d.Store, c, r.d.Instance); err != nil {
		r.m.restoreFailed.Set(1)
		return err
	}
	r.own = nil
	r.m.restoreFailed.Set(0)
	r.m.throttle.Set(0)
	if !c.Releasing {
		r.m.reassignments.WithLabelValues(ReassignResultFinished).Add(float64(len(c.Partitions)))
	}
	r.logger.Info("reassignment finished, replication throttle removed", "owner", c.Owner, "partitions", c.Partitions,
		"since", c.Since, "took", r.d.Clock.Now().Sub(c.Since).Round(time.Second))
	return nil
}

// consider plans a reassignment off the broker and, enforcing, starts it.
func (r *Reassigner) consider(ctx context.Context, snap *agent.Snapshot, broker int32, recs Records) error {
	dir, ok, err := r.inBand(ctx, snap, broker)
	if err != nil || !ok {
		r.skip("", "")
		return err
	}
	if others := otherClaims(recs, ledger.ReassignOwner(broker)); len(others) > 0 {
		r.skip(ReassignSkipBusy, "another reassignment holds a replication throttle claim: "+strings.Join(others, ", "))
		return nil
	}
	if busy, err := r.d.Admin.AnyReassignment(ctx); err != nil {
		return fmt.Errorf("list partition reassignments: %w", err)
	} else if len(busy) > 0 {
		r.skip(ReassignSkipBusy, fmt.Sprintf("Kafka is reassigning %d partitions (%s)", len(busy), busy[0]))
		return nil
	}
	cluster, err := r.d.Admin.ReadCluster(ctx, 0)
	if err != nil {
		return fmt.Errorf("read the cluster: %w", err)
	}
	plan, reason, why := r.plan(cluster, broker, dir)
	if reason != "" {
		r.skip(reason, why)
		return nil
	}
	entries := ReassignEntries(plan, r.rate)
	if err := CheckNoReplicationThrottle(ctx, r.d.Admin, entries); err != nil {
		if errors.Is(err, ErrReplicationThrottleInPlace) {
			r.skip(ReassignSkipThrottle, err.Error())
			return nil
		}
		return err
	}
	r.skip("", "")
	if r.dryRun {
		for _, m := range plan.Moves {
			r.logger.Info("would reassign replica", "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To,
				"bytes", m.Bytes, "replicas", m.Replicas, "new_replicas", m.NewReplicas, "log_dir", dir.Path)
			r.m.reassignments.WithLabelValues(ReassignResultPlanned).Inc()
		}
		return nil
	}
	return r.start(ctx, broker, plan, entries, dir)
}

// inBand returns the broker's log dir the rung relieves: online, in the
// move band and under the purge band, with no move within the broker
// planned from it or in flight.
func (r *Reassigner) inBand(ctx context.Context, snap *agent.Snapshot, broker int32) (MoveDir, bool, error) {
	if r.pol.PurgeAt == 0 {
		return MoveDir{}, false, nil
	}
	ev, err := r.d.Evidence.IdentityEvidence(ctx, broker)
	if err != nil {
		return MoveDir{}, false, fmt.Errorf("log dirs of broker %d: %w", broker, err)
	}
	growth := growthOf(snap)
	if r.d.Growth != nil {
		growth = r.d.Growth(snap)
	}
	dirs, _ := BrokerMoveDirs(snap, growth, ev)
	jbod := PlanMoves(dirs, r.pol)
	if !r.cfg.Relief.Move.MoveEnabled() {
		jbod.Moves = nil
	}
	best, found := MoveDir{}, false
	for _, d := range dirs {
		ratio := ratioOf(d)
		if !d.Online || ratio < r.pol.From || ratio >= r.pol.PurgeAt || d.Moving || d.IncomingBytes > 0 {
			continue
		}
		if slices.ContainsFunc(jbod.Moves, func(m Move) bool { return m.From == d.Path }) {
			continue // the move within the broker relieves it
		}
		if slices.Contains(jbod.Skipped, MoveSkip{d.Path, MoveSkipInFlight}) {
			continue
		}
		if !found || ratio > ratioOf(best) {
			best, found = d, true
		}
	}
	return best, found, nil
}

// plan computes the reassignment off broker (relief.Compute, the moves
// from broker only) and keeps the moves whose copy, at the throttle, one
// after the other, ends before dir reaches the purge band at its growth.
func (r *Reassigner) plan(c relief.Cluster, broker int32, dir MoveDir) (relief.Plan, string, string) {
	full := relief.Compute(c, relief.Config{Band: r.pol.From, Target: r.pol.Target, MaxMoves: r.pol.MaxMoves})
	var plan relief.Plan
	for _, m := range full.Moves {
		if m.From == broker {
			plan.Moves = append(plan.Moves, m)
		}
	}
	if len(plan.Moves) == 0 {
		why := full.Why[broker]
		if why == "" {
			why = fmt.Sprintf("broker %d is under %.0f%% as the cluster reports it", broker, 100*r.pol.From)
		}
		return plan, ReassignSkipNoPlan, why
	}
	left := math.Inf(1)
	if g := dir.GrowthBytesPerSecond; g > 0 {
		left = (r.pol.PurgeAt*float64(dir.CapacityBytes) - float64(dir.UsedBytes)) / g
	}
	var queued float64
	keep := 0
	for _, m := range plan.Moves {
		queued += float64(m.Bytes)
		if queued/float64(r.rate) > left {
			break
		}
		keep++
	}
	if keep == 0 {
		return relief.Plan{}, ReassignSkipTooSlow, fmt.Sprintf("%s at %s/s would end after %s reaches %.0f%% (in %s)",
			strconv.FormatInt(plan.Moves[0].Bytes, 10)+" bytes", strconv.FormatInt(r.rate, 10), dir.Path, 100*r.pol.PurgeAt,
			time.Duration(left*float64(time.Second)).Round(time.Second))
	}
	plan.Moves = plan.Moves[:keep]
	return plan, "", ""
}

// start records the claim, checks that no other owner claimed at the same
// time, sets the throttle and submits the reassignment.
func (r *Reassigner) start(ctx context.Context, broker int32, plan relief.Plan, entries []ledger.ThrottleEntry, dir MoveDir) error {
	now := r.d.Clock.Now()
	c := ledger.ReassignClaim{Owner: ledger.ReassignOwner(broker), Instance: r.d.Instance, Entries: entries,
		Since: now, Renewed: now, LeaseMs: r.cfg.Protection.LeaseDuration.Milliseconds()}
	for _, m := range plan.Moves {
		c.Partitions = append(c.Partitions, m.Topic+"/"+strconv.Itoa(int(m.Partition)))
		c.Moves = append(c.Moves, fmt.Sprintf("%s/%d %d -> %d", m.Topic, m.Partition, m.From, m.To))
	}
	// Recorded before any value is set.
	if err := r.store(ctx, c); err != nil {
		return fmt.Errorf("record replication throttle claim: %w", err)
	}
	// Two agents may claim at once: each reads the ledger after its own
	// write, and one that sees another owner's claim withdraws its own
	// (nothing set yet). Both may withdraw; the next passes try again.
	recs, err := r.d.Store.LoadRecords(ctx)
	if err != nil {
		return errors.Join(fmt.Errorf("read back the claim: %w", err), r.withdraw(ctx, c))
	}
	if others := otherClaims(recs, c.Owner); len(others) > 0 {
		r.skip(ReassignSkipBusy, "another reassignment claimed at the same time: "+strings.Join(others, ", "))
		return r.withdraw(ctx, c)
	}
	undo := func(err error) error {
		r.m.reassignments.WithLabelValues(ReassignResultFailed).Add(float64(len(plan.Moves)))
		rerr := ReleaseReassign(ctx, r.d.Admin, r.d.Store, c, r.d.Instance)
		if rerr == nil {
			r.own = nil
		}
		return errors.Join(err, rerr)
	}
	if err := SetReplicationThrottle(ctx, r.d.Admin, entries); err != nil {
		return undo(err)
	}
	r.m.throttle.Set(float64(r.rate))
	if err := r.d.Admin.Reassign(ctx, plan); err != nil {
		return undo(err)
	}
	for _, m := range plan.Moves {
		r.m.reassignments.WithLabelValues(ReassignResultStarted).Inc()
		r.logger.Info("reassignment started", "topic", m.Topic, "partition", m.Partition, "from", m.From, "to", m.To,
			"bytes", m.Bytes, "new_replicas", m.NewReplicas, "log_dir", dir.Path, "usage", ratioOf(dir),
			"throttle_bytes_per_second", r.rate)
	}
	return nil
}

// withdraw removes a claim whose values were never set.
func (r *Reassigner) withdraw(ctx context.Context, c ledger.ReassignClaim) error {
	if err := r.d.Store.DeleteReassign(ctx, c.Owner); err != nil {
		return fmt.Errorf("withdraw replication throttle claim: %w", err)
	}
	r.own = nil
	return nil
}

// restoreOwn keeps this process's claim in memory and writes it back when
// the ledger lost it (spec R8.7: the ownership topic was deleted, or
// reshaped and repaired, and created again empty): without it the values
// the claim set would stay once the reassignment ends, and no later plan
// starts while they do (throttle_in_place) (found by the simulation,
// classes ledger_delete and ledger_reshape with relief). A claim a peer
// or `protection lift` removed after restoring its values is written back
// too, and released once its partitions are done: a restore changes only
// the guard's values.
func (r *Reassigner) restoreOwn(ctx context.Context, mine ledger.ReassignClaim, held bool) (ledger.ReassignClaim, bool, error) {
	switch {
	case held && mine.Instance != "" && mine.Instance != r.d.Instance:
		r.own = nil // another instance's (spec R8.8)
	case held:
		r.own = &mine
	case r.own != nil && !r.dryRun:
		c := *r.own
		if err := r.d.Store.StoreReassign(ctx, c); err != nil {
			return c, false, fmt.Errorf("write back the replication throttle claim the ledger lost: %w", err)
		}
		r.logger.Warn("this agent's replication throttle claim is missing from the ownership topic: written again from memory",
			"owner", c.Owner, "partitions", c.Partitions, "entries", len(c.Entries))
		return c, true, nil
	}
	return mine, held, nil
}

// store records c and remembers it.
func (r *Reassigner) store(ctx context.Context, c ledger.ReassignClaim) error {
	if err := r.d.Store.StoreReassign(ctx, c); err != nil {
		return err
	}
	r.own = &c
	return nil
}

// restorePeers restores another owner's claim unrenewed for its lease on
// this agent's monotonic clock, once none of its partitions is being
// reassigned (lifting the throttle earlier would unthrottle the copy). A
// claim it marked releasing is its own to finish: once so marked, the
// owner's process no longer takes it for its own (restoreOwn), so when
// the ledger loses it (spec R8.7) this agent writes it back from memory
// and restores its values (found by the simulation, ledger_reshape seed
// 1863 with relief: a topic's throttled replicas left for good).
func (r *Reassigner) restorePeers(ctx context.Context, recs Records, self string) error {
	var errs []error
	if err := r.restoreReleasing(ctx, &recs, self); err != nil {
		errs = append(errs, err)
	}
	// In the owners' order, not the map's: the simulation replays a seed
	// only when the calls come in the same order every run.
	for _, o := range slices.Sorted(maps.Keys(recs.Reassigns)) {
		c := recs.Reassigns[o]
		if o == self || c.Undecodable || !r.expired(o, c) {
			continue
		}
		busy, err := r.d.Admin.Reassigning(ctx, c.Partitions)
		if err != nil {
			errs = append(errs, fmt.Errorf("list partition reassignments: %w", err))
			continue
		}
		if len(busy) > 0 {
			continue // the need goes on: restored once the moves are done
		}
		if !r.dryRun {
			m := c
			m.Releasing, m.Instance = true, r.d.Instance
			r.releasing[o] = m // remembered before the claim is marked
		}
		if err := ReleaseReassign(ctx, r.d.Admin, r.d.Store, c, r.d.Instance); err != nil {
			errs = append(errs, fmt.Errorf("restore %s's replication throttle after its lease: %w", o, err))
			continue
		}
		delete(r.peers, o)
		delete(r.releasing, o)
		r.logger.Info("replication throttle restored after the lease", "owner", o, "instance", c.Instance, "partitions", c.Partitions)
	}
	for o := range r.peers {
		if _, ok := recs.Reassigns[o]; !ok {
			delete(r.peers, o)
		}
	}
	return errors.Join(errs...)
}

// restoreReleasing writes back the peers' claims this process was
// releasing that the ledger lost, into recs too; a claim read back as
// another process's (renewed by its owner, or taken over by another
// peer) is forgotten.
func (r *Reassigner) restoreReleasing(ctx context.Context, recs *Records, self string) error {
	var errs []error
	for _, o := range slices.Sorted(maps.Keys(r.releasing)) {
		c := r.releasing[o]
		if cur, ok := recs.Reassigns[o]; ok {
			if o == self || !cur.Releasing || cur.Instance != c.Instance {
				delete(r.releasing, o)
			}
			continue
		}
		if err := r.d.Store.StoreReassign(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("write back %s's replication throttle claim the ledger lost: %w", o, err))
			continue
		}
		*recs = recs.Clone()
		recs.Reassigns[o] = c
		r.logger.Warn("a replication throttle claim this agent was restoring is missing from the ownership topic: written again from memory",
			"owner", o, "partitions", c.Partitions, "entries", len(c.Entries))
	}
	return errors.Join(errs...)
}

// expired reports whether owner's claim has gone unrenewed for its lease
// on this agent's monotonic clock (a renewal seen restarts the count;
// peer_lease.go).
func (r *Reassigner) expired(owner string, c ledger.ReassignClaim) bool {
	return leaseRunOut(r.peers, owner, c.Renewed, c.Lease(), r.mono.read(r.d.Clock))
}

// skip reports why nothing starts (reason "": something may), logging a
// new reason once.
func (r *Reassigner) skip(reason, why string) {
	for _, s := range ReassignSkipReasons() {
		v := 0.0
		if s == reason {
			v = 1
		}
		r.m.skipped.WithLabelValues(s).Set(v)
	}
	if reason != "" && reason != r.lastSkip {
		r.logger.Info("no reassignment", "reason", reason, "why", why)
	}
	r.lastSkip = reason
}

func otherClaims(recs Records, self string) []string {
	var out []string
	for o := range recs.Reassigns {
		if o != self {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// ReassignEntries are the config values a plan's replication throttle
// sets, as kafka-reassign-partitions.sh --throttle sets them: both rates
// on every broker the moves touch; on each topic the leader side every
// current replica, the follower side the new ones.
func ReassignEntries(plan relief.Plan, rate int64) []ledger.ThrottleEntry {
	var brokers []int32
	leader, follower := map[string][]string{}, map[string][]string{}
	var topics []string
	for _, m := range plan.Moves {
		if !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
		for _, id := range m.Replicas {
			if !slices.Contains(brokers, id) {
				brokers = append(brokers, id)
			}
			leader[m.Topic] = append(leader[m.Topic], fmt.Sprintf("%d:%d", m.Partition, id))
		}
		for _, id := range m.NewReplicas {
			if !slices.Contains(brokers, id) {
				brokers = append(brokers, id)
			}
			if !slices.Contains(m.Replicas, id) {
				follower[m.Topic] = append(follower[m.Topic], fmt.Sprintf("%d:%d", m.Partition, id))
			}
		}
	}
	slices.Sort(brokers)
	slices.Sort(topics)
	v := strconv.FormatInt(rate, 10)
	var out []ledger.ThrottleEntry
	for _, id := range brokers {
		name := strconv.Itoa(int(id))
		out = append(out, ledger.ThrottleEntry{Resource: ledger.ResourceBroker, Name: name, Key: LeaderThrottleRate, Value: v},
			ledger.ThrottleEntry{Resource: ledger.ResourceBroker, Name: name, Key: FollowerThrottleRate, Value: v})
	}
	for _, t := range topics {
		out = append(out, ledger.ThrottleEntry{Resource: ledger.ResourceTopic, Name: t, Key: LeaderThrottledReplicas, Value: strings.Join(leader[t], ",")})
		if f := follower[t]; len(f) > 0 {
			out = append(out, ledger.ThrottleEntry{Resource: ledger.ResourceTopic, Name: t, Key: FollowerThrottledReplicas, Value: strings.Join(f, ",")})
		}
	}
	return out
}
