package ledger

import (
	"cmp"
	"slices"
	"strings"
)

// ACL is one ACL binding on a topic. The guard's own are always literal,
// from host *.
type ACL struct {
	Topic      string `json:"topic"`
	Pattern    string `json:"pattern,omitempty"` // literal (default) or prefixed; observed only
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Operation  string `json:"operation"`  // WRITE, READ, DESCRIBE, ...
	Permission string `json:"permission"` // ALLOW or DENY
}

// ACL fields the guard uses.
const (
	PatternLiteral  = "literal"
	PatternPrefixed = "prefixed"
	AnyPrincipal    = "User:*"
	AnyHost         = "*"
	OpAll           = "ALL"
	OpWrite         = "WRITE"
	OpRead          = "READ"
	OpDescribe      = "DESCRIBE"
	OpCreate        = "CREATE"
	OpDelete        = "DELETE"
	OpAlter         = "ALTER"
	OpAlterConfigs  = "ALTER_CONFIGS"
	OpDescribeConfs = "DESCRIBE_CONFIGS"
	PermAllow       = "ALLOW"
	PermDeny        = "DENY"
)

// OpsButWrite are the topic operations a broker with
// allow.everyone.if.no.acl.found=true gives everyone on a topic without
// ACLs, WRITE left out: what the "absence" shape keeps. DESCRIBE and
// DESCRIBE_CONFIGS need no binding of their own: an ALLOW of READ, DELETE
// or ALTER implies DESCRIBE, one of ALTER_CONFIGS implies DESCRIBE_CONFIGS
// (Kafka's StandardAuthorizer, and AclAuthorizer before it).
var OpsButWrite = []string{OpAlter, OpAlterConfigs, OpCreate, OpDelete, OpRead}

func LiteralACL(topic, principal, op, perm string) ACL {
	return ACL{Topic: topic, Pattern: PatternLiteral, Principal: principal, Host: AnyHost, Operation: op, Permission: perm}
}

// matches reports whether the binding applies to topic as the authorizer
// decides it: literal on the name or on "*", or prefixed.
func (a ACL) Matches(topic string) bool {
	switch a.Pattern {
	case PatternPrefixed:
		return strings.HasPrefix(topic, a.Topic)
	case PatternLiteral, "":
		return a.Topic == topic || a.Topic == "*"
	}
	return false
}

func NormACL(a ACL) ACL {
	if a.Pattern == "" {
		a.Pattern = PatternLiteral
	}
	return a
}

func SortACLs(acls []ACL) {
	slices.SortFunc(acls, func(a, b ACL) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Permission, b.Permission),
			cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Principal, b.Principal))
	})
}

// Shape is how one topic is write-protected (spec R8.3): the bindings the
// guard adds, derived from the topic name, so a record stores the topic
// and its shape, not the bindings.
type Shape struct {
	// Deny: principals denied WRITE (User:* for everyone).
	Deny []string `json:"deny,omitempty"`
	// AllowOps: operations allowed to User:*: on a topic without ACLs of
	// a broker with allow.everyone.if.no.acl.found=true, every operation
	// but WRITE, which the first ACL on the topic would take away.
	AllowOps []string `json:"allow_ops,omitempty"`
	// AllowWrite: principals allowed WRITE beside AllowOps (the exempt
	// principals; everyone else is denied by absence).
	AllowWrite []string `json:"allow_write,omitempty"`
}

// Bindings lists the shape's bindings on topic.
func (s Shape) Bindings(topic string) []ACL {
	out := make([]ACL, 0, len(s.Deny)+len(s.AllowOps)+len(s.AllowWrite))
	for _, p := range s.Deny {
		out = append(out, LiteralACL(topic, p, OpWrite, PermDeny))
	}
	for _, op := range s.AllowOps {
		out = append(out, LiteralACL(topic, AnyPrincipal, op, PermAllow))
	}
	for _, p := range s.AllowWrite {
		out = append(out, LiteralACL(topic, p, OpWrite, PermAllow))
	}
	return out
}

// keepsAccess reports whether a binding keeps someone's access while the
// rest of its topic's bindings are not in place: an ALLOW of READ (User:*,
// the consumers, in the absence shape) or of WRITE (the exempt
// principals). A topic's first binding takes allow.everyone.if.no.acl.found
// away from it, and the broker puts the bindings of one CreateAcls or
// DeleteAcls request in place one at a time, its authorizer deciding
// between any two (KRaft replays one record per binding): these go in
// first and out last.
func keepsAccess(a ACL) bool {
	return a.Permission == PermAllow && (a.Operation == OpRead || a.Operation == OpWrite)
}

// createRank orders a topic's bindings for creating: the ALLOW of READ,
// then the ALLOWs of WRITE, then the other ALLOWs, the DENYs last.
func createRank(a ACL) int {
	switch {
	case a.Permission == PermAllow && a.Operation == OpRead:
		return 0
	case keepsAccess(a):
		return 1
	case a.Permission == PermAllow:
		return 2
	}
	return 3
}

// CreateOrder orders each run of one topic's bindings in acls for a
// CreateAcls request (the broker puts them in place in the request's
// order): an ALLOW of READ first, so consumers are never refused on a
// topic of the absence shape (spec R4.3), then the exempt principals'
// ALLOWs of WRITE, then the other ALLOWs, the DENYs last (a DENY never
// lands before the ALLOWs of its topic). The topics keep their order.
func CreateOrder(acls []ACL) {
	for start := 0; start < len(acls); {
		end := start + 1
		for end < len(acls) && acls[end].Topic == acls[start].Topic {
			end++
		}
		slices.SortStableFunc(acls[start:end], func(a, b ACL) int { return cmp.Compare(createRank(a), createRank(b)) })
		start = end
	}
}

// DeleteOrder splits bindings to delete into two DeleteAcls requests:
// first every binding but the ALLOWs of READ and WRITE, last those (the
// broker removes a request's bindings in no order of the request's).
// Until the last request, consumers and exempt principals keep their
// access on a topic of the absence shape (spec R4.3), and everyone else
// stays refused.
func DeleteOrder(acls []ACL) (first, last []ACL) {
	for _, a := range acls {
		if keepsAccess(a) {
			last = append(last, a)
		} else {
			first = append(first, a)
		}
	}
	return first, last
}

// Empty reports whether the shape adds no binding.
func (s Shape) Empty() bool { return len(s.Deny)+len(s.AllowOps)+len(s.AllowWrite) == 0 }

func (s Shape) Canonical() Shape {
	sorted := func(x []string) []string {
		if len(x) == 0 {
			return nil
		}
		y := slices.Clone(x)
		slices.Sort(y)
		return slices.Compact(y)
	}
	return Shape{Deny: sorted(s.Deny), AllowOps: sorted(s.AllowOps), AllowWrite: sorted(s.AllowWrite)}
}

func (s Shape) Key() string {
	return strings.Join(s.Deny, ",") + "|" + strings.Join(s.AllowOps, ",") + "|" + strings.Join(s.AllowWrite, ",")
}

// String names the shape for logs and the status command.
func (s Shape) String() string {
	var parts []string
	if len(s.Deny) > 0 {
		parts = append(parts, "DENY WRITE "+strings.Join(s.Deny, ","))
	}
	if len(s.AllowOps) > 0 {
		parts = append(parts, "ALLOW "+strings.Join(s.AllowOps, ",")+" "+AnyPrincipal)
	}
	if len(s.AllowWrite) > 0 {
		parts = append(parts, "ALLOW WRITE "+strings.Join(s.AllowWrite, ","))
	}
	return strings.Join(parts, "; ")
}

// AllowEveryone is what the guard knows of the brokers'
// allow.everyone.if.no.acl.found.
type AllowEveryone int8

// Values of AllowEveryone. The brokers report the setting through
// DescribeConfigs as a sensitive entry without a value (it is the
// authorizer's, not a broker config Kafka defines): an absent entry means
// unset, Kafka's default false; a present one is unknown unless the
// operator says (enforcer.protection.allowEveryoneIfNoAclFound).
const (
	AllowEveryoneUnknown AllowEveryone = iota
	AllowEveryoneFalse
	AllowEveryoneTrue
)

func (a AllowEveryone) String() string {
	switch a {
	case AllowEveryoneTrue:
		return "true"
	case AllowEveryoneFalse:
		return "false"
	}
	return "unknown"
}

// ShapeInputs are what decides a topic's shape.
type ShapeInputs struct {
	// Operator: every topic ACL not named by any guard record.
	Operator      []ACL
	AllowEveryone AllowEveryone
	// Exempt: principals that keep writing (enforcer.protection.exemptPrincipals).
	Exempt []string
}

// ShapeFor decides how to protect topic without widening access (spec
// R8.3). Any ACL that matches a topic switches
// allow.everyone.if.no.acl.found off for it, and a DENY beats every
// ALLOW, so:
//
//   - no ACL on the topic, allow.everyone true: the broker let everyone do
//     everything. ALLOW every operation but WRITE to User:*, ALLOW WRITE
//     to the exempt principals: everyone else is denied WRITE by absence,
//     and keeps every other right (reading, altering configs, deleting
//     records);
//   - no ACL on the topic, allow.everyone false or unknown: only super
//     users had access, and they bypass ACLs. DENY WRITE User:* changes
//     nothing for anyone but shows the protection; no ALLOW is added
//     (unknown is never taken for true);
//   - operator ACLs on the topic: they decide, nothing is allowed. Without
//     exempt principals, DENY WRITE User:*. With them, DENY WRITE for each
//     principal an ALLOW of WRITE or ALL matches, exempt ones left out;
//     when such an ALLOW names User:* no principal can be left out, and
//     the topic gets DENY WRITE User:* (impossible is true).
func ShapeFor(topic string, in ShapeInputs) (s Shape, impossible bool) {
	var matching []ACL
	for _, a := range in.Operator {
		if a.Matches(topic) {
			matching = append(matching, a)
		}
	}
	deny := Shape{Deny: []string{AnyPrincipal}}
	if len(matching) == 0 {
		if in.AllowEveryone == AllowEveryoneTrue {
			return Shape{AllowOps: slices.Clone(OpsButWrite), AllowWrite: slices.Clone(in.Exempt)}.Canonical(), false
		}
		return deny, false
	}
	if len(in.Exempt) == 0 {
		return deny, false
	}
	var writers []string
	for _, a := range matching {
		if a.Permission != PermAllow || (a.Operation != OpWrite && a.Operation != OpAll) {
			continue
		}
		if a.Principal == AnyPrincipal {
			return deny, true
		}
		if !slices.Contains(in.Exempt, a.Principal) {
			writers = append(writers, a.Principal)
		}
	}
	return Shape{Deny: writers}.Canonical(), false
}

// LooksLikeGuard reports whether a binding has the form of one the guard
// sets: literal, host *, DENY WRITE, or ALLOW for User:* of an operation
// but WRITE. Such a binding that no record claims is shown as
// unattributed (the guard may have set it and died before recording it,
// or an operator made it); the guard never lifts it.
func LooksLikeGuard(a ACL) bool {
	a = NormACL(a)
	if a.Pattern != PatternLiteral || a.Host != AnyHost {
		return false
	}
	if a.Permission == PermDeny {
		return a.Operation == OpWrite
	}
	return a.Principal == AnyPrincipal && a.Operation != OpWrite && a.Operation != OpAll
}
