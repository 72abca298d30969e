package simulation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// operator is the cluster's operator: it sets its own ACLs, the default
// producer quota and the tiered topic's local retention, lifts and
// resumes protection, and uninstalls the guard, through the same admin
// API (and the same faults) as the agents. What it asked for and got is
// what invariant I2 protects. A command that fails is run again at the
// next step, as an operator would, until it succeeds.
type operator struct {
	s     *sim
	admin *simbroker.ClusterAdmin
	// acls: the operator's bindings now; base: those in place because of
	// it (created, their deletion not yet done): the authorizer's
	// baseline, I3. A binding identical to one the operator deleted, in
	// place again, is the guard's.
	acls, base map[ledger.ACL]bool
	// held: accesses granted since before an operator's ACL change
	// (access.go).
	held map[access]bool
	// accessGen counts the changes of base and held: with the cluster's
	// ACL generation it keys the I3 grid's cache (grid.go).
	accessGen int
	quota     int64   // the operator's producer quota (0: none)
	localRet  *string // the operator's local.retention.bytes of the tiered topic (nil: none)
	// pending: commands that failed, run again until they succeed; busy:
	// kinds with a command pending (their I2 checks wait).
	pending []command
	busy    map[string]bool
}

type command struct {
	kind string
	name string
	run  func(ctx context.Context) error
}

// Operator's candidate bindings: a freeze of a topic identical to what
// the guard sets (issue point 2), a grant, a denial, an ALLOW the guard
// may want too.
var operatorACLs = []ledger.ACL{
	{Topic: "orders", Pattern: ledger.PatternLiteral, Principal: ledger.AnyPrincipal, Host: ledger.AnyHost, Operation: ledger.OpWrite, Permission: ledger.PermDeny},
	{Topic: "orders", Pattern: ledger.PatternLiteral, Principal: "User:alice", Host: ledger.AnyHost, Operation: ledger.OpRead, Permission: ledger.PermAllow},
	{Topic: "events", Pattern: ledger.PatternLiteral, Principal: "User:mallory", Host: ledger.AnyHost, Operation: ledger.OpRead, Permission: ledger.PermDeny},
	{Topic: "events", Pattern: ledger.PatternLiteral, Principal: ledger.AnyPrincipal, Host: ledger.AnyHost, Operation: ledger.OpRead, Permission: ledger.PermAllow},
	{Topic: "compacted", Pattern: ledger.PatternLiteral, Principal: ledger.AnyPrincipal, Host: ledger.AnyHost, Operation: ledger.OpWrite, Permission: ledger.PermDeny},
}

func newOperator(s *sim) *operator {
	return &operator{s: s, admin: s.c.Admin(1, "operator"), acls: map[ledger.ACL]bool{}, base: map[ledger.ACL]bool{},
		held: map[access]bool{},
		busy: map[string]bool{}}
}

// deleteACL is the operator's deletion of its binding a (run again at
// each step while it fails). A binding gone after the call is gone from
// the authorizer's baseline (I3), whatever the reply said, as a creation
// counts what it got: kept there after a reply lost once the deletion
// took effect, an identical binding the guard then sets (the ALLOW READ
// User:* of its absence shape) made the baseline see one of the
// operator's ACLs on a topic that has none, and the guard's shape, which
// only keeps what allow.everyone.if.no.acl.found grants, a gain (seed
// 1710 with any ledger class added to the default mix).
func (o *operator) deleteACL(ctx context.Context, a ledger.ACL) error {
	o.holdAccess()
	err := o.admin.DeleteACLs(ctx, []ledger.ACL{a})
	if err == nil || !o.s.c.ACLs()[a] {
		delete(o.base, a)
		o.accessGen++
	}
	return err
}

// createACL is the operator's creation of binding a, not in place (act
// checked: guards). A binding in place after the call is the operator's,
// whatever the reply said. An unattributed binding identical to it (one
// a guard's process set and left unrecorded, R8.4) had gone before (a
// lift deleted it): the one in place is the operator's, not waived, and
// the authorizer's answers without the unattributed bindings keep it
// (onlyUnattributed, access.go). Kept unattributed, it was taken away
// with them, and the guard's leftover ALLOW READ User:* on orders, which
// the operator's DENY WRITE User:* alone refuses, was counted as held
// through a binding the guard still claims (seed 12737: agent-3 left its
// DENY WRITE User:* on orders unrecorded, a lift deleted it, the
// operator created its own).
func (o *operator) createACL(ctx context.Context, a ledger.ACL) {
	o.s.tracef("operator: create acl %v", a)
	o.holdAccess()
	err := o.admin.CreateACLs(ctx, []ledger.ACL{a})
	if o.s.c.ACLs()[a] {
		o.acls[a], o.base[a] = true, true
		delete(o.s.unattributed, a)
		o.accessGen++
	} else {
		o.s.tracef("operator: create acl failed: %v", err)
	}
}

// guards reports whether binding a may be the guard's: in place (not the
// operator's: act checks that first), named by a guard's record (voided,
// releasing or not), set unrecorded by a live agent, or unknown (the
// ledger is lost, or back without a record the agents remember and
// write back: their memories may claim it).
func (o *operator) guards(a ledger.ACL) bool {
	if o.s.c.ACLs()[a] {
		return true
	}
	for _, r := range o.s.lost.recs {
		// A record the topic lost, not yet written back (lostledger.go):
		// the ledger is not back until it is, as docs/operating.md says
		// (seed 34239: the topic, created again empty, showed no claim;
		// the operator made its DENY WRITE User:* on orders, which a
		// peer's copy of broker 3's record claimed once written back,
		// and the last agent to give that claim up deleted the binding).
		claimed := false
		r.Bindings(nil, func(b ledger.ACL) { claimed = claimed || ledger.NormACL(b) == ledger.NormACL(a) })
		if claimed {
			return true
		}
	}
	for _, ag := range o.s.agents {
		// Set unrecorded by a live agent (its call failed, its record
		// not written): the agent takes an identical binding for the one
		// it may have set until a read finds it gone (R8.4, R8.6).
		if ag.tracked != nil && ag.deadTill < 0 && ag.tracked.pending[a] {
			return true
		}
	}
	recs, err := o.s.c.Records()
	if err != nil {
		// The ledger is lost: protection status says LEDGER LOST and
		// shows no claims, while the agents remember theirs and write
		// them back when it returns (spec R8.7). The operator does as
		// docs/operating.md says: it waits until status can show no
		// claim on the binding.
		return true
	}
	return recs.GuardBindings()[ledger.NormACL(a)]
}

// act draws the operator's action of this step.
func (o *operator) act() {
	o.retry()
	s, r := o.s, o.s.rng
	one := func(c Class, n int) bool { return s.classes[c] && r.IntN(n) == 0 && !s.uninstalled }
	if one(OperatorACLs, 20) {
		a := operatorACLs[r.IntN(len(operatorACLs))]
		if o.acls[a] {
			delete(o.acls, a)
			o.do("acl", fmt.Sprintf("delete acl %v", a), func(ctx context.Context) error { return o.deleteACL(ctx, a) })
		} else if !o.busy["acl"] && o.guards(a) {
			// Kafka keeps one copy of identical bindings and tells no
			// creator apart: a binding identical to one a guard's record
			// claims (in place or being released) would be lifted with
			// that claim. The operator does as docs/operating.md says:
			// it adds it once protection status shows no claim on it.
			o.s.tracef("operator: create acl %v: a guard's record claims it (or the ledger is lost), waits", a)
		} else if !o.busy["acl"] {
			o.createACL(context.Background(), a)
		}
	}
	if one(OperatorQuota, 40) && !o.busy["quota"] {
		if o.quota > 0 {
			o.quota = 0
			o.do("quota", "remove quota", o.admin.RemoveDefaultProducerQuota)
		} else {
			o.quota = 5 << 20
			o.do("quota", "set quota", func(ctx context.Context) error { return o.admin.SetDefaultProducerQuota(ctx, o.quota) })
		}
	}
	if one(OperatorLocalRetention, 40) && !o.busy["config"] {
		var v *string
		if r.IntN(3) > 0 {
			x := strconv.Itoa([]int{100 << 20, 200 << 20}[r.IntN(2)])
			v = &x
		}
		o.localRet = v
		o.do("config", fmt.Sprintf("set local.retention.bytes of events to %v", deref(v)), func(ctx context.Context) error {
			return o.admin.AlterTopicConfig(ctx, "events", enforcer.LocalRetentionBytesKey, v)
		})
	}
	if one(OperatorLift, 30) {
		req := ledger.LiftRequest{By: "operator", Reason: "simulated", All: true}
		switch r.IntN(3) {
		case 1:
			req.All, req.Broker = false, int32(1+r.IntN(3))
		case 2:
			req.All, req.Topic = false, []string{"orders", "events", "compacted"}[r.IntN(3)]
		}
		o.lift(req)
	}
	if one(OperatorResume, 40) {
		o.do("resume", "protection resume --all", o.resume)
	}
	if one(OperatorUninstall, 400) {
		s.uninstalled = true
		for _, a := range s.agents {
			s.forget(a) // the agents stop: no memory writes a lost record back
			s.orphan(a) // and what they set unrecorded is unattributed (R8.4)
		}
		s.tracef("operator: uninstall (agents stop)")
		o.lift(ledger.LiftRequest{By: "operator", Reason: "uninstall", All: true})
	}
}

func deref(v *string) string {
	if v == nil {
		return "<unset>"
	}
	return *v
}

// lift runs kafka-disk-guard protection lift.
func (o *operator) lift(req ledger.LiftRequest) {
	o.do("lift", fmt.Sprintf("protection lift %+v", req), func(ctx context.Context) error {
		// Each attempt may write the lift: the episode it holds for is
		// the one under way at the attempt (a retry after the usage
		// dipped under the restore bound suppresses the next episode).
		o.s.liftedAt = o.s.step
		for _, a := range o.s.agents {
			if req.All || req.Topic != "" || req.Broker == a.broker {
				o.s.suppressed[a.broker] = true
			}
		}
		req.Now = o.s.now
		res, err := ledger.LiftProtection(ctx, o.admin, req)
		if err == nil {
			o.s.tracef("operator: lifted %d, deleted %d acls, quota removed %v", len(res.Lifts), len(res.Released.ACLs), res.Released.QuotaRemoved)
		}
		return err
	})
}

// resume is kafka-disk-guard protection resume --all.
func (o *operator) resume(ctx context.Context) error {
	recs, err := o.admin.LoadRecords(ctx)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(recs.Lifts)) {
		if recs.Lifts[id].Kind != ledger.LiftOperator {
			continue
		}
		if err := o.admin.DeleteLift(ctx, id); err != nil {
			return err
		}
		o.s.suppressed[id] = false
	}
	return nil
}

// do runs a command now, and again at each step until it succeeds.
func (o *operator) do(kind, name string, run func(ctx context.Context) error) {
	o.s.tracef("operator: %s", name)
	if err := run(context.Background()); err != nil {
		o.s.tracef("operator: %s failed: %v", name, trim(err.Error()))
		o.pending = append(o.pending, command{kind, name, run})
		o.busy[kind] = true
	}
}

// retry runs the failed commands again, in order.
func (o *operator) retry() {
	var still []command
	o.busy = map[string]bool{}
	for _, c := range o.pending {
		if err := c.run(context.Background()); err != nil {
			o.s.tracef("operator: %s failed again: %v", c.name, trim(err.Error()))
			still = append(still, c)
			o.busy[c.kind] = true
		} else {
			o.s.tracef("operator: %s done", c.name)
		}
	}
	o.pending = still
}
