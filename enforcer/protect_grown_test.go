package enforcer

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// storeFailsAfter is an admin whose record writes fail, before taking
// effect, once ok more have succeeded (armed: counting).
type storeFailsAfter struct {
	*fakeAdmin
	armed bool
	ok    int
}

func (s *storeFailsAfter) StoreRecord(ctx context.Context, r Record) error {
	if s.armed {
		if s.ok == 0 {
			return errors.New("write broker-1 to __kafka_disk_guard_protection: NOT_ENOUGH_REPLICAS")
		}
		s.ok--
	}
	return s.fakeAdmin.StoreRecord(ctx, r)
}

// R8.4, R8.5: the record written before a pass creates bindings (the
// grown one: what the agent held and what the plan holds) holds them,
// even where its record was still releasing the same shape on the same
// topics (a calm pass deleted them, and no pass has read them gone yet).
// Merged into the releasing claim, the new bindings were recorded
// releasing only: with the plan's record not written after it, no record
// held them, and a releasing claim another record holds is dropped
// (found by the simulation, seed 77959: a peer's older copy, written
// back after a loss of the ownership topic, held them; its agent wrote
// its own record over it, and the bindings were left for good).
func TestR8_4RecordGrownOverAReleasingClaimHoldsTheNewBindings(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	admin := &storeFailsAfter{fakeAdmin: f}
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true}, full(), admin, clock)
	passAfter(t, e, clock, 0, full())
	passAfter(t, e, clock, time.Second, calm())
	r := f.records.Agents[1]
	if len(r.Releasing()) == 0 || f.acls[denyAll("a")] || f.acls[denyAll("b")] {
		t.Fatalf("the test needs the calm pass to release the bindings and the record to still name them releasing: %+v, bindings %v", r.Owned, f.acls)
	}
	// The disk fills again: the first record write of the pass (the
	// grown one) takes effect, any later one fails.
	admin.armed, admin.ok = true, 1
	_ = tryPassAfter(t, e, clock, time.Second, full())
	if !f.acls[denyAll("a")] || !f.acls[denyAll("b")] {
		t.Fatalf("the test needs the pass to protect again: %v", f.acls)
	}
	held := map[ACL]bool{}
	f.records.Agents[1].HeldBindings(nil, func(a ACL) { held[a] = true })
	for _, a := range []ACL{denyAll("a"), denyAll("b")} {
		if !held[a] {
			t.Errorf("R8.4/the record written before %v was created does not hold it: %+v", a, f.records.Agents[1].Owned)
		}
	}
}

// R8.4: the grown record's ACL claims, unionOwned(held before, planned):
// every topic either side holds is held; a topic only releasing stays
// releasing; shapes stay apart.
func TestR8_4GrownRecordHoldsWhatEitherSideHolds(t *testing.T) {
	deny := &ledger.Shape{Deny: []string{AnyPrincipal}}
	allow := &ledger.Shape{AllowOps: []string{OpRead, "ALTER"}}
	acl := func(s *ledger.Shape, releasing bool, topics ...string) Owned {
		return Owned{Kind: OwnedACL, Shape: s, Topics: topics, Releasing: releasing}
	}
	for _, c := range []struct {
		name      string
		me, plan  []Owned
		held, rel map[string]bool // topic+shape key
	}{
		{"held on both sides", []Owned{acl(deny, false, "a")}, []Owned{acl(deny, false, "b")},
			map[string]bool{"a" + deny.Key(): true, "b" + deny.Key(): true}, nil},
		{"releasing, protected again", []Owned{acl(deny, true, "a")}, []Owned{acl(deny, false, "a", "b")},
			map[string]bool{"a" + deny.Key(): true, "b" + deny.Key(): true}, nil},
		{"releasing, another topic protected", []Owned{acl(deny, true, "a")}, []Owned{acl(deny, false, "b"), acl(deny, true, "a")},
			map[string]bool{"b" + deny.Key(): true}, map[string]bool{"a" + deny.Key(): true}},
		{"held, given up by the plan", []Owned{acl(deny, false, "a", "b")}, []Owned{acl(deny, false, "b"), acl(deny, true, "a")},
			map[string]bool{"a" + deny.Key(): true, "b" + deny.Key(): true}, nil},
		{"shape changes", []Owned{acl(deny, false, "a")}, []Owned{acl(allow, false, "a"), acl(deny, true, "a")},
			map[string]bool{"a" + deny.Key(): true, "a" + allow.Key(): true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			held, rel := map[string]bool{}, map[string]bool{}
			for _, o := range unionOwned(c.me, c.plan) {
				for _, tp := range o.Topics {
					if o.Releasing {
						rel[tp+o.Shape.Key()] = true
					} else {
						held[tp+o.Shape.Key()] = true
					}
				}
			}
			if !maps.Equal(held, c.held) || !maps.Equal(rel, c.rel) {
				t.Errorf("R8.4/held %v, releasing %v; want held %v, releasing %v", held, rel, c.held, c.rel)
			}
		})
	}
}
