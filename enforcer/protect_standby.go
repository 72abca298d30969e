package enforcer

import (
	"context"
	"fmt"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// releaseUnrecordedStandingBy takes back, while this agent stands by for
// another instance of its broker (spec R8.8), the bindings its own process
// set unrecorded (R8.4: its record's write failed, or the other instance
// wrote over its record, keepOverwritten) that its pass's plan gives up:
// what it would release acting. No record names them, so no other process
// ever releases them (each takes them for an operator's, R8.6), and the
// other instance's lease, renewed, may keep this one standing by for good
// (a day at least, while that record holds purges). Kept, an absence
// shape's ALLOW READ User:* outlived the protection, and an operator's
// binding on the topic since (which takes allow.everyone.if.no.acl.found
// away from it) left everyone reading through it (found by the
// simulation, seed 20627: agent-1's fencing read failed, it protected
// unrecorded and stood by behind agent-1b; User:producer still read
// orders through agent-1's ALLOW after the operator's ALLOW READ
// User:alice, and after the disk's calm).
//
// The other agents take these bindings for an operator's, and one wanted
// in their shape for protection in place (R8.6): a DENY WRITE User:* goes
// only once no live record protects a log dir (seed 2300: deleted while
// agent-3's log dir was in the protect band, its topics were left
// writable). An ALLOW is never such protection on a topic an operator's
// binding matches (its shape for them is the DENY), and goes at once there:
// elsewhere the DENY of the others' shape, left alone, would refuse
// everyone until they change it. A binding a record names is that
// record's, left to its writer; the rest goes as a release does
// (ledger.ReleaseUnclaimed: none a live record claims once the records are
// read to their end). Nothing else: a standby creates, claims and writes
// nothing.
func (e *Enforcer) releaseUnrecordedStandingBy(ctx context.Context, po *ProtectionObserved, pp ProtectionPlan) error {
	if len(e.prot.unrecorded) == 0 || len(pp.Release) == 0 || e.dryRun || !po.ACLsRead {
		return nil
	}
	named := po.Records.GuardBindings()
	calm := true
	for id, r := range po.Records.Agents {
		if _, expired := po.Expired[id]; len(r.LogDirs) > 0 && !expired {
			calm = false
		}
	}
	var operator []ACL
	guard := guardIndex(po.Records, po.Unrecorded)
	for _, a := range po.ACLs {
		if !guard.has(a) {
			operator = append(operator, a)
		}
	}
	ops := newOperatorIndex(operator)
	var cands []ACL
	for _, a := range flatten(pp.Release) {
		if a = ledger.NormACL(a); e.prot.unrecorded[a] && !named[a] && (calm || a.Permission == PermAllow && len(ops.matching(a.Topic)) > 0) {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	rel, err := e.release(ctx, cands, 0, nil)
	for _, a := range rel.ACLs {
		delete(e.prot.unrecorded, a)
	}
	e.unprotected(rel, "", "standby", 0)
	if err != nil {
		return fmt.Errorf("standing by, release what this agent set unrecorded: %w", err)
	}
	return nil
}
