// Package simulation is a seeded, deterministic simulation of the guard
// on a simulated cluster (internal/simbroker): several agents (one per
// broker, and a duplicate for one broker), an operator and a fault
// injector, all driven from one goroutine on one virtual clock: no
// sleeps, no goroutines, the enforcer's Reconcile called directly. After
// every step it checks the invariants of the protection ledger (spec R7,
// R8; invariants.go). A seed replays exactly: every choice comes from one
// random source seeded by it. Models: FoundationDB's simulation testing,
// TigerBeetle's VOPR.
package simulation

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// Class is a kind of fault or of operator action the simulation can mix
// in.
type Class string

// Fault classes.
const (
	// CallBefore: an admin call fails before taking effect.
	CallBefore Class = "call_before"
	// CallAfter: an admin call takes effect and its reply is lost.
	CallAfter Class = "call_after"
	// CallTimeout: an admin call times out, before or after taking effect.
	CallTimeout Class = "call_timeout"
	// AgentKill: an agent dies at a step and restarts from nothing a few
	// steps later.
	AgentKill Class = "agent_kill"
	// LedgerDelete: the ownership topic is deleted.
	LedgerDelete Class = "ledger_delete"
	// LedgerReshape: the ownership topic is recreated with 3 partitions.
	LedgerReshape Class = "ledger_reshape"
	// LedgerGarbage: the ownership topic gets an undecodable record.
	LedgerGarbage Class = "ledger_garbage"
	// ClockJump: an agent's wall clock jumps forward or back.
	ClockJump Class = "clock_jump"
	// ControllerMove: the controller moves; the next writes fail once
	// (NOT_CONTROLLER).
	ControllerMove Class = "controller_move"
	// BrokerRestart: a broker is fenced for a few steps (its disk stays
	// full).
	BrokerRestart Class = "broker_restart"
	// Disk: log dirs fill into the bands (with bytes that are no
	// partition's) and drain (the workload).
	Disk Class = "disk"
	// Burst: producers' bursts fill log dirs with unexpired data the
	// guard may purge (within the caps, I4); it drains when faults stop.
	Burst Class = "burst"
	// Duplicate: a second agent for broker 1 (observe or enforcing mode).
	Duplicate Class = "duplicate_agent"
	// TieredShared: the tiered topic has partitions on every broker, so
	// several agents lower its (cluster-wide) local retention; without
	// it, one partition on broker 1.
	TieredShared Class = "tiered_shared"
	// QuotaRateChange: the quota strategy's producerByteRate changes
	// between restarts of an agent.
	QuotaRateChange Class = "quota_rate_change"
)

// Operator action classes.
const (
	// CordonFaults: the call faults (call_before, call_after,
	// call_timeout) also hit the cordon calls (LogDirCordons,
	// CordonLogDir, UncordonLogDir); without it those calls succeed.
	CordonFaults           Class = "cordon_faults"
	OperatorACLs           Class = "operator_acls"
	OperatorQuota          Class = "operator_quota"
	OperatorLocalRetention Class = "operator_local_retention"
	OperatorLift           Class = "operator_lift"
	OperatorResume         Class = "operator_resume"
	OperatorUninstall      Class = "operator_uninstall"
)

// AllClasses is every class the simulation knows.
var AllClasses = []Class{CallBefore, CallAfter, CallTimeout, AgentKill, LedgerDelete, LedgerReshape, LedgerGarbage,
	ClockJump, ControllerMove, BrokerRestart, Disk, Burst, Duplicate, QuotaRateChange, TieredShared,
	OperatorACLs, OperatorQuota, OperatorLocalRetention, OperatorLift, OperatorResume, OperatorUninstall, CordonFaults, Relief}

// DefaultMix is what go test runs: every class whose invariants hold on
// the ledger of today's code. The classes left out break an invariant
// there (KnownBroken says which and how); each joins the mix when the
// ledger's fix lands.
var DefaultMix = []Class{Disk, Burst, AgentKill, BrokerRestart, QuotaRateChange,
	OperatorQuota, OperatorLocalRetention, OperatorLift, OperatorResume, OperatorUninstall,
	CallBefore, CallAfter, CallTimeout, ControllerMove, ClockJump, CordonFaults, Relief, OperatorACLs, Duplicate,
	TieredShared, LedgerGarbage, LedgerReshape, LedgerDelete}

// Known is what a class left out of DefaultMix finds: the invariant it
// breaks with Disk (and Also) at Seed, and why.
type Known struct {
	Also      []Class
	Seed      int64
	Invariant string
	What      string
}

// KnownBroken lists the classes left out of DefaultMix (none today: every
// class runs in it; a class added to AllClasses goes into one or the
// other, TestEveryClassRunsOrIsKnownBroken).
var KnownBroken = map[Class]Known{}

// Options configure one run.
type Options struct {
	Seed int64
	// Steps with faults and operator actions (default 90); a quiet phase
	// follows (lease + three passes + one).
	Steps int
	// Classes mixed in (default DefaultMix).
	Classes []Class
	// Strategy: acl or quota; "" chooses by the seed.
	Strategy string
	// Log, when set, receives the enforcers' logs.
	Log *slog.Logger
}

// Failure is an invariant broken at a step.
type Failure struct {
	Seed      int64
	Step      int
	Invariant string
	Message   string
	// Trace is the last events before the failure.
	Trace []string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("seed %d, step %d: %s: %s", f.Seed, f.Step, f.Invariant, f.Message)
}

// Timing of the simulated world.
const (
	step     = 10 * time.Second // one step: one pass of every agent
	interval = 10 * time.Second
	lease    = 60 * time.Second
	capacity = 1 << 30
	producer = "User:producer"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sim is one run's world.
type sim struct {
	opts     Options
	rng      *rand.Rand
	classes  map[Class]bool
	c        *simbroker.Cluster
	now      time.Time
	step     int
	quiet    bool
	strategy string
	rate     int64 // the agents' producerByteRate
	agents   []*agentSim
	op       *operator
	trace    []string
	// lastFault: the step of the last injected fault (not broker
	// restarts or disk changes), per broker (-1: every broker).
	lastFault map[int32]int
	// liftedAt: the step of the operator's last lift.
	liftedAt int
	// protectSince: since when each broker's log dir is in the protect
	// band (-1: not).
	protectSince map[int32]int
	// fencedAtStart: the broker was fenced when its episode began.
	fencedAtStart map[int32]bool
	// failNext: methods that fail once (a controller move).
	failNext map[string]bool
	// callFaultP: the chance that an admin call fails.
	callFaultP  float64
	uninstalled bool
	// unattributed: bindings (and a quota) an agent set and died or
	// stopped before recording (spec R8.4): I1 waives them.
	unattributed map[ledger.ACL]bool
	// unattributedQuota: every such quota value (one agent's waiver
	// never replaces another's).
	unattributedQuota map[int64]bool
	// unattributedConfigs ("topic\x00value") and unattributedCordons (log
	// dirs): claims of records the ledger lost that no live agent
	// remembered (lostledger.go).
	unattributedConfigs map[string]bool
	unattributedCordons map[string]bool
	lost                lostLedger
	// forgottenPurges: for each broker, the time of a loss of the ledger
	// that took its purge history beyond any process's reach: I4 counts
	// its unexpired deletions after it only (lostledger.go).
	forgottenPurges map[int32]time.Time
	// pendingForget: forgetPurges waiting for the readers (lostledger.go).
	pendingForget map[int32]pendingForget
	// decodable: each broker's last decodable record seen (lostledger.go).
	decodable map[int32]ledger.Record
	// suppressed: the operator lifted the broker's protection in this
	// episode.
	suppressed map[int32]bool
	restartAt  []restart
	logger     *slog.Logger
	// relief: the relief class's world (relief.go; nil without it).
	relief *reliefSim
	// grid: what the I3 grid last held for (grid.go).
	grid gridKey
}

type agentSim struct {
	name     string
	broker   int32
	enabled  bool
	enf      *enforcer.Enforcer
	clock    *simClock
	src      *snapSource
	admin    *simbroker.ClusterAdmin
	tracked  *trackedAdmin
	deadTill int // dead while step < deadTill (-1: alive)
	since    int // the step it (re)started at
	rate     int64
	second   bool // the broker's second instance (duplicate_agent)
	// aheadTakeover: the agent took its broker's record over from
	// another instance while its clock was ahead (its snapshots stale to
	// it), since its clock last changed (standsBy).
	aheadTakeover bool
}

// startSkew is how long after the step's time the agent's process
// starts: a millisecond for a broker's second instance, none for the
// others. Two processes never start at the same instant, and the ledger
// tells a broker's processes apart by their start (Record.Started,
// Inherits): started on the step's time, agent-1 and agent-1b, started in
// one step (at the run's start, or both restarted), were one process to
// it (seed 6399: agent-1 wrote broker 1's record from memory over
// agent-1b's, which the ownership topic had lost, and the peers that
// remembered agent-1b's record took agent-1's for its own process's, so
// agent-1b's lowered local.retention.bytes was in no record).
func (a *agentSim) startSkew() time.Duration {
	if a.second {
		return time.Millisecond
	}
	return 0
}

type simClock struct {
	now    time.Time
	offset time.Duration
	start  time.Time
}

func (c *simClock) Now() time.Time         { return c.now.Add(c.offset) }
func (c *simClock) Elapsed() time.Duration { return c.now.Sub(c.start) }

type snapSource struct{ snap *agent.Snapshot }

func (s *snapSource) Snapshot() *agent.Snapshot { return s.snap }
func (s *snapSource) Updated() <-chan struct{}  { return nil }

// newRand is the run's one random source.
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x6b6467)) }

// Run runs one seed and returns the first invariant broken (nil: none).
func Run(opts Options) *Failure {
	if opts.Steps == 0 {
		opts.Steps = 90
	}
	if opts.Classes == nil {
		opts.Classes = DefaultMix
	}
	s := &sim{opts: opts, rng: newRand(opts.Seed), classes: map[Class]bool{},
		now: start, lastFault: map[int32]int{}, protectSince: map[int32]int{}, fencedAtStart: map[int32]bool{}, failNext: map[string]bool{}, liftedAt: -1000,
		suppressed: map[int32]bool{}, unattributedConfigs: map[string]bool{}, unattributedQuota: map[int64]bool{}, unattributedCordons: map[string]bool{},
		decodable: map[int32]ledger.Record{}}
	for _, c := range opts.Classes {
		s.classes[c] = true
	}
	s.logger = opts.Log
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.strategy = opts.Strategy
	if s.strategy == "" {
		s.strategy = []string{enforcer.StrategyACL, enforcer.StrategyQuota}[s.rng.IntN(2)]
	}
	s.rate = 1024
	s.build()
	return s.run()
}

func (s *sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("step %3d %s ", s.step, s.now.Sub(start)) + fmt.Sprintf(format, args...)
	s.trace = append(s.trace, line)
	if len(s.trace) > traceLen {
		s.trace = s.trace[len(s.trace)-traceLen:]
	}
}

// build makes the cluster (3 brokers, topics of every kind), warms it up
// with six hours of data, and starts the agents and the operator.
func (s *sim) build() {
	def := agent.DefaultTopicConfig()
	orders := def
	orders.RetentionMs = 24 * time.Hour.Milliseconds()
	orders.SegmentBytes = 8 << 20
	tiered := orders
	tiered.RemoteStorage, tiered.RetentionMs, tiered.LocalRetentionMs, tiered.LocalRetentionBytes = true, -1, -2, -2
	compact := orders
	compact.CleanupPolicy = agent.CleanupPolicy{Compact: true}
	bursts := orders
	bursts.RetentionMs = 2 * time.Hour.Milliseconds()
	schemas := def
	schemas.SegmentBytes = 1 << 20
	eventsParts := int32(1)
	if s.classes[TieredShared] {
		eventsParts = 3
	}
	cfg := simbroker.ClusterConfig{ClusterID: "sim-cluster", Brokers: []int32{1, 2, 3}, Capacity: capacity,
		SuperUsers: []string{"User:admin"}, AllowEveryoneIfNoACLFound: s.rng.IntN(2) == 0,
		Topics: []simbroker.ClusterTopic{
			{Name: "orders", Partitions: 6, Config: orders, SegmentBytes: orders.SegmentBytes, BytesPerSecond: 4 << 10},
			{Name: "events", Partitions: eventsParts, Config: tiered, SegmentBytes: tiered.SegmentBytes, BytesPerSecond: 4 << 10},
			{Name: "compacted", Partitions: 3, Config: compact, SegmentBytes: compact.SegmentBytes, BytesPerSecond: 1 << 10},
			{Name: "bursts", Partitions: 3, Config: bursts, SegmentBytes: bursts.SegmentBytes},
			{Name: "_schemas", Partitions: 1, Config: schemas, SegmentBytes: schemas.SegmentBytes, BytesPerSecond: 64},
		}}
	s.c = simbroker.NewCluster(cfg, start.Add(-6*time.Hour))
	for _, id := range []int32{1, 2, 3} {
		s.agents = append(s.agents, &agentSim{name: fmt.Sprintf("agent-%d", id), broker: id, enabled: true, deadTill: -1})
	}
	if s.classes[Duplicate] {
		s.agents = append(s.agents, &agentSim{name: "agent-1b", broker: 1, enabled: s.rng.IntN(2) == 0, deadTill: -1, second: true})
	}
	for _, a := range s.agents {
		s.startAgent(a)
	}
	s.op = newOperator(s)
	if !cfg.AllowEveryoneIfNoACLFound {
		// Without allow.everyone.if.no.acl.found the producer writes
		// through the operator's grants.
		var grants []ledger.ACL
		for _, t := range cfg.Topics {
			grants = append(grants, ledger.ACL{Topic: t.Name, Pattern: ledger.PatternLiteral, Principal: producer,
				Host: ledger.AnyHost, Operation: ledger.OpWrite, Permission: ledger.PermAllow})
		}
		if err := s.c.Admin(1, "operator").CreateACLs(context.Background(), grants); err != nil {
			panic(err)
		}
		for _, a := range grants {
			s.op.acls[a], s.op.base[a] = true, true
		}
		s.op.accessGen++
	}
	// The operator has cordoned broker 1's spare log dir (KIP-1066): its
	// watched log dir is then its last uncordoned one, never cordoned by
	// the guard; brokers 2 and 3 can be (I1, I2).
	if err := s.c.Admin(1, "operator").CordonLogDir(context.Background(), 1, s.c.SpareLogDir(1)); err != nil {
		panic(err)
	}
	for t := start.Add(-6 * time.Hour); t.Before(start); {
		t = t.Add(10 * time.Minute)
		s.c.Step(t, producer)
	}
	s.c.Faults.Hook = s.hook
}

// startAgent starts (or restarts) an agent from nothing: a new enforcer,
// no memory of earlier passes.
func (s *sim) startAgent(a *agentSim) {
	id := a.broker
	a.rate = s.rate
	// RecordTimeout bounds real time (a context deadline), not the
	// virtual clock: at its default of 500 ms a pass descheduled on a
	// loaded machine made simbroker calls fail on the deadline, and a seed
	// could fail in a sweep and pass alone. The lease is the largest it
	// may be; call timeouts are the fault injector's.
	cfg := enforcer.Config{Enabled: a.enabled, BrokerID: &id, Interval: interval,
		Protection: enforcer.ProtectionConfig{Strategy: s.strategy, LeaseDuration: lease, RecordTimeout: lease, ProducerByteRate: a.rate}}
	// The process starts (enforcer.New reads the clock) a little after
	// the step's time (startSkew); its passes run on the step's time.
	a.clock = &simClock{now: s.now.Add(a.startSkew()), start: s.now}
	a.aheadTakeover = false
	a.src = &snapSource{}
	a.admin = s.c.Admin(id, a.name)
	s.orphan(a) // a restart: what the dead process set unrecorded
	s.undecodableRestart(a)
	a.tracked = newTrackedAdmin(a.admin, a.name)
	enf, err := enforcer.New(cfg, s.logger.With("agent", a.name), prometheus.NewRegistry(),
		enforcer.Deps{Snapshots: a.src, Admin: a.tracked, Clock: a.clock, Evidence: a.admin, Instance: a.name})
	if err != nil {
		panic(fmt.Sprintf("simulation: enforcer config: %v", err))
	}
	a.enf, a.since, a.deadTill = enf, s.step, -1
	if a.enabled {
		// As Enforcer.Run does before the first pass.
		if err := a.admin.Prepare(context.Background()); err != nil {
			s.tracef("%s prepare: %v", a.name, err)
		}
	}
}

func (s *sim) run() *Failure {
	total := s.opts.Steps + int(lease/step) + 3 + 2
	for s.step = 0; s.step < total; s.step++ {
		if s.step == s.opts.Steps {
			s.enterQuiet()
		}
		s.now = s.now.Add(step)
		if !s.quiet {
			s.inject()
			s.op.act()
		} else {
			s.op.retry()
		}
		s.c.Step(s.now, producer)
		s.reliefStep()
		for _, a := range s.agents {
			s.pass(a)
		}
		s.settleLost()
		s.settlePendingForget()
		f := s.check()
		if f == nil {
			f = s.checkRelief()
		}
		if f != nil {
			f.Seed, f.Step, f.Trace = s.opts.Seed, s.step, s.trace
			return f
		}
	}
	return s.checkEnd()
}

func (s *sim) pass(a *agentSim) {
	if a.deadTill >= 0 || s.uninstalled {
		if a.deadTill >= 0 && s.step >= a.deadTill && !s.uninstalled {
			s.tracef("%s restarts", a.name)
			s.startAgent(a)
		} else {
			return
		}
	}
	a.clock.now = s.now
	a.src.snap = s.c.Snapshot(a.broker)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	before := len(s.c.Deletions)
	held := "" // the broker's record's instance before a pass with the clock ahead
	if a.clock.offset > 0 {
		if recs, err := s.c.Records(); err == nil {
			held = recs.Agents[a.broker].Instance
		}
	}
	if err := a.enf.Reconcile(ctx); err != nil {
		s.tracef("%s pass: %v", a.name, trim(err.Error()))
	}
	if held != "" && held != a.name {
		if recs, err := s.c.Records(); err == nil && recs.Agents[a.broker].Instance == a.name {
			s.tracef("%s takes broker %d's record over from %s, its clock %s ahead", a.name, a.broker, held, a.clock.offset)
			a.aheadTakeover = true
		}
	}
	// A read of a record naming this instance forgets the other's
	// renewal, as the enforcer does (followInstance): the other
	// instance's takeover with the stamp this one's record carried (a
	// record without claims keeps its lease; taking over renews none) is
	// stood by for a lease from the read that shows it (seed 69603).
	switch r := a.tracked.seen.Agents[a.broker]; {
	case r.Instance == a.name:
		a.tracked.otherRenewed = time.Time{}
	case !r.Renewed.Equal(a.tracked.otherRenewed):
		a.tracked.otherRenewed, a.tracked.otherReadAt = r.Renewed, s.step
	}
	var unexpired int64
	for _, d := range s.c.Deletions[before:] {
		unexpired += d.Unexpired
	}
	if unexpired > 0 {
		s.tracef("%s purged %d unexpired bytes", a.name, unexpired)
	}
	s.reliefPass(a)
}

func trim(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

// enterQuiet stops every fault: disks drain, brokers come back, dead
// agents restart, clocks agree again; the operator only finishes what it
// started.
func (s *sim) enterQuiet() {
	s.quiet = true
	s.tracef("quiet: faults stop")
	for _, id := range []int32{1, 2, 3} {
		s.c.SetFill(id, 0)
		s.c.SetAlive(id, true)
	}
	s.c.Expire("bursts")
	if s.c.OwnershipPartitions() > 1 {
		// A reshaped ledger stays lost until an operator repairs it: the
		// operator deletes it, the agents create it again and write their
		// records from memory.
		s.loseLedger()
		s.c.DeleteOwnershipTopic()
		s.tracef("operator: deletes the reshaped ownership topic")
	}
	for _, a := range s.agents {
		if a.deadTill >= 0 {
			a.deadTill = s.step
		}
		if a.clock != nil && a.clock.offset != 0 {
			a.clock.offset, a.aheadTakeover = 0, false
		}
	}
	clear(s.failNext)
}

// hook is the fault injector's answer for each admin call.
func (s *sim) hook(who, method string, phase simbroker.CallPhase) error {
	if s.quiet {
		return nil
	}
	if phase == simbroker.Before && s.failNext[method] {
		delete(s.failNext, method)
		s.faulted(who)
		s.tracef("%s %s fails: NOT_CONTROLLER", who, method)
		return fmt.Errorf("%s: %w: NOT_CONTROLLER", method, simbroker.ErrInjected)
	}
	if !s.classes[CordonFaults] && strings.Contains(method, "ordon") {
		return nil
	}
	if s.callFaultP == 0 || s.rng.Float64() >= s.callFaultP {
		return nil
	}
	var choices []Class
	if phase == simbroker.Before && s.classes[CallBefore] {
		choices = append(choices, CallBefore)
	}
	if phase == simbroker.After && s.classes[CallAfter] {
		choices = append(choices, CallAfter)
	}
	if s.classes[CallTimeout] {
		choices = append(choices, CallTimeout)
	}
	if len(choices) == 0 {
		return nil
	}
	c := choices[s.rng.IntN(len(choices))]
	s.faulted(who)
	s.tracef("%s %s fails %s (%s)", who, method, phase, c)
	return simbroker.Injected(method, phase, c == CallTimeout)
}

// faulted notes a fault that touched who's calls (all brokers when not an
// agent's).
func (s *sim) faulted(who string) {
	for _, a := range s.agents {
		if a.name == who {
			s.lastFault[a.broker] = s.step
			return
		}
	}
	s.lastFault[-1] = s.step
}

// inject draws this step's faults, always in the same order (a seed
// replays).
func (s *sim) inject() {
	s.injectCallWindow()
	s.injectDisk()
	s.injectAgentKill()
	s.injectLedgerFaults()
	s.injectClusterFaults()
}

// oneIn reports whether fault class c is on and drawn, one step in n.
func (s *sim) oneIn(c Class, n int) bool { return s.classes[c] && s.rng.IntN(n) == 0 }

// injectCallWindow opens or closes a window of failing calls: call
// faults come in windows, calm stretches and stormy ones.
func (s *sim) injectCallWindow() {
	r := s.rng
	if s.callFaultP > 0 && r.IntN(8) == 0 {
		s.callFaultP = 0
	} else if s.callFaultP == 0 && r.IntN(12) == 0 && (s.classes[CallBefore] || s.classes[CallAfter] || s.classes[CallTimeout]) {
		s.callFaultP = []float64{0.05, 0.2, 0.5}[r.IntN(3)]
	}
}

// injectDisk moves a broker's usage to a drawn level: a producer's burst
// or an outside fill.
func (s *sim) injectDisk() {
	r := s.rng
	if s.classes[Disk] {
		for _, id := range []int32{1, 2, 3} {
			if r.IntN(15) != 0 {
				continue
			}
			target := []float64{0.5, 0.8, 0.87, 0.92, 0.96, 0.99}[r.IntN(6)]
			if s.classes[Burst] && r.IntN(2) == 0 {
				// A producer's burst: unexpired data the guard may purge.
				if more := int64(target*capacity) - int64(s.c.Usage(id)*capacity); more > 0 {
					s.c.Burst(id, "bursts", more)
					s.tracef("burst of %d bytes on broker %d: %.0f%%", more, id, 100*s.c.Usage(id))
				}
				continue
			}
			used := int64(s.c.Usage(id)*capacity) - s.c.Fill(id)
			s.c.SetFill(id, int64(target*capacity)-used)
			s.tracef("disk of broker %d to %.0f%%", id, 100*target)
		}
	}
}

// injectAgentKill kills an agent for a while (and may change the
// producers' rate).
func (s *sim) injectAgentKill() {
	r := s.rng
	if s.oneIn(AgentKill, 25) {
		a := s.agents[r.IntN(len(s.agents))]
		if a.deadTill < 0 {
			a.deadTill = s.step + 1 + r.IntN(12)
			s.forget(a)
			s.tracef("%s killed until step %d", a.name, a.deadTill)
			s.lastFault[a.broker] = s.step
			if s.classes[QuotaRateChange] && r.IntN(2) == 0 {
				s.rate = []int64{1024, 2048, 4096}[r.IntN(3)]
				s.tracef("producerByteRate now %d", s.rate)
			}
		}
	}
}

// injectLedgerFaults deletes the ownership topic, recreates it with
// three partitions, or appends an undecodable record to it.
func (s *sim) injectLedgerFaults() {
	r := s.rng
	if s.oneIn(LedgerDelete, 60) {
		s.loseLedger()
		s.c.DeleteOwnershipTopic()
		s.tracef("ownership topic deleted")
		s.lastFault[-1] = s.step
	}
	if s.oneIn(LedgerReshape, 60) {
		s.loseLedger()
		s.c.RecreateOwnershipTopic(3)
		s.tracef("ownership topic recreated with 3 partitions")
		s.lastFault[-1] = s.step
	}
	if s.oneIn(LedgerGarbage, 60) {
		keys := []string{ledger.RecordKey(1), ledger.RecordKey(2), ledger.RecordKey(9), ledger.LiftKey(2)}
		k := keys[r.IntN(len(keys))]
		v := []byte("\x00garbage\xff")
		if r.IntN(2) == 0 {
			v = []byte(`{"v":99,"broker_id":9,"future":{"x":1}}`)
		}
		s.c.AppendOwnershipRecord(k, v)
		s.tracef("ownership topic got an undecodable record under %s", k)
		s.lastFault[-1] = s.step
	}
}

// injectClusterFaults jumps an agent's clock, moves the controller (the
// next admin calls fail), fences a broker for a few steps, and brings
// fenced brokers back when their time comes.
func (s *sim) injectClusterFaults() {
	r := s.rng
	if s.oneIn(ClockJump, 40) {
		a := s.agents[r.IntN(len(s.agents))]
		if a.clock != nil {
			d := []time.Duration{-10 * time.Minute, 5 * time.Minute, 2 * time.Hour, 0}[r.IntN(4)]
			a.clock.offset, a.aheadTakeover = d, false
			s.tracef("%s clock offset now %s", a.name, d)
			s.lastFault[a.broker] = s.step
		}
	}
	if s.oneIn(ControllerMove, 30) {
		s.c.MoveController()
		for _, m := range []string{"CreateACLs", "DeleteACLs", "SetDefaultProducerQuota", "RemoveDefaultProducerQuota", "AlterTopicConfig"} {
			s.failNext[m] = true
		}
		s.tracef("controller moved to %d", s.c.Controller())
	}
	if s.oneIn(BrokerRestart, 40) {
		id := int32(1 + r.IntN(3))
		if s.c.Alive(id) {
			s.c.SetAlive(id, false)
			s.restartAt = append(s.restartAt, restart{id, s.step + 1 + r.IntN(4)})
			s.tracef("broker %d fenced (restarting)", id)
		}
	}
	s.restartAt = slices.DeleteFunc(s.restartAt, func(x restart) bool {
		if s.step >= x.at {
			s.c.SetAlive(x.broker, true)
			s.tracef("broker %d back", x.broker)
			return true
		}
		return false
	})
}

type restart struct {
	broker int32
	at     int
}

// Describe summarises a run's options for a replay line.
func (o Options) Describe() string {
	var cs []string
	for _, c := range o.Classes {
		cs = append(cs, string(c))
	}
	return strings.Join(cs, ",")
}

// traceLen: how many of the last events a failure shows.
var traceLen = 60
