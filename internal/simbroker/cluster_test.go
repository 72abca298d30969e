package simbroker

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// TestAuthorizeStandardAuthorizer: the simulated authorizer answers as
// Kafka's StandardAuthorizer: super users bypass, DENY wins, ALLOW of
// READ/WRITE/DELETE/ALTER implies DESCRIBE, and
// allow.everyone.if.no.acl.found applies only while no binding matches
// the topic.
func TestAuthorizeStandardAuthorizer(t *testing.T) {
	acl := func(topic, principal, op, perm string) enforcer.ACL {
		return enforcer.ACL{Topic: topic, Pattern: enforcer.PatternLiteral, Principal: principal, Host: enforcer.AnyHost,
			Operation: op, Permission: perm}
	}
	acls := map[enforcer.ACL]bool{
		acl("t", enforcer.AnyPrincipal, enforcer.OpWrite, enforcer.PermDeny): true,
		acl("t", enforcer.AnyPrincipal, enforcer.OpRead, enforcer.PermAllow): true,
		acl("t", "User:alice", enforcer.OpWrite, enforcer.PermAllow):         true,
		acl("u", "User:bob", "ALTER", enforcer.PermAllow):                    true,
		{Topic: "pre", Pattern: enforcer.PatternPrefixed, Principal: "User:bob", Host: enforcer.AnyHost, Operation: enforcer.OpAll, Permission: enforcer.PermAllow}: true,
	}
	super := []string{"User:admin"}
	for _, c := range []struct {
		principal, topic, op string
		everyone, want       bool
	}{
		{"User:alice", "t", enforcer.OpWrite, true, false}, // DENY User:* wins over ALLOW alice
		{"User:admin", "t", enforcer.OpWrite, false, true}, // a super user bypasses
		{"User:carol", "t", enforcer.OpRead, false, true},
		{"User:carol", "t", enforcer.OpDescribe, false, true}, // READ implies DESCRIBE
		{"User:carol", "t", enforcer.OpDelete, true, false},   // bindings on t: allow-everyone does not apply
		{"User:bob", "u", enforcer.OpDescribe, false, true},   // ALTER implies DESCRIBE
		{"User:carol", "u", enforcer.OpRead, true, false},
		{"User:carol", "v", enforcer.OpWrite, true, true}, // no binding on v
		{"User:carol", "v", enforcer.OpWrite, false, false},
		{"User:bob", "other", enforcer.OpWrite, false, false},
		{"User:bob", "pre-1", enforcer.OpWrite, false, true}, // a prefixed ALL
		{"User:carol", "pre-1", enforcer.OpWrite, true, false},
	} {
		if got := Authorize(acls, super, c.everyone, c.principal, c.topic, c.op); got != c.want {
			t.Errorf("%s %s on %s (allow everyone %v): %v, want %v", c.principal, c.op, c.topic, c.everyone, got, c.want)
		}
	}
}
