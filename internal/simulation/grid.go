package simulation

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// gridKey names what the authorizer's grid (I3) was last answered for:
// the cluster's bindings (their generation) and the operator's (every
// binding it ever created: the set only grows). The grid's answers
// depend on nothing else, so it is evaluated again only when one of them
// changed: evaluated at every step, principals x topics x operations
// over every binding was a tenth of the simulation's time.
type gridKey struct {
	acls uint64
	ever int
	set  bool
}

// checkGrid is I3: no principal gains an access it did not have: the
// authorizer's answers for principals x topics x operations with every
// binding allow nothing the operator's bindings alone would not.
func (s *sim) checkGrid(acls map[ledger.ACL]bool) *Failure {
	c := s.c
	key := gridKey{acls: c.ACLGeneration(), ever: len(s.op.ever), set: true}
	if s.grid == key {
		return nil // unchanged since it held
	}
	base := map[ledger.ACL]bool{}
	for a := range acls {
		if s.op.ever[a] {
			base[a] = true
		}
	}
	operators := simbroker.Authorizer{ACLs: base, SuperUsers: []string{"User:admin"}, AllowEveryone: s.allowEveryone()}
	for _, p := range gridPrincipals {
		for _, t := range gridTopics {
			for _, op := range gridOps {
				if c.Authorize(p, t, op) && !operators.Authorize(p, t, op) {
					return s.fail("I3", "%s gained %s on topic %s (bindings %v)", p, op, t, keys(acls))
				}
			}
		}
	}
	s.grid = key
	return nil
}
