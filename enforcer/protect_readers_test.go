package enforcer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// authorizerModel is the fake cluster as a KRaft broker's authorizer sees
// it while a CreateAcls or DeleteAcls request is applied: the bindings
// of a creation land one at a time in the request's order, those of a
// deletion go in any order. After every binding it checks who may still
// do what on the bindings' topics (allow.everyone.if.no.acl.found=true)
// and notes every refusal of a consumer (anonymous READ) and of the
// exempt principal (WRITE). failDeleteAt fails the n-th DeleteAcls call
// (counting from 1), before any binding goes.
type authorizerModel struct {
	*fakeAdmin
	exempt       string
	deletes      int
	failDeleteAt int
	refusals     []string
	// exemptWindow: the most bindings of one topic a creation put in
	// place while the exempt principal was refused WRITE.
	exemptWindow int
}

// allowed decides op for principal on topic under acls as Kafka's
// StandardAuthorizer does with allow.everyone.if.no.acl.found=true: no
// binding on the topic allows everything, a matching DENY refuses, else
// a matching ALLOW is needed.
func allowed(acls map[ACL]bool, topic, principal, op string) bool {
	anyACL, allow := false, false
	for a := range acls {
		if !a.Matches(topic) {
			continue
		}
		anyACL = true
		if (a.Principal != AnyPrincipal && a.Principal != principal) || (a.Operation != op && a.Operation != ledger.OpAll) {
			continue
		}
		if a.Permission == PermDeny {
			return false
		}
		allow = true
	}
	return !anyACL || allow
}

func (m *authorizerModel) CreateACLs(ctx context.Context, acls []ACL) error {
	m.mu.Lock()
	state := maps.Clone(m.acls)
	m.mu.Unlock()
	landed := map[string]int{}
	for _, a := range acls {
		a = ledger.NormACL(a)
		if state[a] {
			continue
		}
		state[a] = true
		landed[a.Topic]++
		if !allowed(state, a.Topic, "User:ANONYMOUS", OpRead) {
			m.refusals = append(m.refusals, fmt.Sprintf("create: a consumer refused on %s once %s %s %s was in place", a.Topic, a.Permission, a.Operation, a.Principal))
		}
		if m.exempt != "" && !allowed(state, a.Topic, m.exempt, OpWrite) {
			m.exemptWindow = max(m.exemptWindow, landed[a.Topic])
		}
	}
	return m.fakeAdmin.CreateACLs(ctx, acls)
}

// DeleteACLs checks every order the broker may remove the request's
// bindings in: every subset of a topic's bindings in the request gone
// first.
func (m *authorizerModel) DeleteACLs(ctx context.Context, acls []ACL) error {
	m.deletes++
	if m.deletes == m.failDeleteAt {
		return errors.New("NOT_CONTROLLER")
	}
	m.mu.Lock()
	before := maps.Clone(m.acls)
	m.mu.Unlock()
	byTopic := map[string][]ACL{}
	for _, a := range acls {
		a = ledger.NormACL(a)
		byTopic[a.Topic] = append(byTopic[a.Topic], a)
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		req := byTopic[t]
		for subset := 1; subset < 1<<len(req); subset++ {
			state := maps.Clone(before)
			for i, a := range req {
				if subset&(1<<i) != 0 {
					delete(state, a)
				}
			}
			if !allowed(state, t, "User:ANONYMOUS", OpRead) {
				m.refusals = append(m.refusals, fmt.Sprintf("delete call %d: a consumer refused on %s if the broker removes %d of the %d bindings first", m.deletes, t, popcount(subset), len(req)))
				break
			}
		}
	}
	return m.fakeAdmin.DeleteACLs(ctx, acls)
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// readOnly is the absence shape's ALLOW READ for User:* on topic.
func readOnly(topic string) ACL { return ledger.LiteralACL(topic, AnyPrincipal, OpRead, PermAllow) }

// R4.3: consumers keep reading while protection switches on. On a broker
// with allow.everyone.if.no.acl.found=true, the absence shape's first
// binding on a topic takes everyone's rights away, and the broker puts a
// request's bindings in place one at a time, in its order: the ALLOW
// READ for User:* goes first, so no consumer is ever refused, and the
// exempt principal's ALLOW WRITE right after it (one binding in place
// while it is refused: Kafka has no way to add two at once). Sorted by
// operation, the READ came after ALTER, ALTER_CONFIGS, CREATE and DELETE:
// consumers were refused (and the exempt principal for five bindings).
func TestR4_3AbsenceShapeCreatesReadFirst(t *testing.T) {
	full, _ := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
	m := &authorizerModel{fakeAdmin: f, exempt: "User:mirror"}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{ExemptPrincipals: []string{m.exempt}}}
	e, _ := newTestEnforcer(t, cfg, full(), m, clock)
	passAt(t, e, clock, full())
	for _, topic := range []string{"a", "b"} {
		if !f.acls[readOnly(topic)] || !f.acls[ledger.LiteralACL(topic, m.exempt, OpWrite, PermAllow)] || f.acls[denyAll(topic)] {
			t.Fatalf("%s not protected by the absence shape: %v", topic, f.acls)
		}
	}
	for _, r := range m.refusals {
		t.Errorf("R4.3/%s", r)
	}
	if m.exemptWindow > 1 {
		t.Errorf("R8.3/the exempt principal refused WRITE while %d bindings of its topic were in place (at most the ALLOW READ)", m.exemptWindow)
	}
}

// R4.3: consumers keep reading while protection is released. The broker
// removes a DeleteAcls request's bindings in no particular order, so the
// ALLOW READ goes in a request of its own, once every other binding of
// the shape went: until then consumers read, and everyone else is still
// refused WRITE. In one request the READ could go first, the topic
// keeping ALTER and the others: consumers were refused. A failure between
// the two requests leaves the ALLOW READ in place and its claim
// releasing (spec R8.5); a later attempt deletes it, and the claims leave
// the record once read back gone.
func TestR4_3AbsenceShapeReleasesReadLast(t *testing.T) {
	full, calm := protectSnaps()
	f := newFakeAdmin(full())
	f.everyone = AllowEveryoneTrue
	m := &authorizerModel{fakeAdmin: f}
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, full(), m, clock)
	protected := func() {
		t.Helper()
		passAfter(t, e, clock, time.Second, full())
		if !f.acls[readOnly("a")] || len(f.acls) != 2*len(ledger.OpsButWrite) {
			t.Fatalf("a and b not protected by the absence shape: %v", f.acls)
		}
		m.refusals = nil // the creation's: TestR4_3AbsenceShapeCreatesReadFirst
	}
	released := func() {
		t.Helper()
		if len(f.acls) != 0 {
			t.Errorf("R8.5/the release not completed: %v", f.acls)
		}
		if me := f.records.Agents[1]; me.Claims() {
			t.Errorf("R8.5/claims left in the record once the bindings are gone: %+v", me.Owned)
		}
		for _, r := range m.refusals {
			t.Errorf("R4.3/%s", r)
		}
	}

	protected()
	for range 2 {
		passAfter(t, e, clock, time.Second, calm())
	}
	released()

	protected()
	m.failDeleteAt = m.deletes + 2 // the second request, the ALLOWs of READ
	if err := tryPassAfter(t, e, clock, time.Second, calm()); err == nil {
		t.Error("the failed release returned no error")
	}
	if want := map[ACL]bool{readOnly("a"): true, readOnly("b"): true}; !maps.Equal(f.acls, want) {
		t.Errorf("R4.3/after a failure between the two requests: %v, want the ALLOW READs only (consumers read, producers refused)", f.acls)
	}
	me := f.records.Agents[1]
	var releasing []string
	Record{Owned: me.Releasing()}.Bindings(nil, func(a ACL) { releasing = append(releasing, a.Topic+" "+a.Operation) })
	if !slices.Contains(releasing, "a "+OpRead) || !slices.Contains(releasing, "b "+OpRead) || len(me.Held()) > 0 {
		t.Errorf("R8.5/the claims are not all left releasing after the partial release: releasing %v, held %v", releasing, me.Held())
	}
	for range 3 {
		passAfter(t, e, clock, 2*maxReleaseBackoff, calm())
	}
	released()
}
