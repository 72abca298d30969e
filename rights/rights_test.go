package rights

import (
	"slices"
	"strings"
	"testing"
)

func all(ops ...Operation) Ops {
	m := Ops{}
	for _, o := range []Operation{Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs} {
		m[o] = slices.Contains(ops, o)
	}
	return m
}

func everything() Held {
	return Held{
		Cluster:        all(Create, Alter, Describe, DescribeConfigs, AlterConfigs),
		Topics:         map[string]TopicHeld{"orders": {Exists: true, Ops: all(Delete, Describe, DescribeConfigs, AlterConfigs)}, "clicks": {Exists: true, Ops: all(Delete, Describe, DescribeConfigs, AlterConfigs)}},
		OwnershipTopic: "__kafka_disk_guard_protection",
		Ownership:      TopicHeld{Exists: true, Ops: all(Read, Write, Describe)},
	}
}

// gapNames renders gaps as "feature scope:OP [topics] ?" for comparison.
func gapNames(gs []Gap) []string {
	var out []string
	for _, g := range gs {
		s := string(g.Feature) + " " + string(g.Scope) + ":" + string(g.Operation)
		if len(g.Topics) > 0 {
			s += " " + strings.Join(g.Topics, ",")
		}
		if g.Unknown {
			s += " ?"
		}
		out = append(out, s)
	}
	return out
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name     string
		spoil    func(*Held)
		features []Feature
		want     []string
	}{
		{"all present", func(*Held) {}, Features(), nil},
		{"DELETE missing on one topic", func(h *Held) { h.Topics["orders"].Ops[Delete] = false },
			[]Feature{Observe, DeleteRecords}, []string{"delete_records topics:DELETE orders"}},
		{"not allowed to describe a topic: every topic need of it unknown", func(h *Held) {
			h.Topics["clicks"] = TopicHeld{Exists: true, Err: "TOPIC_AUTHORIZATION_FAILED"}
		}, []Feature{Observe, DeleteRecords}, []string{
			"observe topics:DESCRIBE clicks ?", "observe topics:DESCRIBE_CONFIGS clicks ?",
			"delete_records topics:DESCRIBE clicks ?", "delete_records topics:DELETE clicks ?"}},
		{"no ALTER on the cluster: ACL protection, moves within the broker and reassignments", func(h *Held) { h.Cluster[Alter] = false },
			Features(), []string{"protect_acl cluster:ALTER", "move cluster:ALTER", "reassign cluster:ALTER"}},
		{"reassignments need the brokers' and the moved topics' configs", func(h *Held) {
			h.Cluster[AlterConfigs] = false
			h.Topics["orders"].Ops[AlterConfigs] = false
		}, []Feature{Reassign}, []string{"reassign cluster:ALTER_CONFIGS", "reassign topics:ALTER_CONFIGS orders"}},
		{"cordon and move need the broker's configs", func(h *Held) { h.Cluster[AlterConfigs] = false },
			[]Feature{Cordon, Move}, []string{"cordon cluster:ALTER_CONFIGS", "move cluster:ALTER_CONFIGS"}},
		{"cluster operations unknown", func(h *Held) { h.Cluster, h.ClusterErr = nil, "broker unreachable" },
			[]Feature{Observe}, []string{"observe cluster:DESCRIBE ?", "observe cluster:DESCRIBE_CONFIGS ?"}},
		{"ownership topic absent, creatable through Cluster:CREATE", func(h *Held) {
			h.Ownership = TopicHeld{Ops: all(Read, Write, Describe)}
		}, []Feature{ProtectACL}, nil},
		{"ownership topic absent, not creatable", func(h *Held) {
			h.Cluster[Create] = false
			h.Ownership = TopicHeld{Ops: all(Read, Write, Describe)}
		}, []Feature{ProtectACL, ProtectQuota}, []string{"protect_acl ownership:CREATE", "protect_quota ownership:CREATE"}},
		{"ownership topic exists: CREATE not needed", func(h *Held) { h.Cluster[Create] = false },
			[]Feature{ProtectACL}, nil},
		{"ownership topic not writable, not readable", func(h *Held) { h.Ownership.Ops = all(Describe) },
			[]Feature{ProtectQuota}, []string{"protect_quota ownership:READ", "protect_quota ownership:WRITE"}},
		{"ownership rights unknown", func(h *Held) { h.Ownership = TopicHeld{Exists: true, Err: "TOPIC_AUTHORIZATION_FAILED"} },
			[]Feature{ProtectACL}, []string{"protect_acl ownership:DESCRIBE ?", "protect_acl ownership:READ ?", "protect_acl ownership:WRITE ?"}},
		{"tiered topics need ALTER_CONFIGS", func(h *Held) {
			for _, t := range []string{"orders", "clicks"} {
				h.Topics[t].Ops[AlterConfigs] = false
			}
		}, []Feature{Observe, Tiered}, []string{"tiered topics:ALTER_CONFIGS clicks,orders"}},
		{"no authorizer: ACLs cannot protect", func(h *Held) { h.NoAuthorizer = true },
			[]Feature{ProtectACL, ProtectQuota}, []string{"protect_acl cluster:"}},
		{"quota protection", func(h *Held) { h.Cluster[AlterConfigs], h.Cluster[DescribeConfigs] = false, false },
			[]Feature{ProtectQuota}, []string{"protect_quota cluster:DESCRIBE_CONFIGS", "protect_quota cluster:ALTER_CONFIGS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := everything()
			tt.spoil(&h)
			r := Evaluate(h, tt.features...)
			if got := gapNames(r.Gaps); !slices.Equal(got, tt.want) {
				t.Errorf("gaps\n got  %q\n want %q", got, tt.want)
			}
			if r.OK() != (len(tt.want) == 0) || r.Checked != len(h.Topics) {
				t.Errorf("OK %v, checked %d", r.OK(), r.Checked)
			}
			for _, f := range Features() {
				ok := slices.Contains(tt.features, f)
				for _, w := range tt.want {
					if strings.HasPrefix(w, string(f)+" ") {
						ok = false
					}
				}
				if r.FeatureOK(f) != ok {
					t.Errorf("FeatureOK(%s) = %v", f, r.FeatureOK(f))
				}
			}
		})
	}
}

func TestReportString(t *testing.T) {
	h := everything()
	h.Topics = map[string]TopicHeld{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		h.Topics[n] = TopicHeld{Exists: true, Ops: all(Describe, DescribeConfigs)}
	}
	h.Cluster[Alter] = false
	h.Ownership = TopicHeld{Exists: true, Err: "TOPIC_AUTHORIZATION_FAILED"}
	got := Evaluate(h, DeleteRecords, ProtectACL).String()
	for _, want := range []string{
		"delete_records: missing Topic:DELETE (DeleteRecords) on 6 topic(s): a, b, c, d, e, ...",
		"protect_acl: missing Cluster:ALTER (CreateAcls, DeleteAcls)",
		"protect_acl: cannot tell whether the principal holds Topic(ownership):WRITE (Produce of this agent's ownership record) (__kafka_disk_guard_protection: TOPIC_AUTHORIZATION_FAILED)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	h = everything()
	h.NoAuthorizer = true
	if s := Evaluate(h, ProtectACL).String(); s != "protect_acl: missing an authorizer on the brokers (authorizer.class.name) "+
		"(DescribeAcls answers SECURITY_DISABLED: ACLs cannot refuse writes; use the quota strategy)" {
		t.Errorf("no authorizer: %q", s)
	}
	if s := Evaluate(everything(), Features()...).String(); s != "all rights present" {
		t.Errorf("complete report: %q", s)
	}
}

// Every feature has needs; every need names its calls.
func TestNeedsTable(t *testing.T) {
	for _, f := range Features() {
		ns := Needs(f)
		if len(ns) == 0 {
			t.Errorf("feature %s needs nothing", f)
		}
		for _, n := range ns {
			if n.Feature != f || n.Calls == "" || n.Operation == "" {
				t.Errorf("need %+v", n)
			}
		}
	}
	if n := (Need{Scope: ScopeCluster, Operation: Alter, Calls: "CreateAcls"}); n.Resource() != Cluster || n.String() != "Cluster:ALTER (CreateAcls)" {
		t.Errorf("%s", n)
	}
}

// The bindings of every feature: each operation of the table once, on the
// cluster, every topic or the ownership topic.
func TestACLs(t *testing.T) {
	var got []string
	for _, a := range ACLs("own", Features()...) {
		got = append(got, a.String())
	}
	want := []string{
		"Cluster:kafka-cluster:DESCRIBE", "Cluster:kafka-cluster:DESCRIBE_CONFIGS", "Topic:*:DESCRIBE", "Topic:*:DESCRIBE_CONFIGS",
		"Topic:*:DELETE", "Cluster:kafka-cluster:ALTER", "Topic:own:CREATE", "Topic:own:DESCRIBE", "Topic:own:READ", "Topic:own:WRITE",
		"Cluster:kafka-cluster:ALTER_CONFIGS", "Topic:*:ALTER_CONFIGS",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ACLs\n got %q\nwant %q", got, want)
	}
	if got := ACLs("own", Observe); len(got) != 4 {
		t.Errorf("observe alone: %v", got)
	}
}

// R3.8: `relief plan --execute` needs no right beyond the agent's
// features' (the one list the docs give), so the guard's principal runs it.
func TestReliefRightsWithinTheGuards(t *testing.T) {
	all := ACLs("__kafka_disk_guard_protection", Features()...)
	need := ACLs("__kafka_disk_guard_protection", Relief)
	if len(need) == 0 {
		t.Fatal("relief needs no rights")
	}
	for _, a := range need {
		if !slices.Contains(all, a) {
			t.Errorf("relief needs %v, which the documented rights lack", a)
		}
	}
	// --execute writes its throttle claim to the ownership topic and
	// reads the others' first (a principal without them fails midway).
	for _, op := range []Operation{Describe, Read, Write} {
		a := ACL{Resource: Topic, Name: "__kafka_disk_guard_protection", Operation: op}
		if !slices.Contains(need, a) {
			t.Errorf("relief's rights lack %v", a)
		}
	}
	if slices.Contains(Features(), Relief) {
		t.Error("relief is an operator's command, not an agent feature")
	}
}
