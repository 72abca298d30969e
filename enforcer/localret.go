package enforcer

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// Tiered topics (spec R7.4). The guard never moves a tiered topic's log
// start offset: DeleteRecords would delete its remote copy too. Where it
// would purge (the purge and purge_fraction bands, and a protect band
// that frees with one of them) it lowers the topic's
// local.retention.bytes instead. Kafka then deletes local segments
// already copied to remote storage, and only those (UnifiedLog's
// deletableSegments on a remote-enabled log: a segment goes once
// upperBoundOffset - 1 <= highestOffsetInRemoteStorage), so no record is
// lost: what is deleted locally stays readable from the remote tier.
//
// The change is a claim in the agent's ownership record (ConfigClaim,
// with the operator's value in Orig: nil when the topic had no override),
// leased, lifted by a peer or an operator, and restored when usage falls
// under the lowest purge band minus the hysteresis. A value the guard did
// not set is never touched: an operator's change after the guard's drops
// the claim and is left as it is.

// LocalRetentionBytesKey is the topic config the guard lowers.
const LocalRetentionBytesKey = "local.retention.bytes"

// ConfigChange is one topic config the guard sets (Value) or restores
// (Value is the operator's value; nil deletes the topic's override).
type ConfigChange struct {
	LogDir string
	Topic  string
	Key    string
	Value  *string
	// From is the value in place before (nil: not set on the topic).
	From *string
	// Bytes the change frees, as the model expects (a lowering).
	Bytes int64
	// Config: the topic's configs as the plan saw them (a lowering Kafka
	// refuses is remembered with them: rememberRefusal).
	Config agent.TopicConfig
	// Replicas: the topic's replicas cluster-wide, every one of which the
	// value reaches (nil: not known).
	Replicas *TopicReplicas
	// Wanted: a restore Kafka refused (ErrConfigRefused) for the
	// operator's value, which Wanted holds; Value is what was restored
	// instead (nil: the override deleted, so the topic inherits).
	Wanted *string
}

// tieredRights reports whether the rights report says the guard may
// describe and alter the topic's configs (the tiered feature, checked per
// topic: a right missing on other topics holds only those).
func tieredRights(r *rights.Report, topic string) bool {
	if r == nil || !slices.Contains(r.Features, rights.Tiered) {
		return false
	}
	for _, g := range r.Missing(rights.Tiered) {
		if _, found := slices.BinarySearch(g.Topics, topic); found || len(g.Topics) == 0 {
			return false
		}
	}
	return true
}

// lowerPlan is what lowering local retention would do in one log dir:
// the value for each tiered topic and the bytes Kafka would free.
type lowerPlan struct {
	values map[string]int64
	bytes  map[string]int64
	freed  int64
}

// lowers reports whether the band's freeing action purges: the bands in
// which tiered topics get their local retention lowered.
func lowers(f Free) bool { return f.Action == ActionPurge || f.Action == ActionPurgeFraction }

// lowerFrom is the usage under which lowered local retention is restored:
// the lowest purging band's lower bound minus the hysteresis (R3.7); +Inf
// when the profile never purges.
func (p Policy) lowerFrom() float64 {
	for _, b := range p.Profile.Bands {
		if b.Action == ActionPurge || b.Action == ActionPurgeFraction {
			return b.From - p.HysteresisPoints/100
		}
	}
	return math.Inf(1)
}

// lowestPurgeBand names the lowest band that purges ("" when none): the
// band label of restores.
func (p Profile) lowestPurgeBand() string {
	for _, b := range p.Bands {
		if b.Action == ActionPurge || b.Action == ActionPurgeFraction {
			return b.Name
		}
	}
	return ""
}

// tieredLowerable reports whether the guard may lower the topic's local
// retention from this log dir's view: tiered with copying on (with
// remote.log.copy.disable Kafka applies retention.* locally, and
// local.retention.* means nothing), its configs fresh from the cluster
// (R7.2), the Tiered rights held (nil rights: not known yet, held).
func (p Policy) tieredLowerable(o Observed, topic string) bool {
	c := o.Snapshot.TopicConfig(topic)
	if !c.Tiered(topic) || c.RemoteCopyDisable || agent.HasInternalPrefix(topic) {
		return false
	}
	if !o.Offline && !tieredRights(o.Rights, topic) {
		return false
	}
	return configHold(o.Snapshot.ConfigInfo(topic), p.Gates.configSince(o.Now)) == ""
}

// planLower computes, for a log dir whose goal lowers, the local
// retention of each tiered topic that frees enough uploaded bytes: with
// a target, the gentlest values that together free what usage is above
// the restore bound (topics with the most to free first); with a fraction
// (purge_fraction), each topic keeps (1 - fraction) of its largest
// partition. No value is below the topic's LocalRetentionFloor. A topic whose
// value would not be lower than its local retention now is left out. It
// is pure.
func (p Policy) planLower(o Observed, ld *agent.LogDir, g DirGoal) lowerPlan {
	lp := lowerPlan{values: map[string]int64{}, bytes: map[string]int64{}}
	if !lowers(g.Free) || len(g.Blocked) > 0 || g.Foreign {
		return lp
	}
	byTopic := map[string][]*agent.Partition{}
	for i := range ld.Partitions {
		pt := ld.Partitions[i]
		if pt.Kind == agent.KindLive && pt.Tiered && len(pt.Segments) > 1 && p.tieredLowerable(o, pt.Topic) {
			byTopic[pt.Topic] = append(byTopic[pt.Topic], pt)
		}
	}
	if len(byTopic) == 0 {
		return lp
	}
	type cand struct {
		topic string
		max   int64 // bytes freed at the topic's floor
		floor int64 // LocalRetentionFloor
	}
	var cands []cand
	for t, parts := range byTopic {
		floor := LocalRetentionFloor(o.Snapshot.TopicConfig(t))
		if f := freedAt(parts, o.Snapshot.TopicConfig(t).Preallocate, floor); f > 0 {
			cands = append(cands, cand{t, f, floor})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.max != b.max {
			return int(math.Copysign(1, float64(b.max-a.max)))
		}
		if a.topic < b.topic {
			return -1
		}
		return 1
	})
	// The aim is the restore bound (the target minus the hysteresis), not
	// the target: once usage is under it the operator's value comes back,
	// and the cycle ends without data lost. Kafka does not fetch deleted
	// local copies back, so restoring frees nothing and fills nothing.
	need := int64(math.MaxInt64)
	if g.Free.Action == ActionPurge && g.Free.Target > 0 {
		need = needBytes(*ld, min(g.Free.Target, p.lowerFrom()), ld.PendingDeleteBytes+tieredPending(o, ld))
	}
	for _, c := range cands {
		if need <= 0 {
			break
		}
		parts, pre := byTopic[c.topic], o.Snapshot.TopicConfig(c.topic).Preallocate
		var v int64
		switch {
		case g.Free.Action == ActionPurgeFraction:
			var largest int64
			for _, pt := range parts {
				largest = max(largest, pt.LocalSize(pre))
			}
			v = int64(math.Floor((1 - g.Free.Fraction) * float64(largest)))
		case c.max <= need:
			// All it can free: the gentlest value that frees as much as
			// the floor does.
			v = gentlest(parts, pre, c.max)
		default:
			v = gentlest(parts, pre, need)
		}
		v = max(v, c.floor)
		if _, cur := o.Snapshot.TopicConfig(c.topic).LocalRetention(c.topic); cur >= 0 && v >= cur {
			continue
		}
		f := freedAt(parts, pre, v)
		if f == 0 {
			continue
		}
		lp.values[c.topic], lp.bytes[c.topic] = v, f
		lp.freed += f
		if need != math.MaxInt64 {
			need -= f
		}
	}
	return lp
}

// freedAt is the disk bytes Kafka frees in the partitions with
// local.retention.bytes = v: oldest closed segments first while the local
// size without the segment stays at or above v, and only segments
// already in remote storage (an unbroken run: Kafka stops at the first it
// keeps). preallocate is the topic's (agent.Partition.LocalSize).
func freedAt(parts []*agent.Partition, preallocate bool, v int64) int64 {
	var freed int64
	for _, pt := range parts {
		size := pt.LocalSize(preallocate)
		for j := 0; j < len(pt.Segments)-1; j++ {
			s := pt.Segments[j]
			if s.State == agent.StateEligible {
				// Kafka frees it anyway at its next check: pending
				// (tieredPending), not freed by a new value.
				size -= s.LogBytes
				continue
			}
			if size-s.LogBytes < v || s.Tier != agent.TierUploaded {
				break
			}
			size -= s.LogBytes
			freed += s.DiskBytes
		}
	}
	return freed
}

// gentlest is the largest value (a partition's local size after some of
// its oldest segments go) that still frees need bytes across the
// partitions; 0 when none does.
func gentlest(parts []*agent.Partition, preallocate bool, need int64) int64 {
	var points []int64
	for _, pt := range parts {
		size := pt.LocalSize(preallocate)
		for j := 0; j < len(pt.Segments)-1; j++ {
			size -= pt.Segments[j].LogBytes
			points = append(points, size)
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	// freedAt falls as v grows: the last point that frees enough.
	i := sort.Search(len(points), func(i int) bool { return freedAt(parts, preallocate, points[i]) < need })
	if i == 0 {
		return 0
	}
	return max(points[i-1], 0)
}

// planConfigs decides this agent's topic config claims (spec R7.4): the
// claims kept, lowered further or made, the values to set, the claims
// given up (restored once no live record claims the key) and the claims
// dropped because an operator changed the value (in pl.pp). Without the
// topic configs read this pass the claims stay as they are.
func (pl *protectionPlanner) planConfigs(goals []DirGoal) []ConfigClaim {
	if !pl.po.ConfigsRead {
		return pl.me.Configs
	}
	w := wantedLowerings(pl.o, goals)
	out := pl.keepConfigClaims(w)
	if pl.wantNothing {
		return out
	}
	return append(out, pl.newConfigClaims(w)...)
}

// lowerings are the local retention values a pass wants: per topic, the
// lowest value any log dir wants, the bytes it frees and that log dir;
// keep: the topics kept lowered (usage still above the hysteresis bound
// in a log dir holding them, or the snapshot stale).
type lowerings struct {
	value, bytes map[string]int64
	dir          map[string]string
	keep         map[string]bool
}

func wantedLowerings(o Observed, goals []DirGoal) lowerings {
	w := lowerings{value: map[string]int64{}, bytes: map[string]int64{}, dir: map[string]string{}, keep: map[string]bool{}}
	for _, g := range goals {
		ld := dirOf(o.Snapshot, g.LogDir)
		if ld == nil || g.Foreign {
			continue
		}
		if g.Usage >= o.Protection.LowerFrom || o.Stale {
			for _, pt := range ld.Partitions {
				w.keep[pt.Topic] = true
			}
		}
		for t, v := range g.Lower.values {
			if cur, ok := w.value[t]; !ok || v < cur {
				w.value[t], w.bytes[t], w.dir[t] = v, g.Lower.bytes[t], g.LogDir
			}
		}
	}
	return w
}

// setConfig is the change that sets claim c's value on its topic, cur
// in place.
func (pl *protectionPlanner) setConfig(w lowerings, c ConfigClaim, cur *string) ConfigChange {
	return ConfigChange{LogDir: w.dir[c.Topic], Topic: c.Topic, Key: c.Key, Value: strPtr(c.Value), From: cur,
		Bytes: w.bytes[c.Topic], Config: pl.o.Snapshot.TopicConfig(c.Topic), Replicas: pl.po.replicasOf(c.Topic)}
}

// keepConfigClaims decides this agent's existing config claims: kept,
// lowered further, released, or dropped (an operator's value in place).
//
// Two-phase release (spec R8.5): a claim given up stays, releasing, until
// the value in place is read back as no longer the guard's (restored,
// changed by an operator, or the topic gone), or another live record
// holds the key (its release restores it).
func (pl *protectionPlanner) keepConfigClaims(w lowerings) []ConfigClaim {
	po, pp := pl.po, &pl.pp
	var out []ConfigClaim
	release := func(c ConfigClaim) {
		c.Releasing = true
		out = append(out, c)
		pp.ReleaseConfigs = append(pp.ReleaseConfigs, c)
	}
	heldElsewhere := pl.others.LiveConfigClaims()
	pl.keepReleasingConfigs(heldElsewhere, func(c ConfigClaim) { out = append(out, c) }, release)
	for _, c := range pl.me.ConfigClaims() {
		cur, read := po.TopicConfigs[c.Topic]
		if read && po.Records.GuardSet(c, cur) && !po.Records.RestoresOver(c, cur) {
			// Another claim's value is in place, made on an operator's
			// value newer than this claim's original (an operator changed
			// it between the two claims, unseen here): that value is the
			// one to restore.
			if other, ok := po.Records.ValueClaim(c.Topic, c.Key, *cur); ok {
				c.Orig = other.Orig
			}
		}
		c.Orig = po.Records.GuardOriginal(c)
		switch {
		case !read:
			// The topic is gone (deleted): so is its config; the claim
			// goes with it.
		case !po.Records.Live(po.BrokerID, c.Topic):
			// Lifted by a peer or an operator: released by them, and
			// by this agent while the guard's value is still in place.
			// Its own value in place, the claim stays (releasing) even
			// while another live record holds the key: it is what says
			// the value is the guard's and which original it lowered.
			if po.Records.GuardSet(c, cur) && (!heldElsewhere[[2]string{c.Topic, c.Key}] || c.Sets(cur)) {
				release(c)
			} else if pl.originalTaken(c, cur, read) {
				c.Releasing = true
				out = append(out, c)
			}
		case po.OperatorDropped[[3]string{c.Topic, c.Key, c.Value}] && !c.Sets(cur):
			// Dropped for an operator's change this episode, and back:
			// the write of the record without it failed, and the record
			// read (or written again from memory) still holds it.
			// Another claim's value in place since is not this one's to
			// keep: kept, it restored its own original over the
			// operator's newer value (found by the simulation, seed
			// 34521). Dropped again, not counted again.
		case !po.Records.GuardSet(c, cur) && ledger.SameValue(cur, c.Orig):
			// The operator's value is in place: the guard's change never
			// took (Kafka refused it, ResultRefused) or was undone. No
			// operator changed anything, and nothing is left to restore:
			// the claim leaves the record (spec R8.5: read back restored).
		case !po.Records.GuardSet(c, cur):
			pp.DroppedConfigs = append(pp.DroppedConfigs, ConfigChange{Topic: c.Topic, Key: c.Key, Value: cur, From: strPtr(c.Value)})
		case !pl.wantNothing && !pl.suppressed(c.Topic) && !w.keep[c.Topic] && po.CopyHeld[[3]string{c.Topic, c.Key, c.Value}]:
			// Taken over from a peer's copy within a lease: a later
			// write of its process may name a newer original
			// (localret_lost.go). Kept, restored once the hold ends.
			out = append(out, c)
		case pl.wantNothing || pl.suppressed(c.Topic) || !w.keep[c.Topic]:
			release(c)
		default:
			if v, ok := w.value[c.Topic]; ok && v < ledger.ParseIntOrMax(c.Value) && v < ledger.ParseIntOrMax(*cur) && !po.RefusedTopics[c.Topic] {
				// Lowered further: the earlier value stays the guard's
				// until the new one is in place.
				v = pl.distinctValue(c, v, min(ledger.ParseIntOrMax(c.Value), ledger.ParseIntOrMax(*cur)))
				c.Prev, c.Value = strPtr(c.Value), strconv.FormatInt(v, 10)
				pp.SetConfigs = append(pp.SetConfigs, pl.setConfig(w, c, cur))
			}
			out = append(out, c)
		}
	}
	return out
}

// keepReleasingConfigs decides this agent's claims being given up
// (keepConfigClaims): released, kept, or dropped (neither).
func (pl *protectionPlanner) keepReleasingConfigs(heldElsewhere map[[2]string]bool, keep, release func(ConfigClaim)) {
	po := pl.po
	for _, c := range pl.me.ReleasingConfigs() {
		cur, read := po.TopicConfigs[c.Topic]
		// Held elsewhere, the key is the other record's to restore, once
		// this claim's own value is handed back to it (ReleaseUnclaimed).
		// Over another claim's value made on a newer operator's value,
		// nothing is this claim's to restore: it leaves the record.
		held := heldElsewhere[[2]string{c.Topic, c.Key}]
		switch {
		case pl.originalTaken(c, cur, read):
			keep(c)
		case !read || !po.Records.RestoresOver(c, cur) || (held && !c.Sets(cur)):
		case held:
			if _, ok := po.Records.HandBackValue(c, cur); ok {
				release(c)
			} else {
				// Its own value in place and nothing to hand back (no
				// live claim made on its original): it stays, named,
				// until the other record's claims go, with no write or
				// release every pass meanwhile.
				keep(c)
			}
		default:
			release(c)
		}
	}
}

// originalTaken: another claim's value is in place, made on claim c's
// value taken for the operator's (Records.OriginalTaken). Given up or
// lifted, c stays in the record, releasing, and changes nothing: it is
// what names that value as the guard's and its original, until the
// other claim takes the original over (GuardOriginal) at its agent's
// next pass. Dropped, the other claim restored c's value for good
// (found by the simulation, seed 11605).
func (pl *protectionPlanner) originalTaken(c ConfigClaim, cur *string, read bool) bool {
	po := pl.po
	return read && po.Records.GuardSet(c, cur) && !c.Sets(cur) && po.Records.OriginalTaken(po.BrokerID, c)
}

// newConfigClaims makes the claims of the topics wanted lowered that
// this agent does not claim yet, and sets their values.
func (pl *protectionPlanner) newConfigClaims(w lowerings) []ConfigClaim {
	po := pl.po
	mine := map[string]bool{}
	for _, c := range pl.me.ConfigClaims() {
		mine[c.Topic] = true
	}
	var out []ConfigClaim
	for _, t := range slices.Sorted(maps.Keys(w.value)) {
		cur, read := po.TopicConfigs[t]
		if mine[t] || !read || pl.suppressed(t) || po.OperatorTopics[t] || po.RefusedTopics[t] {
			continue
		}
		v := w.value[t]
		if cur != nil {
			if n, err := strconv.ParseInt(*cur, 10, 64); err == nil && n >= 0 && v >= n {
				continue // already as low
			}
		}
		c := ConfigClaim{Topic: t, Key: LocalRetentionBytesKey, Orig: cur}
		// Another agent lowered it already: the operator's value is the
		// one that agent recorded.
		below := int64(math.MaxInt64)
		if cur != nil {
			if other, ok := po.Records.ValueClaim(t, LocalRetentionBytesKey, *cur); ok {
				c.Orig = other.Orig
			}
			if n, err := strconv.ParseInt(*cur, 10, 64); err == nil && n >= 0 {
				below = n
			}
		}
		c.Value = strconv.FormatInt(pl.distinctValue(c, v, below), 10)
		out = append(out, c)
		pl.pp.SetConfigs = append(pl.pp.SetConfigs, pl.setConfig(w, c, cur))
	}
	return out
}

// distinctValue is v, the value claim c wants, or the nearest value
// to it that no claim made on another operator's value sets: lower first
// (it frees as much or more), down to the topic's floor, then higher,
// under below (the value in place). Two claims with one value and
// different originals would leave the value in place ambiguous: a
// release, or a hand-back, would restore the wrong original over the
// operator's newer value (the simulation's tiered_shared, seed 3). v
// itself when every value in range clashes.
func (pl *protectionPlanner) distinctValue(c ConfigClaim, v, below int64) int64 {
	clash := func(x int64) bool {
		return pl.po.Records.OtherOriginalSets(c.Topic, c.Key, strconv.FormatInt(x, 10), c.Orig)
	}
	// Each value tried but the last is one a claim sets: the loops end
	// within as many steps as there are claims.
	floor := LocalRetentionFloor(pl.o.Snapshot.TopicConfig(c.Topic))
	for x := v; x >= floor; x-- {
		if !clash(x) {
			return x
		}
	}
	for x := v + 1; x < below; x++ {
		if !clash(x) {
			return x
		}
	}
	return v
}

// lowerCandidates lists the tiered topics whose local retention a pass
// may lower: those the guard may lower with a partition in a log dir at
// or above the restore bound (lowerFrom) whose goal is not held back.
// Observe reads their configs.
func (p Policy) lowerCandidates(o Observed) []string {
	set := map[string]bool{}
	from := p.lowerFrom()
	views := p.views(o)
	for i := range o.Snapshot.LogDirs {
		ld, v := &o.Snapshot.LogDirs[i], &views[i]
		if v.foreign || ld.Usage.Ratio() < from || len(v.holds(o)) > 0 {
			continue
		}
		for j := range ld.Partitions {
			if pt := ld.Partitions[j]; pt.Kind == agent.KindLive && pt.Tiered && !set[pt.Topic] && p.tieredLowerable(o, pt.Topic) {
				set[pt.Topic] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// configTopics lists the topics whose configs protection must read: those
// any record claims a config of, and the candidates.
func configTopics(recs Records, extra Record, cands []string) []string {
	set := map[string]bool{}
	for _, r := range append(valuesOf(recs.Agents), extra) {
		for _, c := range r.Configs {
			set[c.Topic] = true
		}
	}
	for _, t := range cands {
		set[t] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func strPtr(s string) *string { return &s }
