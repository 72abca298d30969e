package simulation

import (
	"log/slog"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// TestInvariantsCatch: the checks fire on the state they forbid: a
// binding that widens access (I3), an operator's binding removed (I2),
// DeleteRecords on a tiered topic (I5), a guard binding left after the
// faults stopped (I1).
func TestInvariantsCatch(t *testing.T) {
	s := newTestSim(t)
	widen := ledger.ACL{Topic: "events", Pattern: ledger.PatternLiteral, Principal: "User:mallory", Host: ledger.AnyHost,
		Operation: ledger.OpAll, Permission: ledger.PermAllow}
	deny := operatorACLs[2] // DENY User:mallory READ on events
	if err := s.c.Admin(1, "operator").CreateACLs(t.Context(), []ledger.ACL{deny}); err != nil {
		t.Fatal(err)
	}
	s.op.acls[deny], s.op.base[deny] = true, true
	if f := s.check(); f != nil {
		t.Fatalf("a clean state fails: %v", f)
	}
	if err := s.c.Admin(1, "agent-1").CreateACLs(t.Context(), []ledger.ACL{widen}); err != nil {
		t.Fatal(err)
	}
	if f := s.check(); f == nil || f.Invariant != "I3" {
		t.Errorf("an ALLOW ALL for mallory on events: %v, want I3", f)
	}
	if f := s.checkEnd(); f == nil || f.Invariant != "I1" {
		t.Errorf("a guard binding left: %v, want I1", f)
	}
	_ = s.c.Admin(1, "agent-1").DeleteACLs(t.Context(), []ledger.ACL{widen, deny})
	if f := s.check(); f == nil || f.Invariant != "I2" {
		t.Errorf("the operator's binding deleted: %v, want I2", f)
	}
	delete(s.op.acls, deny)
	if res, err := s.c.Admin(1, "agent-1").DeleteRecords(t.Context(), "events", map[int32]int64{0: 1}); err != nil || res[0] != nil {
		t.Fatal(err, res)
	}
	if f := s.check(); f == nil || f.Invariant != "I5" {
		t.Errorf("DeleteRecords on a tiered topic: %v, want I5", f)
	}
}

func newTestSim(t *testing.T) *sim {
	t.Helper()
	s := &sim{opts: Options{Seed: 1, Classes: []Class{}}, classes: map[Class]bool{}, now: start,
		lastFault: map[int32]int{}, protectSince: map[int32]int{}, fencedAtStart: map[int32]bool{},
		failNext: map[string]bool{}, suppressed: map[int32]bool{}, liftedAt: -1000, strategy: enforcer.StrategyACL, logger: slog.New(slog.DiscardHandler)}
	s.rng = newRand(1)
	s.build()
	return s
}
