package simbroker

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// TestAuthorizeStandardAuthorizer: the simulated authorizer answers as
// Kafka's StandardAuthorizer: super users bypass, DENY wins, ALLOW of
// READ/WRITE/DELETE/ALTER implies DESCRIBE, and
// allow.everyone.if.no.acl.found applies only while no binding matches
// the topic.
func TestAuthorizeStandardAuthorizer(t *testing.T) {
	acl := func(topic, principal, op, perm string) ledger.ACL {
		return ledger.ACL{Topic: topic, Pattern: ledger.PatternLiteral, Principal: principal, Host: ledger.AnyHost,
			Operation: op, Permission: perm}
	}
	acls := map[ledger.ACL]bool{
		acl("t", ledger.AnyPrincipal, ledger.OpWrite, ledger.PermDeny): true,
		acl("t", ledger.AnyPrincipal, ledger.OpRead, ledger.PermAllow): true,
		acl("t", "User:alice", ledger.OpWrite, ledger.PermAllow):       true,
		acl("u", "User:bob", "ALTER", ledger.PermAllow):                true,
		{Topic: "pre", Pattern: ledger.PatternPrefixed, Principal: "User:bob", Host: ledger.AnyHost, Operation: ledger.OpAll, Permission: ledger.PermAllow}: true,
	}
	super := []string{"User:admin"}
	for _, c := range []struct {
		principal, topic, op string
		everyone, want       bool
	}{
		{"User:alice", "t", ledger.OpWrite, true, false}, // DENY User:* wins over ALLOW alice
		{"User:admin", "t", ledger.OpWrite, false, true}, // a super user bypasses
		{"User:carol", "t", ledger.OpRead, false, true},
		{"User:carol", "t", ledger.OpDescribe, false, true}, // READ implies DESCRIBE
		{"User:carol", "t", ledger.OpDelete, true, false},   // bindings on t: allow-everyone does not apply
		{"User:bob", "u", ledger.OpDescribe, false, true},   // ALTER implies DESCRIBE
		{"User:carol", "u", ledger.OpRead, true, false},
		{"User:carol", "v", ledger.OpWrite, true, true}, // no binding on v
		{"User:carol", "v", ledger.OpWrite, false, false},
		{"User:bob", "other", ledger.OpWrite, false, false},
		{"User:bob", "pre-1", ledger.OpWrite, false, true}, // a prefixed ALL
		{"User:carol", "pre-1", ledger.OpWrite, true, false},
	} {
		if got := (Authorizer{ACLs: acls, SuperUsers: super, AllowEveryone: c.everyone}).Authorize(c.principal, c.topic, c.op); got != c.want {
			t.Errorf("%s %s on %s (allow everyone %v): %v, want %v", c.principal, c.op, c.topic, c.everyone, got, c.want)
		}
	}
}
