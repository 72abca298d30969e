package enforcer

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// ProtectionObserved is the cluster's protection state as observe read
// it (spec R8), and the settings the protection plan decides by.
type ProtectionObserved struct {
	BrokerID int32
	Strategy string
	// Records: the ownership topic's content, every agent's record and
	// lift (as last read: switching protection on does not wait for a
	// read); RecordsRead: they were read this pass.
	Records     Records
	RecordsRead bool
	// ACLs: every topic ACL in the cluster; ACLsRead says they were read
	// this pass.
	ACLs     []ACL
	ACLsRead bool
	// NoAuthorizer: DescribeAcls answered SECURITY_DISABLED: the brokers
	// run without an authorizer and ACLs cannot protect.
	NoAuthorizer bool
	// DefaultProducerByteRate: the default client entity's
	// producer_byte_rate now (0: none); QuotaRead says it was read.
	DefaultProducerByteRate int64
	QuotaRead               bool
	// AllowEveryone: the brokers' allow.everyone.if.no.acl.found, as
	// configured or read.
	AllowEveryone AllowEveryone
	// Expired: other agents whose protection must be lifted, with the
	// lift's kind: their lease was seen unrenewed for its length, or their
	// broker left the cluster's metadata that long.
	Expired map[int32]string
	// Unrecorded: bindings (and a quota) this agent set that no written
	// record claims yet: its record write failed or timed out after it
	// protected. Only this agent knows them; it lifts them like its own.
	Unrecorded      []ACL
	UnrecordedQuota int64
	// RecordDirty: the last write of this agent's record failed.
	RecordDirty bool
	// CalmSeen: a pass has seen this agent's log dirs calm (no episode)
	// since its record was last written: an operator's lift acknowledged
	// before is over, even if no pass could plan protection meanwhile.
	CalmSeen bool
	// Enforcing: false in observe mode, where the agent wants nothing on
	// the cluster and lifts what it owns (spec R4.4).
	Enforcing bool

	// TopicConfigs: the local.retention.bytes override of the topics whose
	// config a record claims or a pass may lower (nil: not set on the
	// topic); ConfigsRead says they were read this pass (spec R7.4).
	TopicConfigs map[string]*string
	ConfigsRead  bool
	// LowerFrom: usage under which lowered local retention is restored
	// (Policy.lowerFrom). OperatorTopics: topics whose lowered value an
	// operator changed in this episode: not lowered again.
	LowerFrom      float64
	OperatorTopics map[string]bool
	// OperatorDropped: the claims (topic, key, value) dropped for an
	// operator's change in this episode.
	OperatorDropped map[[3]string]bool
	// CopyHeld: the claims (topic, key, value) taken over from a peer's
	// copy of an earlier process's record within a lease: kept, not
	// restored (localret_lost.go).
	CopyHeld map[[3]string]bool
	// RefusedTopics: topics whose lowering Kafka refused in this episode,
	// their configs unchanged since: not lowered again.
	RefusedTopics map[string]bool
	// Replicas: the replicas of the topics a pass may lower, cluster-wide
	// (nil: not read; localret_scope.go).
	Replicas map[string]TopicReplicas

	// Cordons: this broker's cordoned log dirs (nil: cordoning off or
	// not possible; cordon.go).
	Cordons *CordonObserved

	// Instance: this agent's instance (written into its record).
	Instance string
	// Purged: this agent's purge history of the last day (written into
	// its record: the caps survive a restart).
	Purged []PurgeBucket

	// Settings (enforcer.protection, enforcer.ownershipTopic).
	ProducerByteRate int64
	Lease            time.Duration
	OwnershipTopic   string
	ExemptTopics     []string
	ExemptPrincipals []string
}

// TopicProtection is a protection change on one topic.
type TopicProtection struct {
	Topic string
	ACLs  []ACL
}

// PeerLift is another agent's protection this agent lifts (its lease
// expired).
type PeerLift struct {
	BrokerID int32
	Kind     string // LiftLeaseExpired or LiftBrokerGone
	// Instance: the instance whose record is lifted (Lift.Instance).
	Instance string
	// Release: the bindings its record claims that are in place;
	// ReleaseQuota the quota it claims. Deleted only where no live record
	// claims them once the lift is written.
	Release      []ACL
	ReleaseQuota int64
	// ReleaseConfigs: the topic configs it claims, restored where no live
	// record claims them once the lift is written.
	ReleaseConfigs []ConfigClaim
	// ReleaseCordons: the log dirs of its broker it cordoned.
	ReleaseCordons []Owned
	Topics         int
	// Retry: the lift is written already (a pending lift): only the
	// release is driven again.
	Retry bool
}

// ProtectionPlan is how the protection state changes this pass.
type ProtectionPlan struct {
	// Record is this agent's record after the pass; Write: it must be
	// written (changed, the lease is due for renewal, or the last write
	// failed).
	Record Record
	Write  bool
	// Create: bindings to add, by topic. SetQuota > 0: set the default
	// producer_byte_rate.
	Create   []TopicProtection
	SetQuota int64
	// Release: bindings this agent gives up, by topic; ReleaseQuota the
	// quota it gives up. They are deleted after the smaller record is
	// written and the records are read to their end, and only those no
	// live record claims then (two agents dropping one claim at once:
	// the later writer deletes it).
	Release      []TopicProtection
	ReleaseQuota int64
	// SetConfigs: topic configs to lower (spec R7.4), set only once the
	// record claiming them is written. ReleaseConfigs: claims given up,
	// restored like Release. DroppedConfigs: claims dropped because an
	// operator changed the value since (left as the operator set it).
	SetConfigs     []ConfigChange
	ReleaseConfigs []ConfigClaim
	DroppedConfigs []ConfigChange
	// Cordon: log dirs to cordon (APPEND, once the record claiming them
	// is written); Uncordon: claims given up (SUBTRACT); CordonDropped:
	// claims dropped because an operator uncordoned the log dir;
	// OperatorCordons: wanted, already cordoned by someone else (never
	// claimed); CordonHeld: wanted, not cordoned, with why (cordon.go).
	Cordon, Uncordon, CordonDropped, OperatorCordons []CordonChange
	CordonHeld                                       []CordonHeld
	// Lifts: expired protection of other agents.
	Lifts []PeerLift
	// Acked: a lift of this agent's claims it acknowledges in Record.
	Acked *Lift
	// Problems, reported in logs and kafka_disk_guard_write_protection_error.
	OperatorQuota bool // an operator's default quota is in place: quota protection not applied
	// OperatorQuotaInPlace: an operator's default quota at the wanted
	// rate: protection in place, not the guard's (spec R8.6).
	OperatorQuotaInPlace bool
	NoAuthorizer         bool     // protection wanted, but the brokers have no authorizer
	Impossible           []string // topics where an exempt principal cannot be left out (an ALLOW WRITE for User:*)
	// OperatorOwned: wanted bindings already in place that no record
	// names: an operator's, protection in place, never claimed (R8.6).
	OperatorOwned []ACL
}

// Empty reports whether the protection plan changes nothing.
func (pp ProtectionPlan) Empty() bool {
	return !pp.Write && len(pp.Create) == 0 && pp.SetQuota == 0 && len(pp.Release) == 0 && pp.ReleaseQuota == 0 && len(pp.Lifts) == 0 &&
		len(pp.SetConfigs) == 0 && len(pp.ReleaseConfigs) == 0 && len(pp.Cordon) == 0 && len(pp.Uncordon) == 0
}

// releases reports whether the plan gives claims up.
func (pp ProtectionPlan) releases() bool {
	return len(pp.Release) > 0 || pp.ReleaseQuota > 0 || len(pp.ReleaseConfigs) > 0
}

// Grows reports whether the plan protects more: its record is written
// first, with the short deadline, and protection applied whatever the
// outcome (spec R8.4).
func (pp ProtectionPlan) Grows() bool { return len(pp.Create) > 0 || pp.SetQuota > 0 }

// trusted: the agent may renew its lease: a fresh snapshot and the
// cluster reachable (the records read and written). Its own broker being
// fenced for a restart is no reason to let peers lift its protection.
func trusted(o Observed) bool { return !o.Stale && !o.BrokerUnreachable }

// planProtection computes this agent's record, the ACL or quota changes
// and the peer lifts. It is pure. Its steps, in order: the log dirs under
// protection, a lift of this agent's claims answered, the topics to
// protect, the bindings and the quota wanted, the tiered topics' local
// retention, the releases, whether the record is written, and the other
// agents' expired protection lifted.
func planProtection(o Observed, goals []DirGoal) ProtectionPlan {
	pl := newProtectionPlanner(o)
	dirs := pl.protectedDirs(goals)
	pl.dirs = dirs
	pl.answerLift(len(dirs) > 0 || pl.lowering(goals))
	topics := pl.wantedTopics(dirs)
	pl.claimBindings(topics)
	pl.claimQuota(topics)
	pl.rec.Configs = pl.planConfigs(goals)
	pl.rec.Owned = append(pl.rec.Owned, planCordons(pl.o, goals, pl.me, cordonMode{wantNothing: pl.wantNothing, suppressedAll: pl.suppressed("")}, &pl.pp)...)
	pl.releaseBindings()
	pl.releaseQuotas()
	pl.decideWrite()
	pl.pp.Lifts = peerLifts(pl.po, pl.present)
	return pl.pp
}

// protectionPlanner carries one protection plan through its steps.
type protectionPlanner struct {
	o  Observed
	po *ProtectionObserved
	// me: this agent's record as read; rec: the record after the pass.
	me, rec Record
	pp      ProtectionPlan
	// wantNothing: this agent wants no protection in place (observe
	// mode, or a peer's lift on untrusted inputs).
	wantNothing bool
	// want: the bindings wanted in place, on the topics wanted (sorted);
	// present: those in place.
	want, present bindingIndex
	wanted        []string
	// others: the other agents' records (and every lift).
	others Records
	// myQuotas: the quotas this agent claims, releases or set
	// unrecorded; claimedQuota the one it claims after the pass.
	myQuotas     []int64
	claimedQuota int64
	// dirs: the log dirs under protection (the order of creation follows
	// their topics' growth).
	dirs map[string]bool
}

func newProtectionPlanner(o Observed) *protectionPlanner {
	po := o.Protection
	me := po.Records.Agents[po.BrokerID]
	pl := &protectionPlanner{o: o, po: po, me: me, wantNothing: !po.Enforcing, want: bindingIndex{},
		present: bindingIndex{}}
	pl.rec = Record{BrokerID: po.BrokerID, Instance: po.Instance, Strategy: po.Strategy, LeaseMs: po.Lease.Milliseconds(), Purged: me.Purged,
		Since: me.Since, Renewed: me.Renewed, Ack: me.Ack, Suppressed: me.Suppressed, Updated: me.Updated}
	if po.Enforcing {
		pl.rec.Purged = po.Purged // observe mode's purges are not real ones
	}
	for _, a := range po.ACLs {
		pl.present.add(a)
	}
	pl.others = Records{Agents: maps.Clone(po.Records.Agents), Lifts: po.Records.Lifts}
	delete(pl.others.Agents, po.BrokerID)
	pl.myQuotas = slices.DeleteFunc([]int64{me.Quota(), me.ReleasingQuota(), po.UnrecordedQuota}, func(v int64) bool { return v <= 0 })
	return pl
}

// protectedDirs sets the log dirs under protection in the record, with
// why each entered it, and when protection began; it returns them.
func (pl *protectionPlanner) protectedDirs(goals []DirGoal) map[string]bool {
	oldWhy := map[string]Why{}
	for _, w := range pl.me.Why {
		oldWhy[w.LogDir] = w
	}
	dirs := map[string]bool{}
	for _, g := range goals {
		if g.Protect && pl.po.Enforcing {
			dirs[g.LogDir] = true
			pl.rec.LogDirs = append(pl.rec.LogDirs, g.LogDir)
			w, ok := oldWhy[g.LogDir]
			if !ok {
				w = Why{LogDir: g.LogDir, Band: g.Band.Name, Usage: g.Usage}
			}
			pl.rec.Why = append(pl.rec.Why, w)
		}
	}
	slices.Sort(pl.rec.LogDirs)
	slices.SortFunc(pl.rec.Why, func(a, b Why) int { return cmp.Compare(a.LogDir, b.LogDir) })
	if len(dirs) == 0 {
		pl.rec.Since = time.Time{}
	} else if pl.rec.Since.IsZero() {
		pl.rec.Since = pl.o.Now
	}
	return dirs
}

// lowering: the lowering episode of tiered topics' local retention (spec
// R7.4) lasts while a log dir is above its restore bound.
func (pl *protectionPlanner) lowering(goals []DirGoal) bool {
	for _, g := range goals {
		if pl.po.ConfigsRead && !g.Foreign && g.Usage >= pl.po.LowerFrom {
			return true
		}
	}
	return false
}

// answerLift acknowledges a lift of this agent's claims. An operator's is
// honoured until the episode (protection or lowering) ends, seen by this
// pass or by any pass since the record was written (CalmSeen: its reads
// may have failed through the calm), or it is withdrawn; a peer's
// (expired lease) means: protect again only on trusted inputs.
func (pl *protectionPlanner) answerLift(episode bool) {
	po, rec := pl.po, &pl.rec
	_, liftExists := po.Records.Lifts[po.BrokerID]
	if rec.Suppressed != nil && (!episode || !liftExists || po.CalmSeen) {
		rec.Suppressed = nil
	}
	l, ok := po.Records.PendingLift(po.BrokerID)
	if !ok {
		return
	}
	pl.pp.Acked = &l
	rec.Ack = l.ID
	switch {
	case l.Kind == LiftOperator && episode:
		s := Suppression{LiftID: l.ID, Topics: l.Topics}
		if rec.Suppressed != nil && len(rec.Suppressed.Topics) > 0 && len(l.Topics) > 0 {
			s.Topics = unionStrings(rec.Suppressed.Topics, l.Topics)
		} else if rec.Suppressed != nil {
			s.Topics = nil
		}
		rec.Suppressed = &s
	case l.Kind != LiftOperator && !trusted(pl.o):
		pl.wantNothing = true
	}
}

// suppressed reports whether an operator's lift covers the topic.
func (pl *protectionPlanner) suppressed(topic string) bool {
	s := pl.rec.Suppressed
	if s == nil {
		return false
	}
	_, found := slices.BinarySearch(s.Topics, topic)
	return len(s.Topics) == 0 || found
}

// wantedTopics lists the topics to protect: those of the protected log
// dirs, less those an operator's lift covers.
func (pl *protectionPlanner) wantedTopics(dirs map[string]bool) []string {
	if pl.wantNothing {
		return nil
	}
	return slices.DeleteFunc(protectedTopics(pl.o.Snapshot, dirs, pl.po), pl.suppressed)
}

// claimBindings decides the bindings wanted (strategy acl) and claims
// those the guard's own calls create.
func (pl *protectionPlanner) claimBindings(topics []string) {
	if pl.po.Strategy != StrategyACL || len(topics) == 0 {
		return
	}
	switch {
	case pl.po.NoAuthorizer:
		pl.pp.NoAuthorizer = true
	case pl.po.ACLsRead:
		pl.wanted = topics
		pl.rec.Owned = append(pl.rec.Owned, aclOwned(topics, pl.po, pl.present, pl.want, &pl.pp)...)
	}
}

// claimQuota decides the quota (strategy quota, spec R8.6): the guard
// claims the value its own call set, or a value in place another record
// names (the guard's); a value no record names is the operator's, never
// claimed. On records not read this pass (a pass switching protection
// on), another record's claim may have been released since and an
// operator may have set the same value again: only this agent's own
// claims and what it set unrecorded make the value in place the guard's;
// a peer's claim is shared from the next read on (as aclOwned does with
// bindings).
func (pl *protectionPlanner) claimQuota(topics []string) {
	po := pl.po
	if po.Strategy != StrategyQuota || len(topics) == 0 || !po.QuotaRead {
		return
	}
	switch inPlace := po.DefaultProducerByteRate; {
	case inPlace == 0:
		pl.claimedQuota, pl.pp.SetQuota = po.ProducerByteRate, po.ProducerByteRate
	case slices.Contains(pl.myQuotas, inPlace) || (po.RecordsRead && po.Records.GuardQuota(inPlace)):
		pl.claimedQuota = inPlace
	case inPlace == po.ProducerByteRate || po.Records.GuardQuota(inPlace):
		// An operator's quota at the wanted rate: protection in place,
		// never claimed, never removed (spec R8.6). Or a value a record
		// as last read names: in place this pass, the guard's or the
		// operator's as the next read shows.
		pl.pp.OperatorQuotaInPlace = true
	default:
		pl.pp.OperatorQuota = true
	}
	if pl.claimedQuota > 0 {
		pl.rec.Owned = append(pl.rec.Owned, ledger.QuotaOwned(pl.claimedQuota))
	}
}

// releaseBindings plans the changes to the bindings: create what is
// missing; release what this agent claimed (or set unrecorded) and no
// longer wants.
//
// Two-phase release (spec R8.5): a binding given up stays in the record,
// releasing, while it is read back in place. Every claim given up goes
// through the release once (the smaller record written, then the topic
// read to its end: of two agents dropping one binding the later deletes
// it); a releasing claim another live record still held at that read is
// left to that record.
func (pl *protectionPlanner) releaseBindings() {
	po, me := pl.po, pl.me
	var create []TopicProtection // by topic, as wantedTopics lists them
	for _, t := range pl.wanted {
		missing := pl.want[t]
		if slices.ContainsFunc(missing, pl.present.has) {
			missing = slices.DeleteFunc(slices.Clone(missing), pl.present.has)
		}
		if len(missing) > 0 {
			ledger.SortACLs(missing)
			create = append(create, TopicProtection{Topic: t, ACLs: missing})
		}
	}
	pl.pp.Create = fastestFirst(create, pl.o.Snapshot, pl.dirs)
	wasReleasing := bindingIndex{}
	Record{Owned: me.Releasing()}.Bindings(nil, func(a ACL) { wasReleasing.add(a) })
	var heldElsewhere map[ACL]bool // asked only of bindings released already
	if len(wasReleasing) > 0 {
		// A copy a peer wrote back after a loss of the ownership topic
		// (Restored) is no holder to leave a binding to: its agent may
		// have given the binding up since, and its own record written
		// over the copy names it no more. The claim stays releasing (its
		// release keeps the binding while the copy holds it) until that
		// agent's own record, or the copy's lift, says (found while
		// fixing seed 77959: the bindings were left in no record).
		holders := Records{Agents: maps.Clone(pl.others.Agents), Lifts: pl.others.Lifts}
		maps.DeleteFunc(holders.Agents, func(_ int32, r Record) bool { return r.Restored })
		heldElsewhere = holders.LiveBindings()
	}
	release := map[string][]ACL{}
	var releasing []ACL
	seen := bindingIndex{}
	drop := func(a ACL) {
		a = ledger.NormACL(a)
		if !pl.want.has(a) && pl.present.has(a) && !(wasReleasing.has(a) && heldElsewhere[a]) && seen.add(a) {
			release[a.Topic] = append(release[a.Topic], a)
			releasing = append(releasing, a)
		}
	}
	if po.ACLsRead {
		me.Bindings(nil, drop)
		for _, a := range po.Unrecorded {
			drop(a)
		}
		for _, o := range ledger.OwnedFromBindings(releasing) {
			o.Releasing = true
			pl.rec.Owned = append(pl.rec.Owned, o)
		}
	} else if !po.NoAuthorizer {
		// Not read this pass: the ACL claims stay as they are.
		for _, o := range me.Owned {
			if o.Kind == OwnedACL {
				pl.rec.Owned = append(pl.rec.Owned, o)
			}
		}
	}
	pl.pp.Release = byTopic(release)
}

// releaseQuotas releases the quotas this agent claimed, releases or set
// unrecorded and no longer wants (two-phase, like the bindings); without
// the quota read this pass its claims stay as they are.
func (pl *protectionPlanner) releaseQuotas() {
	po, me := pl.po, pl.me
	for _, v := range pl.myQuotas {
		switch {
		case v == pl.claimedQuota || pl.pp.ReleaseQuota == v:
		case !po.QuotaRead:
			if v == me.Quota() || v == me.ReleasingQuota() {
				o := ledger.QuotaOwned(v)
				o.Releasing = v == me.ReleasingQuota()
				pl.rec.Owned = append(pl.rec.Owned, o)
			}
		case po.DefaultProducerByteRate == v && !(v == me.ReleasingQuota() && v != me.Quota() && pl.others.LiveQuota(v)):
			o := ledger.QuotaOwned(v)
			o.Releasing = true
			pl.rec.Owned = append(pl.rec.Owned, o)
			pl.pp.ReleaseQuota = v
		}
	}
}

// decideWrite writes the record when it changed, when the lease is due
// (renewed only on trusted inputs), or when the last write failed.
func (pl *protectionPlanner) decideWrite() {
	o, po, me, rec := pl.o, pl.po, pl.me, &pl.rec
	changed := !ledger.SameOwned(me.Owned, rec.Owned) || !ledger.SameConfigs(me.Configs, rec.Configs) || !slices.Equal(me.LogDirs, rec.LogDirs) || me.Ack != rec.Ack ||
		(me.Instance != rec.Instance && (rec.Claims() || len(rec.LogDirs) > 0)) || (po.Enforcing && !ledger.SamePurges(me.Purged, rec.Purged)) ||
		!sameSuppression(me.Suppressed, rec.Suppressed) || (rec.Claims() && (me.Strategy != rec.Strategy || me.LeaseMs != rec.LeaseMs))
	renew := trusted(o) && rec.Claims() && (o.Now.Sub(me.Renewed) >= po.Lease/3 || o.Now.Before(me.Renewed))
	if trusted(o) && (renew || (changed && rec.Claims())) {
		rec.Renewed = o.Now
	}
	if !rec.Claims() && len(rec.Purged) == 0 {
		// A record with purges of the last day keeps its lease: a second
		// instance stands by while it is renewed (lease fencing,
		// purge_record.go).
		rec.Renewed = time.Time{}
	}
	pl.pp.Write = changed || renew || po.RecordDirty
	if pl.pp.Write {
		rec.Updated = o.Now
	}
	pl.pp.Record = *rec
}

// peerLifts lists the other agents' expired protection: lifted once (a
// lift written), and driven again while what the lift voided is still in
// place (its release failed, spec R8.5). present: the bindings in place.
func peerLifts(po *ProtectionObserved, present bindingIndex) []PeerLift {
	var lifts []PeerLift
	for _, id := range slices.Sorted(maps.Keys(po.Expired)) {
		r, ok := po.Records.Agents[id]
		if id == po.BrokerID || !ok || !r.Claims() {
			continue
		}
		_, pending := po.Records.PendingLift(id)
		pl := PeerLift{BrokerID: id, Kind: po.Expired[id], Instance: r.Instance, Topics: len(r.ACLTopics()), Retry: pending}
		for _, q := range []int64{r.Quota(), r.ReleasingQuota()} {
			if q > 0 && (!po.QuotaRead || po.DefaultProducerByteRate == q) {
				pl.ReleaseQuota = q
			}
		}
		for _, c := range r.Configs {
			if cur, read := po.TopicConfigs[c.Topic]; !po.ConfigsRead || (read && po.Records.GuardSet(c, cur)) {
				pl.ReleaseConfigs = append(pl.ReleaseConfigs, c)
			}
		}
		if pl.Kind != LiftBrokerGone { // a gone broker's config cannot be changed
			pl.ReleaseCordons = r.AllCordonClaims()
		}
		r.Bindings(nil, func(a ACL) {
			if present.has(a) {
				pl.Release = append(pl.Release, ledger.NormACL(a))
			}
		})
		if pending && len(pl.Release) == 0 && pl.ReleaseQuota == 0 && len(pl.ReleaseConfigs) == 0 && len(pl.ReleaseCordons) == 0 {
			continue
		}
		ledger.SortACLs(pl.Release)
		pl.Release = slices.Compact(pl.Release)
		lifts = append(lifts, pl)
	}
	return lifts
}

// aclOwned decides each topic's shape, fills want with the bindings and
// returns the claims. It claims only what the guard's own calls create
// (spec R8.6): a wanted binding already in place (present) that no record
// names (nor this agent's unrecorded set) is an operator's; it counts as
// protection in place and is never claimed, so never deleted. topics are
// sorted; the claims group the topics by shape, in the order of their
// first topic (as ledger.OwnedFromBindings groups them).
func aclOwned(topics []string, po *ProtectionObserved, present, want bindingIndex, pp *ProtectionPlan) []Owned {
	guard := guardIndex(po.Records, po.Unrecorded)
	var operator []ACL
	for _, a := range po.ACLs {
		if !guard.has(a) {
			operator = append(operator, a)
		}
	}
	ops := newOperatorIndex(operator)
	claimable := guard
	if !po.RecordsRead {
		// Records as last read (a pass switching protection on): another
		// agent may have released its claim since, and an operator set
		// the same binding again. Only this agent's own record and what it
		// set unrecorded make a binding in place the guard's; a peer's
		// claim is shared from the next read on (found by the
		// simulation, default mix, seed 161).
		claimable = guardIndex(Records{Agents: map[int32]Record{po.BrokerID: po.Records.Agents[po.BrokerID]}}, po.Unrecorded)
	}
	// operators: a binding in place that no record names (or, on records
	// not read this pass, that this agent did not set).
	operators := func(a ACL) bool { return present.has(a) && !claimable.has(a) }
	in := ledger.ShapeInputs{AllowEveryone: po.AllowEveryone, Exempt: po.ExemptPrincipals}
	var out []Owned
	byShape := map[string]int{} // shape key: index in out
	for _, t := range topics {
		in.Operator = ops.matching(t)
		s, impossible := ledger.ShapeFor(t, in)
		if impossible {
			pp.Impossible = append(pp.Impossible, t)
		}
		bs := s.Bindings(t)
		want[t] = bs
		claimed := bs
		if slices.ContainsFunc(bs, operators) {
			claimed = nil
			for _, a := range bs {
				if operators(a) {
					pp.OperatorOwned = append(pp.OperatorOwned, a)
				} else {
					claimed = append(claimed, a)
				}
			}
		}
		if len(claimed) == 0 {
			continue
		}
		shape := s.Canonical()
		if len(claimed) < len(bs) {
			shape = *ledger.OwnedFromBindings(claimed)[0].Shape
		}
		k := shape.Key()
		i, ok := byShape[k]
		if !ok {
			i = len(out)
			byShape[k] = i
			out = append(out, Owned{Kind: OwnedACL, Shape: &shape})
		}
		out[i].Topics = append(out[i].Topics, t)
	}
	return out
}

func sameSuppression(a, b *Suppression) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.LiftID == b.LiftID && slices.Equal(a.Topics, b.Topics)
}

// protectedTopics lists, sorted, the topics with a live or future replica
// in the log dirs, except exempt ones (exemptTopic).
func protectedTopics(s *agent.Snapshot, dirs map[string]bool, po *ProtectionObserved) []string {
	var out []string
	for _, ld := range s.LogDirs {
		if !dirs[ld.Path] {
			continue
		}
		for _, p := range ld.Partitions {
			// A topic's partitions mostly sit side by side: each topic is
			// matched against the exempt patterns about once.
			if (p.Kind == agent.KindLive || p.Kind == agent.KindFuture) && (len(out) == 0 || out[len(out)-1] != p.Topic) {
				out = append(out, p.Topic)
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(t string) bool { return exemptTopic(t, po.OwnershipTopic, po.ExemptTopics) })
}

func byTopic(m map[string][]ACL) []TopicProtection {
	out := make([]TopicProtection, 0, len(m))
	for t, acls := range m {
		ledger.SortACLs(acls)
		out = append(out, TopicProtection{Topic: t, ACLs: acls})
	}
	slices.SortFunc(out, func(a, b TopicProtection) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}

func flatten(tps []TopicProtection) []ACL {
	var out []ACL
	for _, tp := range tps {
		out = append(out, tp.ACLs...)
	}
	return out
}

// unionOwned is what a record claims while it grows from a to b: both
// sets of claims (a topic whose shape changes claims both shapes until
// the old bindings are released). A shape's held and releasing claims
// stay apart, and a topic either side holds is held, not releasing.
// Merged into a's releasing claim of the same shape, the topics b
// protects anew were recorded releasing only before their bindings were
// created (found by the simulation, seed 77959: agent-2's record, still
// releasing an ALLOW shape on events, grew to protect bursts, compacted
// and events with it; the planned record's write took effect with its
// reply lost, the ownership topic was lost, and the record written again
// from memory had the bindings releasing; a peer's older copy, written
// back, held them, so agent-2 dropped its claim, and the copy's agent
// then wrote its own record over the copy: no record named them).
func unionOwned(a, b []Owned) []Owned {
	type key struct {
		claim     string
		releasing bool // an ACL claim's: held and releasing ones apart
	}
	type acc struct {
		o      Owned
		topics map[string]bool
	}
	var order []key
	m := map[key]*acc{}
	for _, o := range append(slices.Clone(a), b...) {
		k := key{claim: o.Kind + "|" + o.Entity + "|" + o.Key}
		if o.Kind == OwnedACL && o.Shape != nil {
			k = key{claim: k.claim + "|" + o.Shape.Key(), releasing: o.Releasing}
		}
		x, ok := m[k]
		if !ok {
			x = &acc{o: o, topics: map[string]bool{}}
			m[k] = x
			order = append(order, k)
		} else if o.Kind != OwnedACL {
			x.o = o // the later value wins
		}
		for _, t := range o.Topics {
			x.topics[t] = true
		}
	}
	out := make([]Owned, 0, len(order))
	for _, k := range order {
		x := m[k]
		if x.o.Kind == OwnedACL {
			if held, ok := m[key{claim: k.claim}]; k.releasing && ok {
				maps.DeleteFunc(x.topics, func(t string, _ bool) bool { return held.topics[t] })
				if len(x.topics) == 0 {
					continue
				}
			}
			x.o.Topics = slices.Sorted(maps.Keys(x.topics))
		}
		out = append(out, x.o)
	}
	return out
}
