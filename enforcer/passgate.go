package enforcer

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// passGate lets the reconcile loop skip a pass that a new snapshot
// triggered when nothing that pass would decide on changed since the last
// pass ran and did nothing. The agent publishes a snapshot whenever a log
// dir's usage moves (every UsageInterval on a disk other programs write
// to), and a pass walks every partition: at 100k partitions that was most
// of the guard's idle CPU (issue 24).
//
// A pass is skipped only when all of these hold, so that it would plan
// nothing either:
//   - the last pass ran on a snapshot of the same agent.Snapshot.Generation
//     (same partitions, configs, holds, log dir errors), and that pass
//     planned nothing, failed nothing and verified no purge;
//   - every log dir's usage is on the same side of every threshold the
//     policy compares usage with (each band's From and Target, and each
//     less the hysteresis), with the same capacity basis;
//   - no log dir is in a band that frees (its needed bytes follow usage
//     exactly).
//
// Passes on the Interval ticker always run: what changes with time (the
// schedule, leases, evidence, staleness, a clock jump) and what is read
// from the cluster is seen there, as when no snapshot comes at all.
type passGate struct {
	settled bool   // the last pass planned and failed nothing
	gen     uint64 // its snapshot's Generation
	dirs    []dirUsageKey
}

// dirUsageKey is where a log dir's usage stands for the policy.
type dirUsageKey struct {
	path  string
	basis agent.CapacityBasis
	// above counts the policy's thresholds the usage is at or above.
	above int
}

// thresholds lists every usage ratio the policy compares usage with.
func (p Policy) thresholds() []float64 {
	h := p.HysteresisPoints / 100
	var out []float64
	for _, b := range p.Profile.Bands {
		out = append(out, b.From, b.From-h)
		if b.Target > 0 {
			out = append(out, b.Target, b.Target-h)
		}
	}
	return out
}

// usageKeys returns each log dir's usage key; frees is set when a log dir
// is in a band that frees (or its capacity is unknown).
func (p Policy) usageKeys(s *agent.Snapshot, dst []dirUsageKey) (keys []dirUsageKey, frees bool) {
	ts := p.thresholds()
	keys = dst[:0]
	for i := range s.LogDirs {
		ld := &s.LogDirs[i]
		u := ld.Usage.Ratio()
		k := dirUsageKey{path: ld.Path, basis: ld.Usage.Basis}
		for _, t := range ts {
			if u >= t {
				k.above++
			}
		}
		keys = append(keys, k)
		frees = frees || ld.Usage.CapacityBytes == 0 || p.Profile.freeingBand(p.Profile.BandAt(u)) >= 0
	}
	return keys, frees
}

// record notes the pass that just ran on s; settled: it planned nothing
// and nothing failed.
func (g *passGate) record(p Policy, s *agent.Snapshot, settled bool) {
	if s == nil || s.Generation == 0 {
		g.settled = false
		return
	}
	var frees bool
	g.dirs, frees = p.usageKeys(s, g.dirs)
	g.gen, g.settled = s.Generation, settled && !frees
}

// skip reports whether a pass on s may be skipped: see passGate.
// verifying: a purge's effect on the filesystem is being checked.
func (g *passGate) skip(p Policy, s *agent.Snapshot, verifying bool) bool {
	if !g.settled || verifying || s == nil || s.Generation == 0 || s.Generation != g.gen || len(s.LogDirs) != len(g.dirs) {
		return false
	}
	var buf [8]dirUsageKey
	keys, frees := p.usageKeys(s, buf[:0])
	if frees {
		return false
	}
	for i, k := range keys {
		if k != g.dirs[i] {
			return false
		}
	}
	return true
}
