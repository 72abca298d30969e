package enforcer

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Cordoning a log dir (KIP-1066, spec R3.8): a log dir listed in its
// broker's cordoned.log.dirs gets no new partition. The broker's
// LogManager places a new local replica only in an uncordoned log dir,
// and the controller leaves a broker whose every log dir is cordoned out
// of the placement of new partitions (like a fenced one). Existing
// partitions keep writing: a cordon slows a fill that new partitions
// cause, and loses nothing.
//
// The guard cordons a log dir of its own broker once its usage reaches
// enforcer.relief.cordon.atPercent (default: the lower bound of the
// profile's second band, the first one that acts on usage) or, when that
// is lower and admission is on, admission.limitPercent (past which the
// admission check refuses new topics anyway), and uncordons it under that
// bound minus hysteresisPoints. The cordon is a
// claim in the agent's record (ledger.OwnedCordon), written before the
// APPEND; given up, it stays releasing until the SUBTRACT is read back.
//
// The last uncordoned log dir of a broker is never cordoned: with every
// log dir cordoned the broker takes no new partition at all, and
// CreateTopics and CreatePartitions whose replication factor needs it (on
// a cluster of RF brokers, every topic of that RF) fail with
// INVALID_REPLICATION_FACTOR. One full broker must not refuse every new
// partition of a healthy cluster; the guard says so instead
// (kafka_disk_guard_log_dir_cordon_held{reason="last_log_dir"}, a log
// line) and the other rungs of the ladder go on.

// The cordon types live with the ledger, which releases cordon claims.
type (
	CordonAdmin   = ledger.CordonAdmin
	BrokerCordons = ledger.BrokerCordons
)

// OwnedCordon is the kind of a cordon claim.
const OwnedCordon = ledger.OwnedCordon

// CordonMinMetadataVersion: the metadata.version feature level cordons
// need (4.3-IV0).
const CordonMinMetadataVersion = ledger.CordonMinMetadataVersion

// ErrCordonUnsupported: the cluster's metadata.version cannot cordon.
var ErrCordonUnsupported = ledger.ErrCordonUnsupported

// CordonConfig is the `enforcer.relief.cordon` section.
type CordonConfig struct {
	// Enabled: cordon log dirs at AtPercent (default true). In observe
	// mode the guard only says what it would cordon.
	Enabled *bool `yaml:"enabled"`
	// AtPercent: usage (percent) at which a log dir is cordoned (default:
	// the lower bound of the profile's second band; none with a single
	// band). Uncordoned under it minus hysteresisPoints.
	AtPercent *float64 `yaml:"atPercent"`
	// AdmissionLimitPercent: admission.limitPercent while admission is on
	// (set by the guard, not a key of the file; 0: none). A log dir whose
	// usage reaches it is cordoned too, when that is under AtPercent.
	AdmissionLimitPercent float64 `yaml:"-"`
}

// ReliefConfig is the `enforcer.relief` section: the lossless rungs of
// the ladder (spec R3.8).
type ReliefConfig struct {
	Cordon CordonConfig `yaml:"cordon"`
	Move   MoveConfig   `yaml:"move"`
	// Reassign: the agent may start a cross-broker reassignment on its
	// own (reassign_run.go; default false: only `relief plan --execute`
	// moves replicas across brokers).
	Reassign bool `yaml:"reassign"`
	// ReassignBytesPerSecond: the replication throttle a reassignment the
	// agent starts runs under (leader and follower rates on every broker
	// it touches; default 50 MiB/s).
	ReassignBytesPerSecond int64 `yaml:"reassignBytesPerSecond"`
}

// cordonEnabled reports whether cordoning is switched on.
func (c CordonConfig) cordonEnabled() bool { return c.Enabled == nil || *c.Enabled }

// validate checks the section.
func (c CordonConfig) validate() error {
	if c.AtPercent != nil && (*c.AtPercent <= 0 || *c.AtPercent > 100 || math.IsNaN(*c.AtPercent)) {
		return fmt.Errorf("enforcer.relief.cordon.atPercent: %v is not in (0, 100]", *c.AtPercent)
	}
	return nil
}

// cordonFrom is the usage (ratio) at which a log dir is cordoned: the
// lower of AtPercent (default: the profile's second band) and the
// admission limit; +Inf when cordoning is off or the profile has one band
// only and no AtPercent (the admission limit lowers the bound, it never
// switches cordoning on by itself).
func (p Policy) cordonFrom(c CordonConfig) float64 {
	from := math.Inf(1)
	switch {
	case !c.cordonEnabled():
		return from
	case c.AtPercent != nil:
		from = *c.AtPercent / 100
	case len(p.Profile.Bands) > 1:
		from = p.Profile.Bands[1].From
	default:
		return from
	}
	if c.AdmissionLimitPercent > 0 {
		from = min(from, c.AdmissionLimitPercent/100)
	}
	return from
}

// Reasons a wanted cordon is held (kafka_disk_guard_log_dir_cordon_held).
const (
	CordonHeldLastLogDir  = "last_log_dir"    // the broker's last uncordoned log dir
	CordonHeldUnsupported = "unsupported"     // metadata.version under 4.3-IV0, or no cordon calls
	CordonHeldInherited   = "inherited"       // cordoned.log.dirs set in server.properties or as the cluster default
	CordonHeldUnmatched   = "not_in_log_dirs" // no log.dirs entry names the log dir
	CordonHeldDeclined    = "operator_uncordoned"
	CordonHeldLifted      = "lifted" // an operator's lift holds for the episode
	CordonHeldReadFailed  = "read_failed"
)

// CordonHeldReasons lists the reasons, for the metric's series.
func CordonHeldReasons() []string {
	return []string{CordonHeldLastLogDir, CordonHeldUnsupported, CordonHeldInherited, CordonHeldUnmatched,
		CordonHeldDeclined, CordonHeldLifted, CordonHeldReadFailed}
}

// CordonObserved is what a pass read of its broker's cordons.
type CordonObserved struct {
	// Read: State was read this pass; Err why not.
	Read  bool
	Err   error
	State BrokerCordons
	// Entries: the log.dirs entry of each of the guard's log dirs (by the
	// agent's path), when one matches the broker's own path for it.
	Entries map[string]string
	// From: usage (ratio) at which a log dir is cordoned; Under: usage
	// under which it is uncordoned.
	From, Under float64
	// Seen: entries this agent read back cordoned under its claim (in
	// memory): a claimed entry missing after that was uncordoned by an
	// operator. Declined: those entries, not cordoned again this episode.
	Seen, Declined map[string]bool
	// Lifted: an operator lifted this agent's claims (all of them) in
	// this cordon episode (in memory): nothing is cordoned again until
	// every log dir is under the uncordon bound.
	Lifted bool
}

// CordonChange is one log dir to cordon or uncordon.
type CordonChange struct {
	LogDir string // the guard's path ("" when no log dir of the snapshot is it)
	Dir    string // the broker's log.dirs entry
	Band   string
	Usage  float64
}

// CordonHeld is a log dir the policy wants cordoned and the guard does
// not cordon, with why.
type CordonHeld struct {
	LogDir, Dir, Reason string
}

// cordonMode says what a pass may do with cordons: wantNothing (observe
// mode's own plan, or a peer's lift not yet trusted: nothing new),
// suppressedAll (an operator lifted this broker's protection: every
// claim released).
type cordonMode struct {
	wantNothing, suppressedAll bool
}

// planCordons decides this agent's cordon claims: kept, made (to APPEND
// once the record is written), given up (releasing: SUBTRACT, dropped once
// read back gone), dropped (an operator uncordoned it). Without the
// broker's cordons read this pass the claims stay as they are. It is pure.
func planCordons(o Observed, goals []DirGoal, me Record, mode cordonMode, pp *ProtectionPlan) []Owned {
	co := o.Protection.Cordons
	if co == nil || !co.Read {
		return me.AllCordonClaims()
	}
	mode.suppressedAll = mode.suppressedAll || co.Lifted
	c := &cordonPlanner{o: o, co: co, mode: mode, pp: pp, goalOf: map[string]DirGoal{}}
	for _, g := range goals {
		if e, ok := co.Entries[g.LogDir]; ok && !g.Foreign {
			c.goalOf[e] = g
		}
	}
	claimed := c.keepClaims(me)
	c.claimNew(claimed)
	// Log dirs wanted but no log.dirs entry matched.
	for _, g := range goals {
		if _, ok := co.Entries[g.LogDir]; !ok && !g.Foreign && g.Usage >= co.From {
			pp.CordonHeld = append(pp.CordonHeld, CordonHeld{LogDir: g.LogDir, Reason: CordonHeldUnmatched})
		}
	}
	slices.SortFunc(c.out, func(a, b Owned) int { return cmp.Compare(a.Value, b.Value) })
	return c.out
}

// cordonPlanner is one planCordons call: what it read, the goal of each
// log.dirs entry, and the claims and changes it plans.
type cordonPlanner struct {
	o      Observed
	co     *CordonObserved
	mode   cordonMode
	goalOf map[string]DirGoal // by log.dirs entry
	pp     *ProtectionPlan
	out    []Owned
}

// change is the cordon change of a log.dirs entry.
func (c *cordonPlanner) change(dir string) CordonChange {
	g := c.goalOf[dir]
	return CordonChange{LogDir: g.LogDir, Dir: dir, Band: g.Band.Name, Usage: g.Usage}
}

// in reports whether the broker's dynamic cordoned.log.dirs has dir.
func (c *cordonPlanner) in(dir string) bool { return slices.Contains(c.co.State.Dynamic, dir) }

// keep reports whether dir's log dir stays over the uncordon bound (or
// the snapshot is stale).
func (c *cordonPlanner) keep(dir string) bool {
	g, ok := c.goalOf[dir]
	return ok && (g.Usage >= c.co.Under || c.o.Stale)
}

// release plans the claim's SUBTRACT, the claim kept releasing.
func (c *cordonPlanner) release(cl Owned) {
	cl.Releasing = true
	c.out = append(c.out, cl)
	c.pp.Uncordon = append(c.pp.Uncordon, c.change(cl.Value))
}

// keepClaims decides the agent's existing claims: releasing ones retried
// until read back gone, the others kept, appended again, released or
// dropped. It returns the entries claimed (not releasing).
func (c *cordonPlanner) keepClaims(me Record) map[string]bool {
	po, pp := c.o.Protection, c.pp
	for _, cl := range me.AllCordonClaims() {
		if cl.Releasing {
			if c.in(cl.Value) {
				c.release(cl) // retried until read back gone (R8.5)
			}
			continue
		}
	}
	claimed := map[string]bool{}
	for _, cl := range me.CordonClaims() {
		claimed[cl.Value] = true
		switch {
		case !po.Records.Live(po.BrokerID, ""):
			// Lifted by a peer or an operator: released by them, and by
			// this agent while the entry is still there.
			if c.in(cl.Value) {
				c.release(cl)
			}
		case !c.in(cl.Value) && c.co.Seen[cl.Value]:
			// Read back in place earlier, gone now: an operator
			// uncordoned it. Left so, not cordoned again this episode.
			pp.CordonDropped = append(pp.CordonDropped, c.change(cl.Value))
		case c.mode.wantNothing || c.mode.suppressedAll || !c.keep(cl.Value):
			if c.in(cl.Value) {
				c.release(cl)
			}
		case !c.in(cl.Value):
			// Claimed, not (yet) read back: the APPEND failed or has not
			// reached this broker's view; appending again is idempotent.
			c.out = append(c.out, cl)
			pp.Cordon = append(pp.Cordon, c.change(cl.Value))
		default:
			c.out = append(c.out, cl)
		}
	}
	return claimed
}

// claimNew claims the log dirs at or over the cordon bound not claimed
// yet, fullest first, or says why each is held; never the broker's last
// uncordoned log dir.
func (c *cordonPlanner) claimNew(claimed map[string]bool) {
	co, st, pp := c.co, c.co.State, c.pp
	var wanted []DirGoal
	for dir, g := range c.goalOf {
		if g.Usage >= co.From && !claimed[dir] && !c.o.Stale {
			wanted = append(wanted, g)
		}
	}
	slices.SortFunc(wanted, func(a, b DirGoal) int { return cmp.Or(cmp.Compare(b.Usage, a.Usage), cmp.Compare(a.LogDir, b.LogDir)) })
	left := len(st.Uncordoned())
	for _, ch := range pp.Cordon {
		if !st.Cordoned(ch.Dir) {
			left--
		}
	}
	for _, g := range wanted {
		dir := co.Entries[g.LogDir]
		held := func(reason string) {
			pp.CordonHeld = append(pp.CordonHeld, CordonHeld{LogDir: g.LogDir, Dir: dir, Reason: reason})
		}
		switch {
		case st.Cordoned(dir):
			pp.OperatorCordons = append(pp.OperatorCordons, c.change(dir)) // never claimed (R8.6)
		case c.mode.wantNothing:
			// Observe mode's own plan (its view of what enforcing would
			// do is the plan of the virtual record, WouldProtect), or a
			// peer's lift not yet trusted: nothing new.
		case c.mode.suppressedAll:
			held(CordonHeldLifted)
		case co.Declined[dir]:
			held(CordonHeldDeclined)
		case !st.Supported():
			held(CordonHeldUnsupported)
		case len(st.Dynamic) == 0 && len(st.Inherited) > 0:
			// A dynamic per-broker value would override the inherited
			// one: the operator's entries would stop applying.
			held(CordonHeldInherited)
		case left <= 1:
			held(CordonHeldLastLogDir)
		default:
			c.out = append(c.out, ledger.CordonClaim(dir))
			pp.Cordon = append(pp.Cordon, c.change(dir))
			left--
		}
	}
}

// cordonEntries matches each of the guard's log dirs (by its identity's
// broker path) to the broker's log.dirs entry naming the same path.
func cordonEntries(ids map[string]string, logDirs []string) map[string]string {
	out := map[string]string{}
	for path, brokerPath := range ids {
		if brokerPath == "" {
			continue
		}
		for _, e := range logDirs {
			if e == brokerPath || filepath.Clean(e) == filepath.Clean(brokerPath) {
				out[path] = e
				break
			}
		}
	}
	return out
}
