package ledger

import (
	"slices"
	"testing"
)

// Adopt adds the claims the other record holds and this one lacks, held
// or releasing alike, and nothing twice.
func TestAdoptAddsOnlyMissingClaims(t *testing.T) {
	deny := Shape{Deny: []string{"User:*"}}
	cordon := Owned{Kind: "cordon", Value: "/d"}
	r := Record{Owned: []Owned{{Kind: OwnedACL, Shape: &deny, Topics: []string{"a"}}, QuotaOwned(1024)}}
	from := Record{Owned: []Owned{{Kind: OwnedACL, Shape: &deny, Topics: []string{"a", "b"}}, cordon, func() Owned {
		q := QuotaOwned(1024)
		q.Releasing = true
		return q
	}()}, Configs: []ConfigClaim{{Topic: "t", Key: "local.retention.bytes", Value: "1"}}}
	got, added := Adopt(r, from)
	if !added || !slices.Equal(got.ACLTopics(), []string{"a", "b"}) || len(got.Owned) != 3 || len(got.Configs) != 1 {
		t.Fatalf("adopted: %v %+v", added, got)
	}
	if len(r.Owned[0].Topics) != 1 {
		t.Fatalf("the record adopted into was changed: %+v", r)
	}
	if _, again := Adopt(got, from); again {
		t.Fatal("adopted twice")
	}
}
