package simulation

import (
	"context"
	"fmt"
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

// Relief: every agent also runs the move rung (enforcer.Mover; broker 3
// has a second log dir) and the reassign rung (enforcer.Reassigner, with
// enforcer.relief.reassign on), and the operator sets and removes its own
// throttle values. The throttle claims (throttle-broker-<id>,
// throttle-reassign-<owner>) are checked:
//
//   - I1 (relief): once faults stop, no throttle value the guard set and
//     no throttle claim outlives the last move or reassignment in flight
//     by more than a lease plus three passes;
//   - I2 (relief): an operator's replication throttle values are never
//     changed or removed; its move throttle value is in place whenever no
//     claim holds the broker's key.
//
// The relief calls draw their faults (the call classes' windows) from a
// random source of their own, so adding the class leaves the fault stream
// of the other calls as it was.
const Relief Class = "relief"

// jbodBroker has a second log dir the mover may fill.
const jbodBroker = 3

// Operator throttle values (distinct from any the guard sets).
const (
	opReplicationRate = "777"
	opMoveRate        = "555"
)

type reliefSim struct {
	rng       *rand.Rand
	movers    map[string]*enforcer.Mover
	reassign  map[string]*enforcer.Reassigner
	started   map[string]int // the agent's since when its rungs were built
	op        map[string]string
	lastNeed  int
	lastFault int
	lifted    bool
	// unattributed: the values of throttle claims lost with the ledger
	// and remembered by no live agent (lostthrottle.go), by id.
	unattributed map[string]string
	// stores: each agent process's ledger store (lostthrottle.go).
	stores map[string][]*trackedRelief
}

// reliefOn builds the relief world once (nil without the class).
func (s *sim) reliefOn() *reliefSim {
	if !s.classes[Relief] {
		return nil
	}
	if s.relief == nil {
		r := &reliefSim{rng: newRand(s.opts.Seed ^ 0x72656c6965), movers: map[string]*enforcer.Mover{},
			reassign: map[string]*enforcer.Reassigner{}, started: map[string]int{}, op: map[string]string{}, lastFault: -1000}
		s.relief = r
		s.c.SetJBOD(jbodBroker)
		s.c.SetReliefDuration(func(kind string) time.Duration {
			if kind == "move" {
				return time.Duration(1+r.rng.IntN(4)) * step
			}
			return time.Duration(1+r.rng.IntN(5)) * step
		})
		s.c.SetReliefHook(s.reliefHook)
	}
	return s.relief
}

// reliefHook: the call faults, in the same windows, from the relief's
// own random source.
func (s *sim) reliefHook(who, method string, phase simbroker.CallPhase) error {
	r := s.relief
	if s.quiet || s.callFaultP == 0 || r.rng.Float64() >= s.callFaultP {
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
	c := choices[r.rng.IntN(len(choices))]
	r.lastFault = s.step
	s.tracef("%s %s fails %s (%s, relief)", who, method, phase, c)
	return simbroker.Injected(method, phase, c == CallTimeout)
}

// reliefStep runs before the agents' passes: the operator's throttle
// values, and the uninstall hook's lift of the throttle claims.
func (s *sim) reliefStep() {
	r := s.reliefOn()
	if r == nil {
		return
	}
	if s.uninstalled && !r.lifted {
		r.lifted = s.liftThrottleClaims()
	}
	if len(s.c.Reassigning()) > 0 || s.c.MovesInFlight(jbodBroker) > 0 || !s.quiet {
		r.lastNeed = s.step
	}
	if s.quiet || r.rng.IntN(30) != 0 {
		return
	}
	type opKey struct{ res, name, key, value string }
	keys := []opKey{
		{ledger.ResourceBroker, "1", enforcer.FollowerThrottleRate, opReplicationRate},
		{ledger.ResourceTopic, "compacted", enforcer.LeaderThrottledReplicas, "*"},
		{ledger.ResourceBroker, fmt.Sprint(jbodBroker), enforcer.ThrottleKey, opMoveRate},
		{ledger.ResourceBroker, fmt.Sprint(jbodBroker), enforcer.ThrottleKey, opMoveRate},
	}
	k := keys[r.rng.IntN(len(keys))]
	id := k.res + " " + k.name + " " + k.key
	if _, set := r.op[id]; set {
		s.c.SetThrottleValue(k.res, k.name, k.key, "", false)
		delete(r.op, id)
		s.tracef("operator: removes its %s", id)
		return
	}
	s.c.SetThrottleValue(k.res, k.name, k.key, k.value, true)
	r.op[id] = k.value
	s.tracef("operator: sets %s=%s", id, k.value)
}

// liftThrottleClaims is the uninstall hook's `protection lift --all` for
// the throttle claims; true once none is left.
func (s *sim) liftThrottleClaims() bool {
	ctx := context.Background()
	a := s.c.ReliefAdmin("operator")
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return false
	}
	done := true
	for id, c := range recs.Throttles {
		if err := enforcer.RestoreThrottle(ctx, a, c); err != nil {
			done = false
			continue
		}
		if err := a.DeleteThrottle(ctx, id); err != nil {
			done = false
		}
	}
	for _, c := range recs.Reassigns {
		if err := enforcer.ReleaseReassign(ctx, a, a, c, "operator"); err != nil {
			done = false
		}
	}
	s.tracef("operator: uninstall lifts the throttle claims (done %v)", done)
	return done
}

// reliefPass runs agent a's move and reassign rungs after its
// enforcer's pass (rebuilt from nothing when the agent restarted).
func (s *sim) reliefPass(a *agentSim) {
	r := s.reliefOn()
	if r == nil {
		return
	}
	if since, ok := r.started[a.name]; !ok || since != a.since {
		id := a.broker
		cfg := enforcer.Config{Enabled: a.enabled, BrokerID: &id, Interval: interval,
			Protection: enforcer.ProtectionConfig{Strategy: s.strategy, LeaseDuration: lease, RecordTimeout: lease, ProducerByteRate: a.rate},
			Relief:     enforcer.ReliefConfig{Reassign: true, ReassignBytesPerSecond: 64 << 20}}
		admin := s.c.ReliefAdmin(a.name)
		moves := newTrackedRelief(admin, a.name, ledger.ThrottleKey(a.broker))
		reassigns := newTrackedRelief(admin, a.name, ledger.ReassignKey(ledger.ReassignOwner(a.broker)))
		if r.stores == nil {
			r.stores = map[string][]*trackedRelief{}
		}
		r.stores[a.name] = []*trackedRelief{moves, reassigns}
		src := &reliefSource{c: s.c, a: a}
		logger := s.logger.With("agent", a.name)
		mv, err := enforcer.NewMover(cfg, logger, prometheus.NewRegistry(), enforcer.MoverDeps{Snapshots: src, Admin: admin,
			Store: moves, Evidence: admin, Clock: a.clock, Instance: a.name})
		if err != nil {
			panic(fmt.Sprintf("simulation: mover: %v", err))
		}
		rs, err := enforcer.NewReassigner(cfg, logger, prometheus.NewRegistry(), enforcer.ReassignerDeps{Snapshots: src,
			Admin: admin, Store: reassigns, Evidence: admin, Clock: a.clock, Instance: a.name})
		if err != nil {
			panic(fmt.Sprintf("simulation: reassigner: %v", err))
		}
		r.movers[a.name], r.reassign[a.name], r.started[a.name] = mv, rs, a.since
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := r.movers[a.name].Pass(ctx); err != nil {
		s.tracef("%s move pass: %v", a.name, trim(err.Error()))
	}
	if err := r.reassign[a.name].Pass(ctx); err != nil {
		s.tracef("%s reassign pass: %v", a.name, trim(err.Error()))
	}
}

// reliefSource is the agent's snapshot of this step, with the second log
// dir of a JBOD broker.
type reliefSource struct {
	c *simbroker.Cluster
	a *agentSim
}

func (r *reliefSource) Snapshot() *agent.Snapshot {
	return r.c.ReliefSnapshot(r.a.broker, r.a.src.snap)
}
func (r *reliefSource) Updated() <-chan struct{} { return nil }

// checkRelief checks the relief invariants after a step.
func (s *sim) checkRelief() *Failure {
	r := s.relief
	if r == nil {
		return nil
	}
	vals := s.c.ThrottleValues()
	recs, recErr := s.c.ThrottleClaims()
	// I2.
	for id, v := range r.op {
		got, ok := vals[id]
		if strings.HasSuffix(id, enforcer.ThrottleKey) {
			if _, held := recs.Throttles[jbodBroker]; recErr != nil || held || s.throttleRemembered(jbodBroker) {
				// The claim holds the key (or, lost with the ledger, its
				// owner's process remembers it): the operator's value
				// comes back at its release.
				continue
			}
		}
		if !ok || got != v {
			return s.fail("I2", "the operator's %s=%s is now %q (set %v)", id, v, got, ok)
		}
	}
	// I1, once faults (and the needs) stopped for a lease plus three
	// passes.
	if !s.quiet || s.step-r.lastNeed <= int(lease/step)+3 || s.step-r.lastFault <= int(lease/step)+3 {
		return nil
	}
	return s.reliefLeft(vals, recs, recErr)
}

// reliefLeft reports a guard's throttle value or claim still in place.
func (s *sim) reliefLeft(vals map[string]string, recs ledger.Records, recErr error) *Failure {
	r := s.relief
	for _, id := range slices.Sorted(mapKeys(vals)) {
		if v, ok := r.op[id]; ok && v == vals[id] {
			continue
		}
		if v, ok := r.unattributed[id]; ok && v == vals[id] {
			continue // lost with the ledger and remembered by no live agent
		}
		return s.fail("I1", "%s=%s left %d steps after the last move or reassignment (claims %v, %v)",
			id, vals[id], s.step-r.lastNeed, recs.Throttles, recs.Reassigns)
	}
	if recErr == nil && (len(recs.Throttles) > 0 || len(recs.Reassigns) > 0) {
		return s.fail("I1", "throttle claims left %d steps after the last move or reassignment: %v %v",
			s.step-r.lastNeed, recs.Throttles, recs.Reassigns)
	}
	return nil
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
