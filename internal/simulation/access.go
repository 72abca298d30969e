package simulation

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// access is one answer of I3's grid: a principal's operation on a topic.
type access struct{ principal, topic, op string }

// settleSteps: once faults stop, the passes the guard has to re-plan a
// topic whose shape an operator's ACL change made wrong (I3).
const settleSteps = 2

// holdAccess notes, just before an operator's ACL change, every access
// the authorizer grants. Kafka has no binding that allows only while no
// other binding matches: the guard's ALLOW User:* of the absence shape
// (allow.everyone.if.no.acl.found, a topic without ACLs) keeps everyone's
// rights but WRITE, and an operator's first binding on the topic takes
// them away from everyone but the guard's ALLOW, until the guard's next
// pass re-plans the topic (the shape is then DENY WRITE User:*, its
// ALLOWs released once the DENY is in place). Through that window a
// principal keeps an access it had: it gains none (I3). An access lost
// once is no longer held.
func (o *operator) holdAccess() {
	o.accessGen++
	for _, p := range gridPrincipals {
		for _, t := range gridTopics {
			for _, op := range gridOps {
				if o.s.c.Authorize(p, t, op) {
					o.held[access{p, t, op}] = true
				}
			}
		}
	}
}

// checkAccess is I3: the authorizer's answers with every binding in
// place allow nothing the operator's bindings alone would not, but an
// access held since before the operator's last ACL change, until the
// guard has had settleSteps passes without faults to re-plan, or held
// through a binding the guard set but could not record before its
// process stopped (unattributed, R8.4: for an operator to decide; I1
// waives it too).
func (s *sim) checkAccess(acls map[ledger.ACL]bool) *Failure {
	base := map[ledger.ACL]bool{}
	for a := range acls {
		if s.op.base[a] {
			base[a] = true
		}
	}
	settled := s.settled()
	if settled && s.uninstalled {
		s.unattributeUndecodable() // waived as I1 waives it (checkEnd)
	}
	operators := simbroker.Authorizer{ACLs: base, SuperUsers: []string{"User:admin"}, AllowEveryone: s.allowEveryone()}
	for _, p := range gridPrincipals {
		for _, t := range gridTopics {
			for _, op := range gridOps {
				k := access{p, t, op}
				if !s.c.Authorize(p, t, op) {
					delete(s.op.held, k)
					continue
				}
				if operators.Authorize(p, t, op) {
					continue
				}
				if !s.op.held[k] {
					return s.fail("I3", "%s gained %s on topic %s (bindings %v)", p, op, t, keys(acls))
				}
				if settled && !s.onlyUnattributed(acls, k) {
					return s.fail("I3", "%s still holds %s on topic %s %d passes after the faults stopped: the guard's bindings "+
						"outlived the operator's ACL change (bindings %v)", p, op, t, s.step-s.opts.Steps, keys(acls))
				}
			}
		}
	}
	return nil
}

// onlyUnattributed reports whether only unattributed bindings (R8.4)
// that no record claims grant k: without them the authorizer refuses it.
func (s *sim) onlyUnattributed(acls map[ledger.ACL]bool, k access) bool {
	if len(s.unattributed) == 0 {
		return false
	}
	claimed := map[ledger.ACL]bool{}
	if recs, err := s.c.Records(); err == nil {
		for id, r := range recs.Agents {
			_, lifted := recs.Lifts[id]
			if s.uninstalled && (lifted || recs.Undecodable[id] > 0 && !recs.UndecodableLift[id]) {
				// The uninstall lifted these claims, or left them alone
				// for a record that does not decode (R8.7): a binding
				// still in place is that record's, unattributed with it
				// (unattributeUndecodable).
				continue
			}
			r.Bindings(nil, func(a ledger.ACL) { claimed[a] = true })
		}
	}
	rest := map[ledger.ACL]bool{}
	for a := range acls {
		if !s.unattributed[a] || claimed[a] {
			rest[a] = true
		}
	}
	az := simbroker.Authorizer{ACLs: rest, SuperUsers: []string{"User:admin"}, AllowEveryone: s.allowEveryone()}
	return !az.Authorize(k.principal, k.topic, k.op)
}

// settled reports whether the guard has had settleSteps passes since the
// faults stopped.
func (s *sim) settled() bool { return s.quiet && s.step-s.opts.Steps >= settleSteps }
