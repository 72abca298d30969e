package simulation

import (
	"context"
	"maps"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// trackedAdmin is an agent's admin client that remembers what the agent
// set that no record it wrote names yet: the window of spec R8.4
// (protection applied before its record is written). A process that dies
// in that window leaves what it set unattributed, for an operator to
// decide: R8.4 allows it, so I1 waives it (and only it).
type trackedAdmin struct {
	*simbroker.ClusterAdmin
	// pending: bindings created, and the quota set, since no record
	// written names them.
	pending      map[ledger.ACL]bool
	pendingQuota int64
	// seen: the records the agent's last successful read returned (its
	// memory of its peers' records, lostledger.go).
	seen ledger.Records
	// stored: the last record it wrote, by broker (its own, and a
	// peer's it wrote back since its last read).
	stored map[int32]ledger.Record
	// instance: the agent's name, the Instance of its own records.
	instance string
	// read: the process read the ledger successfully once.
	read bool
	// otherRenewed: the lease renewal of another instance's record for
	// the agent's broker (duplicate_agent) its reads last showed (zero
	// once a read shows its own record there), and otherReadAt the step
	// this process first read it (invariants.go, standsBy).
	otherRenewed time.Time
	otherReadAt  int
}

// LoadRecords remembers what a successful read returned.
func (t *trackedAdmin) LoadRecords(ctx context.Context) (ledger.Records, error) {
	recs, err := t.ClusterAdmin.LoadRecords(ctx)
	if err == nil {
		// The fold recs is a copy of (read-only, kept until the next
		// write): nothing was written since the read.
		t.seen, _ = t.Cluster().Records()
		t.read = true
		// What it remembers of another agent's record is now what it
		// read (enforcer/ledger_restore.go, remember): a copy it wrote
		// back before is forgotten (seed 5087).
		maps.DeleteFunc(t.stored, func(_ int32, r ledger.Record) bool { return r.Instance != t.instance })
	}
	return recs, err
}

func newTrackedAdmin(a *simbroker.ClusterAdmin, instance string) *trackedAdmin {
	return &trackedAdmin{ClusterAdmin: a, pending: map[ledger.ACL]bool{}, stored: map[int32]ledger.Record{}, instance: instance}
}

// CreateACLs remembers the bindings whatever the outcome (a reply lost
// after the call took effect counts).
func (t *trackedAdmin) CreateACLs(ctx context.Context, acls []ledger.ACL) error {
	for _, a := range acls {
		t.pending[a] = true
	}
	return t.ClusterAdmin.CreateACLs(ctx, acls)
}

func (t *trackedAdmin) SetDefaultProducerQuota(ctx context.Context, rate int64) error {
	t.pendingQuota = rate
	return t.ClusterAdmin.SetDefaultProducerQuota(ctx, rate)
}

// StoreRecord forgets what a record written names.
func (t *trackedAdmin) StoreRecord(ctx context.Context, r ledger.Record) error {
	err := t.ClusterAdmin.StoreRecord(ctx, r)
	if err == nil {
		t.stored[r.BrokerID] = r
	}
	if err == nil {
		r.Bindings(nil, func(a ledger.ACL) { delete(t.pending, a) })
		if q := t.pendingQuota; q > 0 && (r.Quota() == q || r.ReleasingQuota() == q) {
			t.pendingQuota = 0
		}
	}
	return err
}

// orphan records what a's process leaves unrecorded as it dies or stops:
// unattributed (R8.4).
func (s *sim) orphan(a *agentSim) {
	t := a.tracked
	if t == nil {
		return
	}
	for b := range t.pending {
		if s.unattributed == nil {
			s.unattributed = map[ledger.ACL]bool{}
		}
		s.unattributed[b] = true
		if s.op != nil {
			s.op.accessGen++ // I3's baseline changed (access.go)
		}
		s.tracef("%s left binding %v unrecorded (unattributed, R8.4)", a.name, b)
	}
	if t.pendingQuota > 0 {
		s.unattributedQuota[t.pendingQuota] = true
		s.tracef("%s left quota %d unrecorded (unattributed, R8.4)", a.name, t.pendingQuota)
	}
	clear(t.pending)
	t.pendingQuota = 0
}
