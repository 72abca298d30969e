package ledger

import (
	"slices"
	"testing"
)

// R4.3: each topic's bindings are created ALLOW READ first, then the
// ALLOWs of WRITE, the other ALLOWs, the DENYs last, the topics in their
// order; a release deletes the ALLOWs of READ and WRITE last.
func TestR4_3BindingOrder(t *testing.T) {
	shape := Shape{Deny: []string{"User:bob"}, AllowOps: OpsButWrite, AllowWrite: []string{"User:mirror"}}
	acls := append(shape.Bindings("t2"), shape.Bindings("t1")...)
	CreateOrder(acls)
	name := func(a ACL) string { return a.Topic + " " + a.Permission + " " + a.Operation }
	var got []string
	for _, a := range acls {
		got = append(got, name(a))
	}
	want := []string{
		"t2 ALLOW READ", "t2 ALLOW WRITE", "t2 ALLOW ALTER", "t2 ALLOW ALTER_CONFIGS", "t2 ALLOW CREATE", "t2 ALLOW DELETE", "t2 DENY WRITE",
		"t1 ALLOW READ", "t1 ALLOW WRITE", "t1 ALLOW ALTER", "t1 ALLOW ALTER_CONFIGS", "t1 ALLOW CREATE", "t1 ALLOW DELETE", "t1 DENY WRITE",
	}
	if !slices.Equal(got, want) {
		t.Errorf("create order:\n got %v\nwant %v", got, want)
	}
	first, last := DeleteOrder(shape.Bindings("t1"))
	got = nil
	for _, a := range last {
		got = append(got, name(a))
	}
	if !slices.Equal(got, []string{"t1 ALLOW READ", "t1 ALLOW WRITE"}) || len(first) != 5 || slices.ContainsFunc(first, keepsAccess) {
		t.Errorf("delete order: first %v, last %v", first, last)
	}
}
