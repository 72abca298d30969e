package enforcer

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Moves within a broker (JBOD, spec R3.8): when one log dir of the broker
// is in the move band and another has room, partitions go from the full
// dir to the roomy one with AlterReplicaLogDirs, largest cold partitions
// first, throttled by the broker config
// replica.alter.log.dirs.io.max.bytes.per.second, and only when the copy
// can finish before the full dir reaches the first purge band at its
// current growth. This file is the pure planner; jbod_apply.go runs it.

// MovePolicy is what the move planner needs of the configuration.
type MovePolicy struct {
	// From: a log dir at or over this usage ratio is relieved by moves.
	From float64
	// Target: moves from a dir stop once its usage after them would be
	// under this ratio; a destination takes a copy only while it stays
	// under it (so the copy never puts the destination in the move band).
	Target float64
	// PurgeAt: the usage ratio of the first band that purges unexpired
	// data. A move is planned only when it finishes before the source
	// reaches it.
	PurgeAt float64
	// RateBytesPerSecond: the throttle the moves run under (all moves of
	// the broker share it: Kafka's ReplicaAlterLogDirs threads are
	// throttled together).
	RateBytesPerSecond int64
	// ColdBytesPerSecond: a partition appended to at or under this rate is
	// cold. Cold partitions go first, largest first; a warm one is moved
	// only when its write rate is under half the throttle (it must catch
	// up), after every cold one.
	ColdBytesPerSecond float64
	// MaxMoves bounds the partitions one plan starts.
	MaxMoves int
}

// MoveDir is one log dir of the broker, as the planner sees it.
type MoveDir struct {
	Path          string
	CapacityBytes uint64
	UsedBytes     uint64
	// Online: the dir is readable, confirmed for this broker and its
	// capacity known. Only online dirs are sources or destinations.
	Online bool
	// GrowthBytesPerSecond: the dir's current net growth (forecast).
	GrowthBytesPerSecond float64
	// IncomingBytes: -future logs being copied into this dir now (a move
	// in flight; they grow until the swap).
	IncomingBytes int64
	// Moving: a partition of this dir is being moved (its -future log is
	// in another dir). The planner starts no new move from or to such a
	// dir until the ones in flight are done.
	Moving     bool
	Partitions []MoveCandidate
}

// MoveCandidate is a partition that could be moved.
type MoveCandidate struct {
	Topic     string
	Partition int32
	Bytes     int64
	// WriteBytesPerSecond: the observed append rate.
	WriteBytesPerSecond float64
}

// Move is one partition to move.
type Move struct {
	Topic     string
	Partition int32
	From, To  string
	Bytes     int64
	Cold      bool
}

// MoveSkip says why a dir over From gets no move.
type MoveSkip struct {
	Dir    string
	Reason string // one of the MoveSkip* reasons (a metric label)
}

// Reasons a dir in the move band gets no move (metric label values).
const (
	MoveSkipInFlight    = "in_flight"     // a move on the broker is running, or ended and the scan has not caught up
	MoveSkipNoRoom      = "no_room"       // no other dir of the broker can take a candidate
	MoveSkipTooSlow     = "too_slow"      // at the throttle the copy would end after the purge band
	MoveSkipNoCandidate = "no_candidate"  // nothing to move (all hot, held, or none)
	MoveSkipAtPurge     = "at_purge_band" // already at the purge band: the move rung is past
)

// MoveSkipReasons lists every skip reason, for metrics.
func MoveSkipReasons() []string {
	return []string{MoveSkipInFlight, MoveSkipNoRoom, MoveSkipTooSlow, MoveSkipNoCandidate, MoveSkipAtPurge}
}

// MovePlan is what the planner decided.
type MovePlan struct {
	Moves []Move
	// Duration: how long the planned copies take at the throttle.
	Duration time.Duration
	Skipped  []MoveSkip
}

// Bytes is the total of the planned moves.
func (p MovePlan) Bytes() int64 {
	var n int64
	for _, m := range p.Moves {
		n += m.Bytes
	}
	return n
}

// PlanMoves plans the moves of one broker's log dirs. It is pure.
//
// For each online dir at or over From (fullest first) whose moves are not
// already running, candidates are taken largest cold first, then warm ones
// slower than half the throttle, until the dir's usage minus the bytes
// moved is under Target. Each goes to the other online dir, not itself in
// the move band nor moving, with the most room left under Target after the
// whole copy, what the copy grows by until its swap (Kafka deletes nothing
// of a partition being moved: agent.HeldMoving), the dir's own growth and
// the copies already coming in. The plan for a source is kept only when
// every copy planned so far on the broker ends (at the throttle, one after
// the other) before the source reaches PurgeAt at its growth plus the
// moved partitions' appends (their retention stops too); otherwise
// candidates are dropped from the end until it does.
func PlanMoves(dirs []MoveDir, pol MovePolicy) MovePlan {
	if pol.RateBytesPerSecond <= 0 {
		return MovePlan{}
	}
	mp := &movePlanner{dirs: dirs, pol: pol, rate: float64(pol.RateBytesPerSecond), incoming: map[string]float64{}}
	mp.order = make([]int, 0, len(dirs))
	for i := range dirs {
		mp.order = append(mp.order, i)
	}
	slices.SortStableFunc(mp.order, func(a, b int) int {
		return cmp.Compare(ratioOf(dirs[b]), ratioOf(dirs[a]))
	})
	anyMoving := false
	for _, d := range dirs {
		anyMoving = anyMoving || d.Moving || d.IncomingBytes > 0
	}
	plan := &mp.plan
	for _, si := range mp.order {
		src := dirs[si]
		if !src.Online || ratioOf(src) < pol.From {
			continue
		}
		if ratioOf(src) >= pol.PurgeAt {
			plan.Skipped = append(plan.Skipped, MoveSkip{src.Path, MoveSkipAtPurge})
			continue
		}
		if anyMoving {
			plan.Skipped = append(plan.Skipped, MoveSkip{src.Path, MoveSkipInFlight})
			continue
		}
		cands := candidates(src, pol)
		if len(cands) == 0 {
			plan.Skipped = append(plan.Skipped, MoveSkip{src.Path, MoveSkipNoCandidate})
			continue
		}
		picked, pickedBytes, reason := mp.pick(si, cands)
		if len(picked) == 0 {
			plan.Skipped = append(plan.Skipped, MoveSkip{src.Path, reason})
			continue
		}
		plan.Moves = append(plan.Moves, picked...)
		mp.queued += pickedBytes
	}
	plan.Duration = time.Duration(mp.queued / mp.rate * float64(time.Second))
	return *plan
}

// movePlanner is one PlanMoves call: the broker's dirs, fullest first
// (order), and what the plan holds so far.
type movePlanner struct {
	dirs     []MoveDir
	order    []int // indexes of dirs, fullest first
	pol      MovePolicy
	rate     float64
	incoming map[string]float64 // planned incoming bytes per destination (this plan's copies)
	queued   float64            // bytes of every move planned so far: they share the throttle
	plan     MovePlan
}

// pick takes the source dirs[si]'s candidates in order until its usage
// minus the bytes picked is under Target, each copy ending before the
// source reaches PurgeAt and landing where it fits. With none picked, the
// reason is why (no_room or too_slow).
func (mp *movePlanner) pick(si int, cands []MoveCandidate) (picked []Move, pickedBytes float64, reason string) {
	src, pol := mp.dirs[si], mp.pol
	need := float64(src.UsedBytes) - pol.Target*float64(src.CapacityBytes)
	var pickedWrite float64
	noRoom, tooSlow := false, false
	for _, c := range cands {
		if pickedBytes >= need || (pol.MaxMoves > 0 && len(mp.plan.Moves)+len(picked) >= pol.MaxMoves) {
			break
		}
		// Copy time of everything queued so far plus this one.
		end := (mp.queued + pickedBytes + float64(c.Bytes)) / (mp.rate - c.WriteBytesPerSecond)
		if !beforePurge(src, pol, pickedWrite+c.WriteBytesPerSecond, end) {
			tooSlow = true
			continue
		}
		dest := mp.destination(si, c, end)
		if dest == "" {
			noRoom = true
			continue
		}
		mp.incoming[dest] += float64(c.Bytes) + c.WriteBytesPerSecond*end
		picked = append(picked, Move{Topic: c.Topic, Partition: c.Partition, From: src.Path, To: dest,
			Bytes: c.Bytes, Cold: c.WriteBytesPerSecond <= pol.ColdBytesPerSecond})
		pickedBytes += float64(c.Bytes)
		pickedWrite += c.WriteBytesPerSecond
	}
	reason = MoveSkipNoRoom
	if tooSlow && !noRoom {
		reason = MoveSkipTooSlow
	}
	return picked, pickedBytes, reason
}

// destination is the online dir other than dirs[si], not in the move band
// nor moving, with the most room left under Target after taking c (its
// copy, what it grows by until end, the dir's own growth and the copies
// already coming in); "" when none has room.
func (mp *movePlanner) destination(si int, c MoveCandidate, end float64) string {
	dest := ""
	best := 0.0
	for _, di := range mp.order {
		d := mp.dirs[di]
		if di == si || !d.Online || d.Moving || ratioOf(d) >= mp.pol.From {
			continue
		}
		takes := float64(c.Bytes) + c.WriteBytesPerSecond*end + math.Max(d.GrowthBytesPerSecond, 0)*end +
			float64(d.IncomingBytes) + mp.incoming[d.Path]
		room := mp.pol.Target*float64(d.CapacityBytes) - float64(d.UsedBytes) - takes
		if room >= 0 && (dest == "" || room > best) {
			dest, best = d.Path, room
		}
	}
	return dest
}

// candidates are a source's partitions that may move, in the order they
// are tried: cold ones largest first, then warm ones (under half the
// throttle) largest first.
func candidates(src MoveDir, pol MovePolicy) []MoveCandidate {
	var cold, warm []MoveCandidate
	for _, c := range src.Partitions {
		switch {
		case c.Bytes <= 0:
		case c.WriteBytesPerSecond <= pol.ColdBytesPerSecond:
			cold = append(cold, c)
		case c.WriteBytesPerSecond < float64(pol.RateBytesPerSecond)/2:
			warm = append(warm, c)
		}
	}
	bySize := func(a, b MoveCandidate) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	}
	slices.SortFunc(cold, bySize)
	slices.SortFunc(warm, bySize)
	return append(cold, warm...)
}

// beforePurge reports whether the source stays under PurgeAt for secs
// seconds, growing at its growth plus the moved partitions' appends.
func beforePurge(src MoveDir, pol MovePolicy, movedWrite, secs float64) bool {
	growth := math.Max(src.GrowthBytesPerSecond, 0) + movedWrite
	return float64(src.UsedBytes)+growth*secs < pol.PurgeAt*float64(src.CapacityBytes)
}

func ratioOf(d MoveDir) float64 {
	if d.CapacityBytes == 0 {
		return 0
	}
	return float64(d.UsedBytes) / float64(d.CapacityBytes)
}

// MoveDirs builds the planner's view of the guarded broker's log dirs from
// a snapshot: growth by dir path (the forecast's net growth; missing means
// 0) and which dirs are confirmed for the broker (spec R7.1). Candidates
// are live partitions that Kafka's retention visits (not held), not
// tiered (their local log is freed by local retention instead) and not
// compact-only (the cleaner, not time, bounds them). A -future log marks
// its dir as receiving and the live log's dir as moving. Bytes waiting
// for deletion (-delete directories, *.deleted files) count as free.
func MoveDirs(snap *agent.Snapshot, growth map[string]float64, confirmed func(path string) bool) []MoveDir {
	out := make([]MoveDir, 0, len(snap.LogDirs))
	futureOf := map[agent.TopicPartition]bool{}
	for i := range snap.LogDirs {
		for _, p := range snap.LogDirs[i].Partitions {
			if p.Kind == agent.KindFuture {
				futureOf[agent.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = true
			}
		}
	}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		// A moved partition's old log is renamed -delete at the swap and
		// removed after file.delete.delay.ms (60 s by default): the space
		// is as good as free, and counting it would move a second
		// partition for the same excess.
		used := ld.Usage.UsedBytes
		if p := uint64(max(ld.PendingDeleteBytes, 0)); p < used {
			used -= p
		}
		d := MoveDir{
			Path: ld.Path, CapacityBytes: ld.Usage.CapacityBytes, UsedBytes: used,
			Online:               ld.Err == nil && ld.Usage.CapacityBytes > 0 && confirmed(ld.Path),
			GrowthBytesPerSecond: growth[ld.Path],
		}
		for _, p := range ld.Partitions {
			tp := agent.TopicPartition{Topic: p.Topic, Partition: p.Partition}
			switch {
			case p.Kind == agent.KindFuture:
				d.IncomingBytes += p.DiskBytes
			case p.Kind != agent.KindLive:
			case futureOf[tp]:
				d.Moving = true
			case p.Held != agent.ReasonNone || p.Tiered || isInternal(p.Topic):
			default:
				cfg := snap.TopicConfig(p.Topic)
				if !cfg.CleanupPolicy.Delete {
					continue
				}
				d.Partitions = append(d.Partitions, MoveCandidate{Topic: p.Topic, Partition: p.Partition,
					Bytes: p.DiskBytes, WriteBytesPerSecond: p.WriteRateBytesPerSecond})
			}
		}
		out = append(out, d)
	}
	return out
}

// BrokerMoveDirs is MoveDirs for the guarded broker, held to what the
// broker says of its log dirs and replicas (ev, DescribeLogDirs; spec
// R7.1): a dir is online only when confirmed, and brokerPath maps each
// confirmed dir to the broker's path for it. A candidate stays only when
// the broker keeps it in that same dir and moves it nowhere. The scan and
// the broker disagree while a move ends: Kafka renames the -future log
// into place and then the old log to -delete, so a scan between the two,
// or of the source before the swap and of the destination after it,
// shows the moved partition live in its old dir with no -future log
// anywhere, and the old dir's usage counts bytes about to be freed. Such
// a dir counts as moving, and no move starts on the broker until a scan
// agrees (found by the real-cluster test: the same partition was moved
// twice). A move the broker reports in flight marks its source and
// destination moving though the scan has not seen its -future log yet.
func BrokerMoveDirs(snap *agent.Snapshot, growth map[string]float64, ev agent.IdentityEvidence) (dirs []MoveDir, brokerPath map[string]string) {
	brokerPath = map[string]string{}
	for _, id := range agent.CheckIdentity(snap.LogDirs, ev) {
		if id.Confirmed() {
			brokerPath[id.Path] = id.BrokerPath
		}
	}
	dirs = MoveDirs(snap, growth, func(path string) bool { return brokerPath[path] != "" })
	agreeWithBroker(dirs, ev, brokerPath)
	return dirs, brokerPath
}

// agreeWithBroker drops the candidates the broker does not keep where the
// scan found them and marks moving the dirs of moves the scan has not
// seen start or end (BrokerMoveDirs).
func agreeWithBroker(dirs []MoveDir, ev agent.IdentityEvidence, brokerPath map[string]string) {
	where := map[agent.TopicPartition]string{}  // the broker's dir of each replica
	future := map[agent.TopicPartition]string{} // the broker's dir of each -future log
	for _, d := range ev.LogDirs {
		for _, tp := range d.Partitions {
			where[tp] = d.Path
		}
		for _, tp := range d.Future {
			future[tp] = d.Path
		}
	}
	byBroker := map[string]int{}
	for i := range dirs {
		if bp := brokerPath[dirs[i].Path]; bp != "" {
			byBroker[bp] = i
		}
	}
	for tp, to := range future {
		for _, bp := range []string{to, where[tp]} {
			if i, ok := byBroker[bp]; ok {
				dirs[i].Moving = true
			}
		}
	}
	for i := range dirs {
		d := &dirs[i]
		var kept []MoveCandidate
		for _, c := range d.Partitions {
			tp := agent.TopicPartition{Topic: c.Topic, Partition: c.Partition}
			at, known := where[tp]
			switch {
			case future[tp] != "" || (known && at != brokerPath[d.Path]):
				d.Moving = true // moving, or moved since the scan
			case known:
				kept = append(kept, c)
			}
			// Unknown to the broker: a topic deleted or not yet reported.
		}
		d.Partitions = kept
	}
}

// isInternal: Kafka's and the guard's own topics stay where Kafka put
// them.
func isInternal(topic string) bool {
	return len(topic) > 2 && topic[:2] == "__"
}

// ReplicaDir is one replica of the broker as DescribeLogDirs reports it.
type ReplicaDir struct {
	Topic     string
	Partition int32
	Dir       string
	Bytes     int64
	// Future: the -future log of a move in flight (the copy in Dir).
	Future bool
}
