package enforcer

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

func denyAll(topic string) ACL { return ledger.LiteralACL(topic, AnyPrincipal, OpWrite, PermDeny) }

var (
	shapeDenyAll = Shape{Deny: []string{AnyPrincipal}}
	shapeAbsence = Shape{AllowOps: ledger.OpsButWrite}
)

func owns(s Shape, topics ...string) Owned {
	sc := s
	return Owned{Kind: OwnedACL, Shape: &sc, Topics: topics}
}

// releasingOwns is a claim being given up (spec R8.5).
func releasingOwns(s Shape, topics ...string) Owned {
	o := owns(s, topics...)
	o.Releasing = true
	return o
}

func bindings(s Shape, topics ...string) []ACL {
	var out []ACL
	for _, t := range topics {
		out = append(out, s.Bindings(t)...)
	}
	return out
}

// agentRecord is broker id's record protecting dir with owned, renewed at t0.
func agentRecord(id int32, owned ...Owned) Record {
	return Record{BrokerID: id, Strategy: StrategyACL, LogDirs: []string{dir}, Owned: owned, Renewed: t0, LeaseMs: 60000, Since: t0}
}

// protObs builds a protection observation: this agent is broker 1,
// enforcing, allow.everyone.if.no.acl.found false unless changed, with the
// evidence of a healthy cluster (withEvidence).
func protObs(s *agent.Snapshot, protected bool, recs Records, acls []ACL) Observed {
	return withEvidence(Observed{Now: t0, Snapshot: s, Protected: map[string]bool{dir: protected}, Offsets: map[TopicPartition]Offsets{},
		Protection: &ProtectionObserved{BrokerID: 1, Strategy: StrategyACL, Records: recs, RecordsRead: true, ACLs: acls, ACLsRead: true,
			QuotaRead: true, ProducerByteRate: 1024, Lease: time.Minute, Enforcing: true, AllowEveryone: AllowEveryoneFalse,
			OwnershipTopic: DefaultOwnershipTopic, ExemptTopics: DefaultExemptTopics()}})
}

func recs(rs ...Record) Records {
	out := ledger.NewRecords()
	for _, r := range rs {
		out.Agents[r.BrokerID] = r
	}
	return out
}

func planOf(o Observed) ProtectionPlan {
	return PlanActions(o, Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)).Protection
}

func TestDesiredProtection(t *testing.T) {
	cases := []struct {
		rule    string
		profile Profile
		usage   uint64 // of 1000
		was     bool
		stale   bool
		scanErr bool
		gone    bool
		want    bool
	}{
		{rule: "R3.1/protect at 90%", profile: CloudProfile(), usage: 900, want: true},
		{rule: "R3.1/no protection at 89.9%", profile: CloudProfile(), usage: 899},
		{rule: "R3.7/stays on at 89.9% (hysteresis)", profile: CloudProfile(), usage: 899, was: true, want: true},
		{rule: "R3.7/stays on at 85.0% (band - 5 points, inclusive)", profile: CloudProfile(), usage: 850, was: true, want: true},
		{rule: "R3.7/lifts at 84.9%", profile: CloudProfile(), usage: 849, was: true},
		{rule: "R3.2/local protects at 88%", profile: LocalProfile(), usage: 880, want: true},
		{rule: "R3.2/local lifts under 83%", profile: LocalProfile(), usage: 829, was: true},
		{rule: "R3.2/local stays at 83%", profile: LocalProfile(), usage: 830, was: true, want: true},
		{rule: "R3.3/serverless never protects", profile: ServerlessProfile(), usage: 999},
		{rule: "R6/stale keeps protection on", profile: CloudProfile(), usage: 100, was: true, stale: true, want: true},
		{rule: "R6/stale does not add protection", profile: CloudProfile(), usage: 990, stale: true},
		{rule: "R8.3/an unreadable log dir is no reason to protect", profile: CloudProfile(), usage: 950, scanErr: true},
		{rule: "R8.3/an unreadable log dir's protection is lifted", profile: CloudProfile(), usage: 950, was: true, scanErr: true},
		{rule: "R8.3/a broker the cluster does not list is no reason to protect anew", profile: CloudProfile(), usage: 990, gone: true},
		{rule: "R8.8/a broker fenced for a restart keeps its protection while the disk is full", profile: CloudProfile(), usage: 990, was: true, gone: true, want: true},
		{rule: "R8.8/a broker fenced for a restart keeps its protection through the hysteresis", profile: CloudProfile(), usage: 850, was: true, gone: true, want: true},
		{rule: "R8.8/a fenced broker's protection is lifted below the hysteresis", profile: CloudProfile(), usage: 849, was: true, gone: true},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := snap(c.usage, 1000)
			if c.scanErr {
				s.LogDirs[0].Err = fmt.Errorf("io")
			}
			o := withEvidence(Observed{Snapshot: s, Stale: c.stale, Protected: map[string]bool{dir: c.was}, BrokerNotAlive: c.gone})
			g := Desired(Policy{Profile: c.profile, HysteresisPoints: 5}, o)
			if g[0].Protect != c.want {
				t.Fatalf("protect %v, want %v", g[0].Protect, c.want)
			}
		})
	}
}

// Spec R8.3: the shape never adds an ALLOW where the broker would deny,
// keeps every right but WRITE where allow.everyone.if.no.acl.found gave
// them, and leaves exempt principals out where it can.
func TestShapeFor(t *testing.T) {
	allow := func(topic, principal, op string) ACL { return ledger.LiteralACL(topic, principal, op, PermAllow) }
	prefixed := func(prefix, principal, op string) ACL {
		return ACL{Topic: prefix, Pattern: PatternPrefixed, Principal: principal, Host: "10.0.0.1", Operation: op, Permission: PermAllow}
	}
	cases := []struct {
		rule       string
		in         ledger.ShapeInputs
		want       Shape
		impossible bool
	}{
		{rule: "R8.3/no ACL, allow.everyone true: every right but WRITE to User:*, no DENY",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue}, want: shapeAbsence},
		{rule: "R8.3/no ACL, allow.everyone true, exempt principals: ALLOW WRITE for them only",
			in:   ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue, Exempt: []string{"User:connect", "User:admin-tool"}},
			want: Shape{AllowOps: ledger.OpsButWrite, AllowWrite: []string{"User:admin-tool", "User:connect"}}},
		{rule: "R8.3/no ACL, allow.everyone false: DENY WRITE User:*, no ALLOW",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneFalse}, want: shapeDenyAll},
		{rule: "R8.3/no ACL, allow.everyone unknown: never taken for true",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneUnknown, Exempt: []string{"User:connect"}}, want: shapeDenyAll},
		{rule: "R8.3/an operator ACL on another topic does not count",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue, Operator: []ACL{allow("other", "User:alice", OpRead)}}, want: shapeAbsence},
		{rule: "R8.3/an operator ACL on the topic: nothing allowed, DENY WRITE User:*",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue, Operator: []ACL{allow("t", "User:alice", OpRead)}}, want: shapeDenyAll},
		{rule: "R8.3/a literal * ACL matches every topic",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue, Operator: []ACL{allow("*", "User:alice", OpRead)}}, want: shapeDenyAll},
		{rule: "R8.3/a prefixed ACL matches",
			in: ledger.ShapeInputs{AllowEveryone: AllowEveryoneTrue, Operator: []ACL{prefixed("t", "User:alice", OpDescribe)}}, want: shapeDenyAll},
		{rule: "R8.3/exempt principals under operator ACLs: DENY WRITE for each other writer",
			in: ledger.ShapeInputs{Exempt: []string{"User:connect"}, Operator: []ACL{allow("t", "User:connect", OpWrite),
				allow("t", "User:bob", OpWrite), prefixed("t", "User:carol", OpAll), allow("t", "User:dave", OpRead)}},
			want: Shape{Deny: []string{"User:bob", "User:carol"}}},
		{rule: "R8.3/only exempt principals may write: nothing to deny",
			in:   ledger.ShapeInputs{Exempt: []string{"User:connect"}, Operator: []ACL{allow("t", "User:connect", OpWrite)}},
			want: Shape{}},
		{rule: "R8.3/an operator ALLOW WRITE for User:*: exemption impossible, DENY WRITE User:*",
			in:   ledger.ShapeInputs{Exempt: []string{"User:connect"}, Operator: []ACL{allow("t", AnyPrincipal, OpWrite)}},
			want: shapeDenyAll, impossible: true},
		{rule: "R8.3/without exempt principals, operator ACLs: DENY WRITE User:*",
			in: ledger.ShapeInputs{Operator: []ACL{allow("t", "User:bob", OpWrite)}}, want: shapeDenyAll},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			got, impossible := ledger.ShapeFor("t", c.in)
			if !reflect.DeepEqual(got.Canonical(), c.want.Canonical()) || impossible != c.impossible {
				t.Fatalf("shape %+v impossible %v, want %+v %v", got, impossible, c.want, c.impossible)
			}
		})
	}
}

func TestExemptTopic(t *testing.T) {
	for _, c := range []struct {
		topic string
		want  bool
	}{
		{"__consumer_offsets", true}, {"__kafka_disk_guard_protection", true}, {"guard-records", true},
		{"connect-offsets", true}, {"_schemas", true}, {"team.connect-offsets", false}, {"orders", false},
		{"audit.orders", true},
	} {
		if got := exemptTopic(c.topic, "guard-records", append(DefaultExemptTopics(), "audit.*")); got != c.want {
			t.Errorf("R8.3/exempt %s: %v, want %v", c.topic, got, c.want)
		}
	}
}

func TestPlanProtectionACL(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)),
		part("__consumer_offsets", 0, 0, 0, seg(0, 1, O)), part("connect-offsets", 0, 0, 0, seg(0, 1, O)))
	calm := snap(100, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)))
	bob := ledger.LiteralACL("t2", "User:bob", OpRead, PermAllow)
	mine := agentRecord(1, owns(shapeDenyAll, "t1", "t2"))
	both := bindings(shapeDenyAll, "t1", "t2")
	everyone := func(o Observed) Observed { o.Protection.AllowEveryone = AllowEveryoneTrue; return o }

	cases := []struct {
		rule    string
		obs     Observed
		create  []ACL
		release []ACL
		write   bool
		owned   []Owned
		dirs    []string
	}{
		{
			rule:   "R8.3/allow.everyone false: DENY WRITE on every topic in the full log dir, nothing allowed, exempt topics left out",
			obs:    protObs(full, false, ledger.NewRecords(), nil),
			create: both, write: true, owned: []Owned{owns(shapeDenyAll, "t1", "t2")}, dirs: []string{dir},
		},
		{
			rule:   "R8.3/allow.everyone true: no operator ACL on t1 keeps its rights but WRITE; bob's ACL on t2 makes it DENY",
			obs:    everyone(protObs(full, false, ledger.NewRecords(), []ACL{bob})),
			create: append(bindings(shapeAbsence, "t1"), denyAll("t2")), write: true,
			owned: []Owned{owns(shapeDenyAll, "t2"), owns(shapeAbsence, "t1")}, dirs: []string{dir},
		},
		{
			rule:  "R4.3/idempotent: everything in place, nothing to do",
			obs:   protObs(full, true, recs(mine), append(slices.Clone(both), bob)),
			owned: mine.Owned, dirs: []string{dir},
		},
		{
			rule:   "R4.3/a binding removed behind the agent's back is recreated (level-triggered)",
			obs:    protObs(full, true, recs(mine), []ACL{denyAll("t2")}),
			create: []ACL{denyAll("t1")}, owned: mine.Owned, dirs: []string{dir},
		},
		{
			rule:  "R4.3/another agent's guard bindings are not operator ACLs: a second agent claims the same shapes",
			obs:   everyone(protObs(full, false, recs(agentRecord(2, owns(shapeAbsence, "t1"))), append(bindings(shapeAbsence, "t1"), bob))),
			write: true, create: []ACL{denyAll("t2")}, owned: []Owned{owns(shapeDenyAll, "t2"), owns(shapeAbsence, "t1")}, dirs: []string{dir},
		},
		{
			rule:    "R3.7/lifting releases exactly this agent's bindings, never an operator's",
			obs:     protObs(calm, true, recs(mine), append(slices.Clone(both), bob)),
			release: both, write: true, owned: []Owned{releasingOwns(shapeDenyAll, "t1", "t2")},
		},
		{
			rule:  "R8.1/after a restart, bindings already gone are not released again, the record is cleared",
			obs:   protObs(calm, true, recs(mine), nil),
			write: true,
		},
		{
			rule: "R8.4/bindings set unrecorded (the record write failed) are released like recorded ones",
			obs: func() Observed {
				o := protObs(calm, true, ledger.NewRecords(), both)
				o.Protection.Unrecorded = both
				return o
			}(),
			release: both, write: true, owned: []Owned{releasingOwns(shapeDenyAll, "t1", "t2")},
		},
		{
			rule:  "R8.3/internal and exempt topics are never protected",
			obs:   protObs(snap(950, 1000, part("__consumer_offsets", 0, 0, 0, seg(0, 1, O)), part("_schemas", 0, 0, 0, seg(0, 1, O))), false, ledger.NewRecords(), nil),
			write: true, dirs: []string{dir},
		},
		{
			rule:  "R4.4/observe mode: this agent wants nothing and lifts what it set earlier",
			obs:   func() Observed { o := protObs(full, true, recs(mine), both); o.Protection.Enforcing = false; return o }(),
			write: true, release: both, owned: []Owned{releasingOwns(shapeDenyAll, "t1", "t2")},
		},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			p := planOf(c.obs)
			for _, x := range [][]ACL{c.create, c.release} {
				ledger.SortACLs(x)
			}
			if got := flatten(p.Create); !reflect.DeepEqual(got, c.create) && len(got)+len(c.create) > 0 {
				t.Errorf("create\n got %v\nwant %v", got, c.create)
			}
			if got := flatten(p.Release); !reflect.DeepEqual(got, c.release) && len(got)+len(c.release) > 0 {
				t.Errorf("release\n got %v\nwant %v", got, c.release)
			}
			if p.Write != c.write {
				t.Errorf("write %v, want %v", p.Write, c.write)
			}
			if !ledger.SameOwned(p.Record.Owned, c.owned) || !slices.Equal(p.Record.LogDirs, c.dirs) {
				t.Errorf("record owns %+v dirs %v, want %+v %v", p.Record.Owned, p.Record.LogDirs, c.owned, c.dirs)
			}
		})
	}
}

func TestPlanProtectionQuota(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)))
	calm := snap(100, 1000, part("t1", 0, 0, 0, seg(0, 1, O)))
	quotaRec := func(id int32) Record {
		r := agentRecord(id, ledger.QuotaOwned(1024))
		r.Strategy = StrategyQuota
		return r
	}
	obs := func(s *agent.Snapshot, was bool, rs Records, current int64) Observed {
		o := protObs(s, was, rs, nil)
		o.Protection.Strategy = StrategyQuota
		o.Protection.ACLsRead = false
		o.Protection.DefaultProducerByteRate = current
		return o
	}
	cases := []struct {
		rule     string
		obs      Observed
		set      int64
		release  int64
		operator bool
		claim    int64
	}{
		{"R4.3/quota set on the default client entity", obs(full, false, ledger.NewRecords(), 0), 1024, 0, false, 1024},
		{"R8.2/an operator's default quota is never touched, and not claimed", obs(full, false, ledger.NewRecords(), 5000), 0, 0, true, 0},
		{"R4.3/quota already set by this agent: idempotent", obs(full, true, recs(quotaRec(1)), 1024), 0, 0, false, 1024},
		{"R4.3/another agent's quota is shared, not an operator's", obs(full, false, recs(quotaRec(2)), 1024), 0, 0, false, 1024},
		{"R3.7/released when calm", obs(calm, true, recs(quotaRec(1)), 1024), 0, 1024, false, 0},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			p := planOf(c.obs)
			if p.SetQuota != c.set || p.ReleaseQuota != c.release || p.OperatorQuota != c.operator || p.Record.Quota() != c.claim {
				t.Fatalf("plan set=%d release=%d operator=%v claim=%d", p.SetQuota, p.ReleaseQuota, p.OperatorQuota, p.Record.Quota())
			}
		})
	}
}

// Spec R8.1: a lease is renewed every third of its length while the
// inputs are trusted, never on a stale snapshot; expired peers are lifted
// unless a lift is already pending.
func TestPlanLeaseAndPeerLifts(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)))
	mine := agentRecord(1, owns(shapeDenyAll, "t1"))
	t.Run("R8.1/renewed after a third of the lease", func(t *testing.T) {
		o := protObs(full, true, recs(mine), []ACL{denyAll("t1")})
		o.Now = t0.Add(19 * time.Second)
		if p := planOf(o); p.Write {
			t.Fatalf("renewed after 19s of a 60s lease")
		}
		o.Now = t0.Add(20 * time.Second)
		if p := planOf(o); !p.Write || !p.Record.Renewed.Equal(o.Now) {
			t.Fatalf("not renewed after 20s: write %v renewed %v", p.Write, p.Record.Renewed)
		}
	})
	t.Run("R8.1/never renewed on a stale snapshot", func(t *testing.T) {
		o := protObs(full, true, recs(mine), []ACL{denyAll("t1")})
		o.Now, o.Stale = t0.Add(time.Hour), true
		if p := planOf(o); p.Write || len(p.Release) > 0 {
			t.Fatalf("stale snapshot: write %v release %v", p.Write, p.Release)
		}
	})
	t.Run("R8.1/an expired peer is lifted: its bindings in place are released", func(t *testing.T) {
		other := agentRecord(2, owns(shapeDenyAll, "t1", "t9"))
		o := protObs(full, false, recs(other), []ACL{denyAll("t1")})
		o.Protection.Expired = map[int32]string{2: LiftLeaseExpired}
		p := planOf(o)
		if len(p.Lifts) != 1 || p.Lifts[0].BrokerID != 2 || !reflect.DeepEqual(p.Lifts[0].Release, []ACL{denyAll("t1")}) || p.Lifts[0].Topics != 2 {
			t.Fatalf("lifts %+v", p.Lifts)
		}
		o.Protection.Records.Lifts[2] = Lift{ID: "x", BrokerID: 2, Kind: LiftLeaseExpired}
		if p := planOf(o); len(p.Lifts) != 1 || !p.Lifts[0].Retry || !reflect.DeepEqual(p.Lifts[0].Release, []ACL{denyAll("t1")}) {
			t.Fatalf("R8.5/a pending lift whose binding is still in place: the release is driven again, no new lift: %+v", p.Lifts)
		}
		o.Protection.ACLs = nil
		if p := planOf(o); len(p.Lifts) != 0 {
			t.Fatalf("lifted again while a lift is pending and nothing is in place: %+v", p.Lifts)
		}
	})
}

// Spec R8.1: an operator's lift voids the claims it covers until the
// agent acknowledges it; the agent does not protect that scope again in
// the same episode, and does once the episode ended.
func TestPlanAcknowledgesLifts(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)))
	calm := snap(100, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)))
	mine := agentRecord(1, owns(shapeDenyAll, "t1", "t2"))
	rs := recs(mine)
	rs.Lifts[1] = Lift{ID: "op-1", BrokerID: 1, Kind: LiftOperator, By: "operator alice", Topics: []string{"t1"}}
	if rs.Live(1, "t1") || !rs.Live(1, "t2") {
		t.Fatal("R8.1/a pending lift of t1 voids exactly t1")
	}
	if live := rs.LiveBindings(); live[denyAll("t1")] || !live[denyAll("t2")] {
		t.Fatalf("R8.1/live bindings %v", live)
	}
	p := planOf(protObs(full, true, rs, []ACL{denyAll("t2")}))
	if p.Acked == nil || p.Record.Ack != "op-1" || p.Record.Suppressed == nil || !slices.Equal(p.Record.Suppressed.Topics, []string{"t1"}) {
		t.Fatalf("R8.1/ack %+v suppressed %+v", p.Record.Ack, p.Record.Suppressed)
	}
	if len(p.Create) != 0 || !slices.Equal(p.Record.ACLTopics(), []string{"t2"}) {
		t.Fatalf("R8.1/protected the lifted topic again: create %v topics %v", p.Create, p.Record.ACLTopics())
	}
	// The next pass: acknowledged, still suppressed.
	rs.Agents[1] = p.Record
	p = planOf(protObs(full, true, rs, []ACL{denyAll("t2")}))
	if p.Acked != nil || len(p.Create) != 0 || p.Record.Suppressed == nil {
		t.Fatalf("R8.1/second pass: acked %v create %v suppressed %v", p.Acked, p.Create, p.Record.Suppressed)
	}
	// The episode ends: the suppression with it.
	rs.Agents[1] = p.Record
	p = planOf(protObs(calm, true, rs, []ACL{denyAll("t2")}))
	if p.Record.Suppressed != nil || len(p.Record.Held()) > 0 || !ledger.SameOwned(p.Record.Releasing(), []Owned{releasingOwns(shapeDenyAll, "t2")}) {
		t.Fatalf("R8.1/after the episode: %+v", p.Record)
	}
	// Withdrawn (protection resume): protected again at once.
	rs.Agents[1] = agentRecord(1, owns(shapeDenyAll, "t2"))
	rs.Agents[1] = func(r Record) Record {
		r.Ack, r.Suppressed = "op-1", &Suppression{LiftID: "op-1", Topics: []string{"t1"}}
		return r
	}(rs.Agents[1])
	delete(rs.Lifts, 1)
	p = planOf(protObs(full, true, rs, []ACL{denyAll("t2")}))
	if p.Record.Suppressed != nil || !reflect.DeepEqual(flatten(p.Create), []ACL{denyAll("t1")}) {
		t.Fatalf("R8.1/after resume: suppressed %v create %v", p.Record.Suppressed, p.Create)
	}
}
