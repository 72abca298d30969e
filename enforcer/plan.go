package enforcer

import (
	"cmp"
	"container/heap"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Deletion is one DeleteRecords on one partition: the log start offset
// moves to Offset, the base offset of the first segment kept.
type Deletion struct {
	LogDir    string
	Topic     string
	Partition int32
	Action    Action
	Band      string
	// FromOffset is the log start offset before.
	FromOffset int64
	// Offset is the new log start offset: a segment boundary.
	Offset int64
	// HighWatermark when planned: Offset never passes it.
	HighWatermark int64
	Segments      int
	// Bytes the segments take on disk.
	Bytes int64
	// UnexpiredBytes: bytes of segments not yet eligible by retention
	// (data loss by design, R3.6).
	UnexpiredBytes int64
	// Reason: the eligibility reason of the first segment for
	// scheduled/periodic deletions, "purge" otherwise.
	Reason string
	// Oldest is the largest timestamp of the first segment deleted.
	Oldest time.Time
}

// Plan is what a pass does.
type Plan struct {
	Deletions  []Deletion
	Protection ProtectionPlan
	// WouldProtect: in observe mode, the protection plan enforcing would
	// follow (reported, not performed; protect_plan.go).
	WouldProtect *ProtectionPlan
	// Held lists log dirs whose freeing goal is blocked, with the reasons.
	Held map[string][]BlockReason
	// HeldTopics lists the topics skipped in log dirs that free space,
	// with the reasons (DirGoal.HeldTopics), sorted by log dir and topic.
	HeldTopics []TopicHold
}

// TopicHold is a topic whose deletions are held back in one log dir.
type TopicHold struct {
	LogDir  string
	Topic   string
	Reasons []BlockReason
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool {
	return len(p.Deletions) == 0 && p.Protection.Empty() && (p.WouldProtect == nil || p.WouldProtect.Empty())
}

// PlanActions computes the actions that move observed towards desired. It
// is pure: deletions for the log dirs whose freeing goal is not held back
// (skipping held topics), and, when the protection state was observed,
// the protection changes.
func PlanActions(o Observed, goals []DirGoal) Plan {
	var plan Plan
	if o.Snapshot == nil {
		return plan
	}
	for _, g := range goals {
		if g.Free.Action == "" {
			continue
		}
		if len(g.Blocked) > 0 {
			if plan.Held == nil {
				plan.Held = map[string][]BlockReason{}
			}
			plan.Held[g.LogDir] = g.Blocked
			continue
		}
		for _, t := range slices.Sorted(maps.Keys(g.HeldTopics)) {
			plan.HeldTopics = append(plan.HeldTopics, TopicHold{LogDir: g.LogDir, Topic: t, Reasons: g.HeldTopics[t]})
		}
		for _, ld := range o.Snapshot.LogDirs {
			if ld.Path == g.LogDir {
				plan.Deletions = append(plan.Deletions, planDir(o, ld, g)...)
			}
		}
	}
	if o.Protection != nil {
		plan.Protection = planProtection(o, goals)
	}
	if o.WouldProtect != nil {
		would := o
		would.Protection = o.WouldProtect
		wp := planProtection(would, goals)
		plan.WouldProtect = &wp
	}
	return plan
}

// candidate is a segment the pass may delete.
type candidate struct {
	part *partState
	seg  agent.Segment
	end  int64 // base offset of the next segment: the new log start offset
	// unexpired: the bytes of it that are not past retention (counted
	// against the purge limits; eligible by time while the clock is in
	// doubt counts as not past retention).
	unexpired int64
}

type partState struct {
	p        *agent.Partition
	lso      int64
	hw       int64
	queue    []candidate
	chosen   []candidate
	unexpire int64
}

// planDir chooses the segments of one log dir: each partition's
// candidates (queuePartition), the oldest across partitions until enough
// is freed (choose), then one deletion per partition.
func planDir(o Observed, ld agent.LogDir, g DirGoal) []Deletion {
	eligibleOnly := g.Free.Action == ActionScheduled || g.Free.Action == ActionPeriodic
	// Bytes Kafka frees from tiered topics whose local retention the pass
	// lowers (R7.4) come first: they lose no record.
	already := ld.PendingDeleteBytes + g.Lower.freed + tieredPending(o, &ld)
	var parts []*partState
	for i := range ld.Partitions {
		p := ld.Partitions[i]
		if p.Kind != agent.KindLive || len(p.Segments) < 2 {
			continue
		}
		ps, leaving := queuePartition(o, g, p, eligibleOnly)
		already += leaving
		if len(ps.queue) > 0 {
			parts = append(parts, ps)
		}
	}
	need := int64(math.MaxInt64)
	if g.Free.Target > 0 {
		need = needBytes(ld, g.Free.Target, already)
	}
	// Unexpired data is purged (R7.3) while the caps leave room (the
	// segment that reaches a cap is the last: caps are crossed by at most
	// one segment) and while usage is above the target plus the bytes
	// other data explains beyond its allowance.
	capLeft, ownNeed := int64(math.MaxInt64), int64(math.MaxInt64)
	if g.Purge.Limited && !eligibleOnly {
		capLeft, ownNeed = g.Purge.Unexpired, need-g.Purge.OtherExcess
	}
	choose(parts, need, capLeft, ownNeed)
	var out []Deletion
	for _, ps := range parts {
		if len(ps.chosen) == 0 {
			continue
		}
		out = append(out, ps.deletion(ld.Path, g, eligibleOnly))
	}
	slices.SortFunc(out, func(a, b Deletion) int {
		return cmp.Or(a.Oldest.Compare(b.Oldest), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// queuePartition lists, oldest first, the segments of a live partition
// the pass may delete, and returns the bytes of its segments wholly below
// the log start offset (on their way out: the broker removes them at its
// next retention check, unless its retention does not run on the
// partition, p.Held).
func queuePartition(o Observed, g DirGoal, p *agent.Partition, eligibleOnly bool) (ps *partState, leaving int64) {
	off, ok := o.Offsets[TopicPartition{p.Topic, p.Partition}]
	lso, hw := p.LogStartOffset, p.HighWatermark
	if ok {
		lso, hw = max(lso, off.LogStart), off.HighWatermark
	}
	ps = &partState{p: p, lso: lso, hw: hw}
	for j := 0; j < len(p.Segments)-1 && p.Held == agent.ReasonNone; j++ {
		if p.Segments[j+1].BaseOffset <= lso {
			leaving += p.Segments[j].DiskBytes
		}
	}
	if !ok || hw < 0 || !deletable(o.Snapshot, p) || len(g.HeldTopics[p.Topic]) > 0 {
		return ps, leaving
	}
	if g.Free.Action == ActionPurgeFraction && o.FractionDone[TopicPartition{p.Topic, p.Partition}] {
		return ps, leaving // one purge_fraction pass per partition per interval
	}
	limit := int64(math.MaxInt64)
	if g.Free.Action == ActionPurgeFraction {
		limit = lso + int64(math.Floor(g.Free.Fraction*float64(hw-lso)))
	}
	// The clock gate (R7.5): deletions by retention time held back.
	clockHeld := len(g.TimeBlocked) > 0 || len(g.TimeHeldTopics[p.Topic]) > 0
	floor := len(p.Segments) - 1
	if g.Purge.Limited {
		floor = floorIndex(p, g.Purge)
	}
	for j := 0; j < len(p.Segments)-1; j++ { // never the open segment
		s, end := p.Segments[j], p.Segments[j+1].BaseOffset
		if end <= lso {
			continue
		}
		if end > hw || end > limit {
			break // never past the high watermark; fraction cap
		}
		doubt := clockHeld && timeBased(s)
		if eligibleOnly && (s.State != agent.StateEligible || s.Reason == agent.ReasonLogStartOffset || doubt) {
			break // Kafka deletes an unbroken run of oldest segments
		}
		c := candidate{part: ps, seg: s, end: end}
		switch {
		case doubt:
			c.unexpired = s.DiskBytes
		case s.State != agent.StateEligible:
			c.unexpired = max(s.DiskBytes-s.ExpiredBytes, 0)
		}
		if !eligibleOnly && j >= floor && c.unexpired > 0 {
			break // a partition's newest data is never purged (R7.3)
		}
		ps.queue = append(ps.queue, c)
	}
	return ps, leaving
}

// choose takes the oldest candidates across partitions until need bytes
// are chosen: a merge of the per-partition queues by largest timestamp,
// so each partition loses an unbroken prefix. Unexpired bytes are taken
// while capLeft and ownNeed (the caps' room, the bytes still to free
// beyond what other data explains) are above zero.
func choose(parts []*partState, need, capLeft, ownNeed int64) {
	h := &candHeap{}
	for _, ps := range parts {
		heap.Push(h, ps)
	}
	for need > 0 && h.Len() > 0 {
		ps := heap.Pop(h).(*partState)
		c := ps.queue[0]
		if c.unexpired > 0 && (capLeft <= 0 || ownNeed <= 0) {
			continue // the partition stops here: an unbroken prefix only
		}
		capLeft -= c.unexpired
		ownNeed -= c.seg.DiskBytes
		ps.queue = ps.queue[1:]
		ps.chosen = append(ps.chosen, c)
		ps.unexpire += c.unexpired
		need -= c.seg.DiskBytes
		if len(ps.queue) > 0 {
			heap.Push(h, ps)
		}
	}
}

// deletion is the DeleteRecords of the partition's chosen segments.
func (ps *partState) deletion(logDir string, g DirGoal, eligibleOnly bool) Deletion {
	d := Deletion{
		LogDir: logDir, Topic: ps.p.Topic, Partition: ps.p.Partition,
		Action: g.Free.Action, Band: g.Band.Name,
		FromOffset: ps.lso, Offset: ps.chosen[len(ps.chosen)-1].end, HighWatermark: ps.hw,
		Segments: len(ps.chosen), UnexpiredBytes: ps.unexpire,
		Oldest: ps.chosen[0].seg.LargestTimestamp(),
	}
	for _, c := range ps.chosen {
		d.Bytes += c.seg.DiskBytes
	}
	d.Reason = "purge"
	if eligibleOnly {
		d.Reason = ps.chosen[0].seg.Reason.String()
	}
	return d
}

// candHeap orders partitions by their next candidate's age.
type candHeap []*partState

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	a, b := h[i].queue[0], h[j].queue[0]
	return cmp.Or(a.seg.LargestTimestamp().Compare(b.seg.LargestTimestamp()),
		cmp.Compare(a.part.p.Topic, b.part.p.Topic),
		cmp.Compare(a.part.p.Partition, b.part.p.Partition)) < 0
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(*partState)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
