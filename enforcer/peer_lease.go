package enforcer

import "time"

// A peer's throttle claim (the mover's and the reassigner's) is restored
// once this process has seen it unrenewed for its lease. Like the
// protection records' leases (spec R8.1, R8.5), that wait runs on this
// process's monotonic clock, never on its wall clock: a wall clock gone
// back would keep a dead claim for as long as it went back, one gone
// ahead would expire a live claim at once (found by the simulation, seed
// 14649: agent-1b first saw broker 2's claim with its clock 5 minutes
// ahead; the clocks agreed again and the claim, whose owner was done
// with it, was kept 5 minutes past its lease, written back from memory
// by agent-1b after each of its owner's removals).

// peerSeen is a peer's claim as this process first saw it with a renewal.
type peerSeen struct {
	renewed time.Time     // the claim's Renewed when first seen so
	at      time.Duration // when this process first saw it so (monotonic)
}

// monotonicReader reads a Clock's monotonic time: MonotonicClock.Elapsed,
// or, for a Clock without it, the time since its first reading (Go's
// monotonic reading of Now when the clock's times carry it; a test
// clock's never jump).
type monotonicReader struct {
	origin time.Time
}

func (m *monotonicReader) read(c Clock) time.Duration {
	if mc, ok := c.(MonotonicClock); ok {
		return mc.Elapsed()
	}
	now := c.Now()
	if m.origin.IsZero() {
		m.origin = now
	}
	return now.Sub(m.origin)
}

// leaseRunOut reports whether the claim under k, renewed at renewed, has
// been seen so for lease by mono (this process's monotonic reading); a
// renewal not seen before restarts the count.
func leaseRunOut[K comparable](peers map[K]peerSeen, k K, renewed time.Time, lease, mono time.Duration) bool {
	seen, ok := peers[k]
	if !ok || !seen.renewed.Equal(renewed) {
		peers[k] = peerSeen{renewed: renewed, at: mono}
		return false
	}
	return mono-seen.at >= lease
}

// renewDue reports whether an own throttle claim last renewed at renewed
// is renewed now: a third of its lease has passed on the wall clock, or
// the wall clock reads before the renewal (it went back; waiting for it
// to catch up would leave peers, who time the claim on their monotonic
// clocks, to restore a claim still in use).
func renewDue(now, renewed time.Time, lease time.Duration) bool {
	return now.Sub(renewed) > lease/3 || now.Before(renewed)
}
