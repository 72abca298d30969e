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

// A process restarted while the ledger was lost takes the value its
// earlier process set for the operator's and lowers it again. Adopting
// the earlier record's claim on that key gives the new claim the earlier
// one's original (the operator's value), and names the value it lowered
// from as the guard's (Prev): kept as it was, the claim restored the
// earlier process's value for good (seed 10027). A claim made on a value
// the earlier claim does not set (an operator's) keeps its original.
func TestR7_4R8_7AdoptGivesAClaimMadeOnTheEarlierValueItsOriginal(t *testing.T) {
	s := func(v string) *string { return &v }
	const key = "local.retention.bytes"
	from := Record{Configs: []ConfigClaim{{Topic: "events", Key: key, Value: "13467648", Orig: s("104857600")}}}
	r := Record{Configs: []ConfigClaim{{Topic: "events", Key: key, Value: "6635520", Orig: s("13467648")}}}
	got, added := Adopt(r, from)
	if !added || len(got.Configs) != 1 {
		t.Fatalf("adopted: %v %+v", added, got.Configs)
	}
	c := got.Configs[0]
	if c.Value != "6635520" || !SameValue(c.Orig, s("104857600")) || !SameValue(c.Prev, s("13467648")) {
		t.Fatalf("claim %s orig %s prev %s: want 6635520, the earlier claim's original 104857600, prev 13467648",
			c.Value, ShowValue(c.Orig), ShowValue(c.Prev))
	}
	if *r.Configs[0].Orig != "13467648" {
		t.Fatalf("the record adopted into was changed: %+v", r.Configs)
	}
	if _, again := Adopt(got, from); again {
		t.Fatal("adopted twice")
	}
	op := Record{Configs: []ConfigClaim{{Topic: "events", Key: key, Value: "6635520", Orig: s("209715200")}}}
	if got, added := Adopt(op, from); added || !SameValue(got.Configs[0].Orig, s("209715200")) {
		t.Fatalf("a claim on an operator's value took another original: %v %+v", added, got.Configs)
	}
}
