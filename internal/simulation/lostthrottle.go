package simulation

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// lostThrottle is a throttle claim (a mover's or a reassigner's) the
// ownership topic lost. Only the process that made it remembers it: the
// mover and the reassigner write their own claim back once the ledger is
// back (enforcer/jbod_run.go, reassign_run.go: restoreOwn); no peer does.
// While that process lives, the claim still holds its keys (I2). When it
// dies (or is uninstalled) first, nothing names what the claim set or the
// operator's value it replaced: the values are unattributed (R8.4, for an
// operator to decide, docs/operating.md), and I1 and I2 waive them.
type lostThrottle struct {
	// holder: the agent whose live process remembers the claim ("":
	// none).
	holder string
	// vals: each value the claim set, by ThrottleValues' id.
	vals map[string]string
}

// loseThrottles notes the throttle claims the topic holds as it is lost
// (for a reshaped one being repaired, what its partition 0 took).
func (s *sim) loseThrottles() {
	if s.relief == nil {
		return
	}
	if s.lost.throttles == nil {
		s.lost.throttles = map[string]*lostThrottle{}
	}
	recs, err := s.c.ThrottleClaims()
	if err != nil {
		recs = s.c.Partition0()
	}
	holder := func(key string) string {
		for _, a := range s.agents {
			if !a.enabled || a.deadTill >= 0 || s.uninstalled {
				continue
			}
			for _, t := range s.relief.stores[a.name] {
				if t.knows[key] {
					return a.name
				}
			}
		}
		return ""
	}
	for id, c := range recs.Throttles {
		k := ledger.ThrottleKey(id)
		s.lost.throttles[k] = &lostThrottle{holder: holder(k),
			vals: map[string]string{fmt.Sprintf("broker %d %s", id, enforcer.ThrottleKey): c.Value}}
	}
	for o, c := range recs.Reassigns {
		k := ledger.ReassignKey(o)
		l := &lostThrottle{holder: holder(k), vals: map[string]string{}}
		for _, e := range c.Entries {
			l.vals[e.Resource+" "+e.Name+" "+e.Key] = e.Value
		}
		s.lost.throttles[ledger.ReassignKey(o)] = l
	}
}

// forgetThrottles: agent a's process dies with what it remembered.
func (s *sim) forgetThrottles(a *agentSim) {
	for _, l := range s.lost.throttles {
		if l.holder == a.name {
			l.holder = ""
		}
	}
}

// settleThrottles, after every step: a lost claim back in the topic, or
// none of whose values is left in place, is done with; one no live
// process remembers is unattributed. A claim under the same key is the
// lost one back only while a live process remembers it (its holder
// writes it back): with none, it is a new process's claim, made after
// the loss, which found the lost claim's value in place, claimed by no
// record, and took it for the operator's (R8.6) to put back at its
// release (seed 18751: agent 3's move throttle claim went with the topic
// while agent 3 was dead; restarted, it claimed the broker again with
// its own 20971520 as the value to restore, and I1 took the value left
// after the moves for a guard's instead of unattributed).
func (s *sim) settleThrottles() {
	if len(s.lost.throttles) == 0 {
		return
	}
	recs, err := s.c.ThrottleClaims()
	vals := s.c.ThrottleValues()
	for _, k := range slices.Sorted(maps.Keys(s.lost.throttles)) {
		l := s.lost.throttles[k]
		if err == nil && l.holder != "" {
			if id, ok := ledger.ParseThrottleKey(k); ok {
				if _, back := recs.Throttles[id]; back {
					delete(s.lost.throttles, k)
					continue
				}
			}
			if o, ok := ledger.ParseReassignKey(k); ok {
				if _, back := recs.Reassigns[o]; back {
					delete(s.lost.throttles, k)
					continue
				}
			}
		}
		left := false
		for id, v := range l.vals {
			left = left || vals[id] == v
		}
		if !left {
			delete(s.lost.throttles, k)
			continue
		}
		if l.holder != "" {
			continue
		}
		r := s.relief
		for id, v := range l.vals {
			if r.unattributed == nil {
				r.unattributed = map[string]string{}
			}
			r.unattributed[id] = v
			if op, ok := r.op[id]; ok && vals[id] == v {
				// The operator's value the claim replaced is named by no
				// record any more: it does not come back (I2 waives it).
				delete(r.op, id)
				s.tracef("the operator's %s=%s is lost with the claim %s", id, op, k)
			}
		}
		s.tracef("throttle claim %s lost with the ledger and remembered by no live agent: its values are unattributed (R8.4)", k)
		delete(s.lost.throttles, k)
	}
}

// throttleRemembered: the move throttle claim of broker id is lost with
// the ledger, and its owner's live process remembers it.
func (s *sim) throttleRemembered(id int32) bool {
	l, ok := s.lost.throttles[ledger.ThrottleKey(id)]
	return ok && l.holder != ""
}

// trackedRelief is the ledger store of one relief rung (the mover, or
// the reassigner) of an agent process: it follows whether the rung knows
// its own throttle claim (read back as its own, or written, and not
// removed since), as the rung remembers it.
type trackedRelief struct {
	*simbroker.ReliefAdmin
	name  string
	own   string // the rung's claim's key
	knows map[string]bool
}

func newTrackedRelief(a *simbroker.ReliefAdmin, name, own string) *trackedRelief {
	return &trackedRelief{ReliefAdmin: a, name: name, own: own, knows: map[string]bool{}}
}

func (t *trackedRelief) LoadRecords(ctx context.Context) (ledger.Records, error) {
	recs, err := t.ReliefAdmin.LoadRecords(ctx)
	if err != nil {
		return recs, err
	}
	for id, c := range recs.Throttles {
		if ledger.ThrottleKey(id) == t.own {
			t.knows[t.own] = c.Instance == "" || c.Instance == t.name
		}
	}
	for o, c := range recs.Reassigns {
		k := ledger.ReassignKey(o)
		switch {
		case k == t.own:
			t.knows[t.own] = c.Instance == "" || c.Instance == t.name
		case t.knows[k] && (!c.Releasing || c.Instance != t.name):
			// A peer's claim this rung was releasing, read back as
			// another process's (renewed by its owner, or taken over by
			// another peer): the reassigner forgets it
			// (Reassigner.restoreReleasing), and writes it back no more
			// (ledger_delete seed 1279: agent 3 had marked broker 2's
			// claim releasing, agent 1 finished the release, agent 2
			// wrote its claim back and started another reassignment
			// under it; the topic went while agent 2 was dead, and
			// agent 3, taken for its holder, remembered nothing).
			delete(t.knows, k)
		}
	}
	return recs, nil
}

func (t *trackedRelief) StoreThrottle(ctx context.Context, c ledger.ThrottleClaim) error {
	err := t.ReliefAdmin.StoreThrottle(ctx, c)
	if err == nil {
		t.knows[ledger.ThrottleKey(c.BrokerID)] = true
	}
	return err
}

func (t *trackedRelief) DeleteThrottle(ctx context.Context, id int32) error {
	err := t.ReliefAdmin.DeleteThrottle(ctx, id)
	if err == nil {
		delete(t.knows, ledger.ThrottleKey(id))
	}
	return err
}

func (t *trackedRelief) StoreReassign(ctx context.Context, c ledger.ReassignClaim) error {
	err := t.ReliefAdmin.StoreReassign(ctx, c)
	if err == nil {
		t.knows[ledger.ReassignKey(c.Owner)] = true
	}
	return err
}

func (t *trackedRelief) DeleteReassign(ctx context.Context, owner string) error {
	err := t.ReliefAdmin.DeleteReassign(ctx, owner)
	if err == nil {
		delete(t.knows, ledger.ReassignKey(owner))
	}
	return err
}
