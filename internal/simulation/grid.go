package simulation

import "github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"

// gridKey names what the authorizer's grid (I3) was last answered for:
// the cluster's bindings (their generation), the operator's baseline and
// held accesses (their generation), and whether the guard has had its
// passes to settle. The grid's answers depend on nothing else, so it is
// evaluated again only when one of them changed: evaluated at every
// step, principals x topics x operations over every binding was a tenth
// of the simulation's time.
type gridKey struct {
	acls     uint64
	operator int
	settled  bool
	set      bool
}

// checkGrid is I3 (checkAccess, access.go), skipped while its key is the
// one it last held for.
func (s *sim) checkGrid(acls map[ledger.ACL]bool) *Failure {
	key := gridKey{acls: s.c.ACLGeneration(), operator: s.op.accessGen, settled: s.settled(), set: true}
	if s.grid == key {
		return nil // unchanged since it held
	}
	if f := s.checkAccess(acls); f != nil {
		return f
	}
	s.grid = key
	return nil
}
