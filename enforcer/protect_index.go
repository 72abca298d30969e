package enforcer

import (
	"slices"
	"strings"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// bindingIndex is a set of ACL bindings, normalised, indexed by topic. A
// pass that protects 10,000 topics handles up to 50,000 bindings: a topic
// has a handful, so a look-up hashes the topic name and compares a few
// bindings, where a map keyed by the binding hashes its six strings and
// grows by rehashing.
type bindingIndex map[string][]ACL

// add puts a in the set; it reports whether a was not there.
func (x bindingIndex) add(a ACL) bool {
	a = ledger.NormACL(a)
	if x.has(a) {
		return false
	}
	x[a.Topic] = append(x[a.Topic], a)
	return true
}

// has reports whether a is in the set.
func (x bindingIndex) has(a ACL) bool {
	return slices.Contains(x[a.Topic], ledger.NormACL(a))
}

// guardIndex is every binding any record names, voided or not, with
// extra (the bindings this agent set unrecorded): the guard's, never an
// operator's (what ledger.Records.GuardBindings returns, by topic).
func guardIndex(rs Records, extra []ACL) bindingIndex {
	x := bindingIndex{}
	for _, r := range rs.Agents {
		r.Bindings(nil, func(a ACL) { x.add(a) })
	}
	for _, a := range extra {
		x.add(a)
	}
	return x
}

// operatorIndex holds the operator's ACLs by how they match a topic, so
// deciding 10,000 topics' shapes does not match every ACL against every
// topic: literal ones by name ("*" included, as its own name), prefixed
// ones in a list (few in practice). A pattern the authorizer does not
// match by name (match, any) applies to no topic (ledger.ACL.Matches).
type operatorIndex struct {
	literal  map[string][]ACL
	prefixed []ACL
}

func newOperatorIndex(acls []ACL) operatorIndex {
	x := operatorIndex{literal: map[string][]ACL{}}
	for _, a := range acls {
		switch a.Pattern {
		case ledger.PatternPrefixed:
			x.prefixed = append(x.prefixed, a)
		case ledger.PatternLiteral, "":
			x.literal[a.Topic] = append(x.literal[a.Topic], a)
		}
	}
	return x
}

// matching lists the ACLs that apply to topic (ledger.ACL.Matches), in no
// particular order (ledger.ShapeFor does not depend on it).
func (x operatorIndex) matching(topic string) []ACL {
	lit, wild := x.literal[topic], x.literal["*"]
	if topic == "*" {
		wild = nil
	}
	if len(wild) == 0 && len(x.prefixed) == 0 {
		return lit
	}
	out := append(slices.Clone(lit), wild...)
	for _, a := range x.prefixed {
		if strings.HasPrefix(topic, a.Topic) {
			out = append(out, a)
		}
	}
	return out
}
