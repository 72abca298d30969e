package enforcer

import (
	"context"
	"errors"
	"fmt"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"slices"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// growing is a live partition of topic that the agent saw grow at rate
// bytes a second, appended bytes since it started.
func growing(topic string, p int32, rate float64, appended uint64) agent.Partition {
	pt := part(topic, p, 0, 10, seg(0, 1, agent.StateOpen))
	pt.WriteRateBytesPerSecond, pt.AppendedBytes = rate, appended
	return pt
}

func topicsOf(tps []TopicProtection) []string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.Topic
	}
	return out
}

func TestFastestFirst(t *testing.T) {
	s := snap(950, 1000,
		growing("a-idle", 0, 0, 0),
		growing("b-slow", 0, 10, 100),
		growing("c-fast", 0, 600, 10),
		growing("c-fast", 1, 600, 10), // a topic's partitions add up: 1200/s
		growing("d-faster", 0, 1000, 5),
		growing("e-appended", 0, 0, 5000), // no rate yet: ranked by bytes seen appended
		growing("f-idle", 0, 0, 0),
	)
	// A fast topic in a log dir not under protection does not count there.
	other := agent.LogDir{Path: "/other", Partitions: []*agent.Partition{new(growing("a-idle", 1, 1e9, 1e9))}}
	s.LogDirs = append(s.LogDirs, other)
	var tps []TopicProtection
	for _, tp := range []string{"a-idle", "b-slow", "c-fast", "d-faster", "e-appended", "f-idle"} {
		tps = append(tps, TopicProtection{Topic: tp, ACLs: []ACL{denyAll(tp)}})
	}
	got := topicsOf(fastestFirst(tps, s, map[string]bool{dir: true}))
	want := []string{"c-fast", "d-faster", "b-slow", "e-appended", "a-idle", "f-idle"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// Nothing seen growing: the order by name stays.
	got = topicsOf(fastestFirst(tps[:0:0], s, map[string]bool{}))
	if len(got) != 0 {
		t.Fatalf("%v", got)
	}
	idle := snap(950, 1000, growing("a", 0, 0, 0), growing("b", 0, 0, 0))
	byName := []TopicProtection{{Topic: "a"}, {Topic: "b"}}
	if got := topicsOf(fastestFirst(byName, idle, map[string]bool{dir: true})); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("order %v", got)
	}
}

// absenceTopics is n topics named t00000... with the absence shape's
// bindings (five a topic).
func absenceTopics(n int) []TopicProtection {
	out := make([]TopicProtection, n)
	for i := range out {
		tp := fmt.Sprintf("t%05d", i)
		out[i] = TopicProtection{Topic: tp, ACLs: shapeAbsence.Bindings(tp)}
	}
	return out
}

func TestProtectBatches(t *testing.T) {
	for _, c := range []struct {
		name string
		tps  []TopicProtection
		want []int // bindings a batch
	}{
		{"none", nil, nil},
		{"one topic", absenceTopics(1), []int{5}},
		{"absence, 10,000 topics", absenceTopics(10000), append([]int{100, 200, 400, 800}, append(slices.Repeat([]int{1000}, 48), 500)...)},
		{"a topic is never split", append(absenceTopics(19), TopicProtection{Topic: "wide", ACLs: bindings(Shape{AllowOps: ledger.OpsButWrite, AllowWrite: []string{"User:a", "User:b"}}, "wide")}),
			[]int{95, 7}},
		{"a topic wider than a batch is a batch of its own", []TopicProtection{{Topic: "x", ACLs: make([]ACL, 150)}, {Topic: "y", ACLs: make([]ACL, 1)}},
			[]int{150, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			batches := protectBatches(c.tps)
			var got []int
			var again []TopicProtection
			for _, b := range batches {
				n := 0
				for _, tp := range b {
					n += len(tp.ACLs)
				}
				got = append(got, n)
				again = append(again, b...)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("bindings a batch %v, want %v", got, c.want)
			}
			if !slices.EqualFunc(again, c.tps, func(a, b TopicProtection) bool { return a.Topic == b.Topic }) {
				t.Error("the batches are not the topics in their order")
			}
		})
	}
}

// R8.4: the plan lists the topics to protect fastest-growing first.
func TestR8_4PlanProtectsTheFastestGrowingTopicsFirst(t *testing.T) {
	s := snap(950, 1000, growing("a", 0, 0, 0), growing("b", 0, 5, 0), growing("c", 0, 0, 0), growing("z", 0, 500, 0))
	pp := planOf(protObs(s, false, recs(), nil))
	if got := topicsOf(pp.Create); !slices.Equal(got, []string{"z", "b", "a", "c"}) {
		t.Fatalf("R8.4/protection order %v", got)
	}
}

// callOrder records the protection calls of a pass: the record's claims
// when written, the topics of each CreateACLs.
type callOrder struct {
	*fakeAdmin
	calls []string
	// failCreate fails the n-th CreateACLs (1-based; -1: every one) with
	// createErr (NOT_CONTROLLER when nil), none of its bindings created.
	failCreate int
	createErr  error
	creates    int
}

func (c *callOrder) StoreRecord(ctx context.Context, r Record) error {
	err := c.fakeAdmin.StoreRecord(ctx, r)
	c.calls = append(c.calls, fmt.Sprintf("record:%d", len(r.ACLTopics())))
	return err
}

func (c *callOrder) CreateACLs(ctx context.Context, acls []ACL) error {
	c.creates++
	topics := map[string]bool{}
	for _, a := range acls {
		topics[a.Topic] = true
	}
	c.calls = append(c.calls, fmt.Sprintf("create:%d", len(topics)))
	if c.creates == c.failCreate || c.failCreate < 0 {
		if c.createErr != nil {
			return c.createErr
		}
		return errors.New("NOT_CONTROLLER")
	}
	return c.fakeAdmin.CreateACLs(ctx, acls)
}

// R8.4: protecting many topics, the record claiming them all is written
// first, then the fastest-growing topic goes in a first small CreateAcls
// of its own and the rest follow in the same pass; a batch that fails
// leaves the others to go on, nothing created unclaimed, and the next
// pass puts the missing topics in place.
func TestR8_4FastestTopicsFirstInBatches(t *testing.T) {
	parts := []agent.Partition{growing("zz-fastest", 0, 1e6, 1e8)}
	for i := range 499 {
		parts = append(parts, growing(fmt.Sprintf("t%03d", i), 0, 0, 0))
	}
	s := snap(950, 1000, parts...)
	f := &callOrder{fakeAdmin: newFakeAdmin(s), failCreate: 2}
	e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0})
	if err := e.Reconcile(t.Context()); err == nil {
		t.Fatal("no error for a failed batch")
	}
	// DENY WRITE User:* (one binding a topic): batches of 100, 200, 200.
	if want := []string{"record:500", "create:100", "create:200", "create:200"}; !slices.Equal(f.calls, want) {
		t.Fatalf("R8.4/calls %v, want %v", f.calls, want)
	}
	if !f.acls[denyAll("zz-fastest")] || !f.acls[denyAll("t000")] || f.acls[denyAll("t099")] || !f.acls[denyAll("t299")] || !f.acls[denyAll("t498")] {
		t.Fatalf("R8.4/the batches in place are not the first and the third")
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "protect", "result": "error"}); v != 200 {
		t.Errorf("actions{protect,error} %v, want 200 (the failed batch's topics)", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "protect", "result": "ok"}); v != 300 {
		t.Errorf("actions{protect,ok} %v, want 300", v)
	}
	f.calls = nil
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"record:500", "create:100", "create:100"}; !slices.Equal(f.calls, want) {
		t.Fatalf("R8.4/the next pass: calls %v, want %v", f.calls, want)
	}
	if len(f.acls) != 500 {
		t.Fatalf("R8.4/%d topics protected", len(f.acls))
	}
}

// R8.2: a broker that answers CreateAcls without an authorizer gets one
// request, not one a batch; every topic counts as failed.
func TestR8_2NoAuthorizerStopsTheBatches(t *testing.T) {
	var parts []agent.Partition
	for i := range 300 {
		parts = append(parts, growing(fmt.Sprintf("t%03d", i), 0, 0, 0))
	}
	s := snap(950, 1000, parts...)
	f := &callOrder{fakeAdmin: newFakeAdmin(s), failCreate: -1, createErr: fmt.Errorf("create acls: %w", ErrNoAuthorizer)}
	e, reg := newTestEnforcer(t, Config{Enabled: true}, s, f, &clockAt{t0})
	if err := e.Reconcile(t.Context()); !errors.Is(err, ErrNoAuthorizer) {
		t.Fatalf("err %v", err)
	}
	if f.creates != 1 {
		t.Fatalf("R8.2/%d CreateAcls sent without an authorizer", f.creates)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "protect", "result": "error"}); v != 300 {
		t.Errorf("actions{protect,error} %v, want 300", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "no_authorizer"}); v != 1 {
		t.Errorf("R8.2/error{no_authorizer} %v", v)
	}
}
