package enforcer

import (
	"context"
	"errors"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// fakeConfigs is resource/name/key -> value.
type fakeConfigs struct {
	v     map[string]string
	calls []string
}

func (f *fakeConfigs) ThrottleConfig(_ context.Context, resource, name, key string) (string, bool, error) {
	v, ok := f.v[resource+"/"+name+"/"+key]
	return v, ok, nil
}

func (f *fakeConfigs) SetThrottleConfig(_ context.Context, v ThrottleConfigValue) error {
	k := v.Resource + "/" + v.Name + "/" + v.Key
	f.calls = append(f.calls, k)
	if v.Set {
		f.v[k] = v.Value
	} else {
		delete(f.v, k)
	}
	return nil
}

type fakeReassignStore struct {
	recs   ledger.Records
	writes []string
}

func (s *fakeReassignStore) LoadRecords(context.Context) (Records, error) { return s.recs.Clone(), nil }
func (s *fakeReassignStore) StoreReassign(_ context.Context, c ledger.ReassignClaim) error {
	v, err := ledger.EncodeReassign(c)
	if err != nil {
		return err
	}
	ledger.ApplyRecord(s.recs, []byte(ledger.ReassignKey(c.Owner)), v)
	s.writes = append(s.writes, "store")
	return nil
}
func (s *fakeReassignStore) DeleteReassign(_ context.Context, owner string) error {
	ledger.ApplyRecord(s.recs, []byte(ledger.ReassignKey(owner)), nil)
	s.writes = append(s.writes, "delete")
	return nil
}

// R3.8: a replication throttle claim is released in two phases; a value
// an operator put in place since is never removed (R8.6).
func TestR3_8ReassignThrottleReleaseKeepsTheOperatorsValue(t *testing.T) {
	ctx := context.Background()
	a := &fakeConfigs{v: map[string]string{}}
	entries := []ledger.ThrottleEntry{
		{Resource: ledger.ResourceBroker, Name: "1", Key: LeaderThrottleRate, Value: "1000"},
		{Resource: ledger.ResourceBroker, Name: "2", Key: FollowerThrottleRate, Value: "1000"},
		{Resource: ledger.ResourceTopic, Name: "orders", Key: LeaderThrottledReplicas, Value: "0:1,0:2"},
	}
	if err := CheckNoReplicationThrottle(ctx, a, entries); err != nil {
		t.Fatal(err)
	}
	st := &fakeReassignStore{recs: ledger.NewRecords()}
	c := ledger.ReassignClaim{Owner: ledger.ReassignOwner(1), Instance: "a", Entries: entries, LeaseMs: 60000}
	if err := st.StoreReassign(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := SetReplicationThrottle(ctx, a, entries); err != nil {
		t.Fatal(err)
	}
	if err := CheckNoReplicationThrottle(ctx, a, entries); !errors.Is(err, ErrReplicationThrottleInPlace) {
		t.Fatalf("check with the throttle set: %v", err)
	}
	a.v["broker/2/"+FollowerThrottleRate] = "5" // the operator's, since
	recs, _ := st.LoadRecords(ctx)
	got, ok := recs.Reassigns["broker-1"]
	if !ok || len(got.Entries) != 3 || got.Owner != "broker-1" {
		t.Fatalf("claim read back: %+v", recs.Reassigns)
	}
	if err := ReleaseReassign(ctx, a, st, got, "a"); err != nil {
		t.Fatal(err)
	}
	if len(a.v) != 1 || a.v["broker/2/"+FollowerThrottleRate] != "5" {
		t.Fatalf("after the release: %v, want only the operator's value", a.v)
	}
	if want := []string{"store", "store", "delete"}; len(st.writes) != 3 || st.writes[1] != "store" || st.writes[2] != "delete" {
		t.Fatalf("ledger writes %v, want %v (claim, releasing, tombstone)", st.writes, want)
	}
	if _, ok := st.recs.Reassigns["broker-1"]; ok {
		t.Fatal("claim left after the release")
	}
}

// An undecodable replication throttle claim (a newer guard's) is left
// alone.
func TestReassignClaimUndecodableIsLeftAlone(t *testing.T) {
	recs := ledger.NewRecords()
	ledger.ApplyRecord(recs, []byte(ledger.ReassignKey("broker-3")), []byte(`{"v":99}`))
	c, ok := recs.Reassigns["broker-3"]
	if !ok || !c.Undecodable {
		t.Fatalf("claim %+v", recs.Reassigns)
	}
	if err := RestoreReplicationThrottle(context.Background(), &fakeConfigs{v: map[string]string{}}, c); err == nil {
		t.Fatal("restored an undecodable claim")
	}
	if _, ok := ledger.ParseThrottleKey(ledger.ReassignKey("broker-3")); ok {
		t.Fatal("a reassign key parses as a move throttle key")
	}
	if _, _, ok := ledger.ParseKey(ledger.ReassignKey("broker-3")); ok {
		t.Fatal("a reassign key parses as a record key")
	}
}
