package ledger

import (
	"context"
	"testing"
)

// configAdmin is a ReleaseAdmin holding one topic's configs.
type configAdmin struct {
	recs    Records
	configs map[string]*string // topic -> local.retention.bytes
	alters  int
}

func (f *configAdmin) LoadRecords(context.Context) (Records, error)        { return f.recs.Clone(), nil }
func (f *configAdmin) DeleteACLs(context.Context, []ACL) error             { return nil }
func (f *configAdmin) DefaultProducerQuota(context.Context) (int64, error) { return 0, nil }
func (f *configAdmin) RemoveDefaultProducerQuota(context.Context) error    { return nil }

func (f *configAdmin) TopicConfigOverrides(_ context.Context, topics []string, _ string) (map[string]*string, error) {
	out := map[string]*string{}
	for _, t := range topics {
		if v, ok := f.configs[t]; ok {
			out[t] = v
		}
	}
	return out, nil
}

func (f *configAdmin) AlterTopicConfig(_ context.Context, topic, _ string, value *string) error {
	f.alters++
	f.configs[topic] = value
	return nil
}

// R8.5, R7.4: a claim given up restores its operator's value only over a
// value it set itself, or one set by a claim made on the same operator's
// value. Over another claim's value made on a newer operator's value, a
// stale claim's restore would put its older original back over the
// operator's newer one (found by the simulation, tiered_shared with call
// faults, seed 23: broker 3 lowered a topic with no override, an operator
// then set 200 MiB, broker 1 lowered that, and the operator's lift of
// broker 3 deleted the override while broker 1's value was in place).
func TestR8_5StaleConfigClaimRestoresNotOverANewerOriginal(t *testing.T) {
	operators := "209715200"
	stale := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4669440"}                   // Orig: not set
	newer := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "5611520", Orig: &operators} // made on the operator's 200 MiB
	recs := NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Configs: []ConfigClaim{newer}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{stale}}
	// Both lifted (broker 1's lease expired, broker 3 lifted by the
	// operator): no live record holds the key.
	recs.Lifts[1] = Lift{ID: "l1", BrokerID: 1}
	recs.Lifts[3] = Lift{ID: "l3", BrokerID: 3}
	in := newer.Value
	a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{stale}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != newer.Value {
		t.Fatalf("R8.5/broker 3's stale claim set events' local.retention.bytes to %s over broker 1's %s (operator's 200 MiB to restore)",
			ShowValue(v), newer.Value)
	}
	// Broker 1's claim, given up, restores the operator's newer value.
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{newer}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != operators {
		t.Fatalf("R8.5/events' local.retention.bytes is %s after broker 1's release, want the operator's %s", ShowValue(v), operators)
	}
	// A claim made on the same operator's value restores over the other's
	// value (either release puts the same original back).
	same := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "6000000", Orig: &operators}
	a.configs["events"] = &in
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{same}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != operators {
		t.Fatalf("R8.5/events' local.retention.bytes is %s, want the operator's %s restored", ShowValue(v), operators)
	}
}

// R8.5, R7.4: a claim given up hands the key back to the live claims
// made on its operator's value only where the value in place is its own
// and no claim made on another operator's value holds the same number
// (the simulation's tiered_shared, seed 3): that claim's value, with its
// newer original, stays in place.
func TestR8_5HandBackLeavesAValueAClaimOnANewerOriginalHolds(t *testing.T) {
	operators := "209715200"
	given := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "400", Releasing: true} // Orig: not set
	lower := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "300"}                  // Orig: not set
	newer := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "400", Orig: &operators}
	recs := NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Configs: []ConfigClaim{newer}}
	recs.Agents[2] = Record{BrokerID: 2, Configs: []ConfigClaim{given}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{lower}}
	in := "400"
	a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != in || a.alters != 0 {
		t.Fatalf("R8.5/broker 2's hand-back set events' local.retention.bytes to %s over broker 1's %s (made on the operator's 200 MiB)",
			ShowValue(v), in)
	}
	// Without the claim on the newer original, the key is handed back.
	recs.Agents[1] = Record{BrokerID: 1}
	a = &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != lower.Value {
		t.Fatalf("R8.5/events' local.retention.bytes is %s, want broker 3's %s handed back", ShowValue(v), lower.Value)
	}
}

// R8.5, R7.4: a claim given up never hands the key back to a value that
// a claim made on another operator's value also sets: in place, that
// value would name two originals, and the other claim's release would
// restore the older one over the operator's value (found by the
// simulation, seed 3895: broker 3's agent, dead, held a claim made on
// "not set" whose value broker 2's claim, taking broker 1's original
// (the operator's 100 MiB, set meanwhile), still named; broker 1's
// hand-back put that value in place, and broker 3's agent, restarted,
// deleted the override). The claim stays, its value in place.
func TestR8_5HandBackNeverToAValueOfAnotherOriginal(t *testing.T) {
	operators := "104857600"
	given := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4792319", Orig: &operators, Releasing: true}
	second := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4792320", Orig: &operators}
	stale := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4792320"} // Orig: not set
	recs := NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Configs: []ConfigClaim{given}}
	recs.Agents[2] = Record{BrokerID: 2, Configs: []ConfigClaim{second}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{stale}}
	in := given.Value
	a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != in || a.alters != 0 {
		t.Fatalf("R8.5/broker 1's hand-back set events' local.retention.bytes to %s, a value broker 3's claim made on \"not set\" also sets",
			ShowValue(v))
	}
	// Without the claim on the other original, the key is handed back.
	recs.Agents[3] = Record{BrokerID: 3}
	a = &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != second.Value {
		t.Fatalf("R8.5/events' local.retention.bytes is %s, want broker 2's %s handed back", ShowValue(v), second.Value)
	}
}

// R8.5, R7.4: a lift releases every record's claims on a key at once;
// the claim whose value is in place restores its original, whatever the
// order: a stale claim listed first (made on an operator's value since
// changed) restores nothing, and left the key lowered.
func TestR8_5LiftRestoresTheOriginalOfTheClaimInPlace(t *testing.T) {
	operators := "209715200"
	stale := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4669440"} // Orig: not set
	newer := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "5611520", Orig: &operators, Releasing: true}
	recs := NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Configs: []ConfigClaim{stale}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{newer}}
	recs.Lifts[1] = Lift{ID: "l1", BrokerID: 1, Topics: []string{"events"}}
	recs.Lifts[3] = Lift{ID: "l3", BrokerID: 3, Topics: []string{"events"}}
	in := newer.Value
	a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	rel, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{stale, newer})
	if err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != operators {
		t.Fatalf("R8.5/events' local.retention.bytes is %s after the lift (%+v), want the operator's %s", ShowValue(v), rel, operators)
	}
}

// R8.5, R7.4: a lift (or a peer after the lease) restores the operator's
// value, not another claim's: a claim made on a value the guard set
// (taken for the operator's while the record holding it was lost) has
// that claim's original as its own (GuardOriginal), as the agent's own
// release already has. Restoring its recorded original put the other
// claim's lowered value back, in no record once both were lifted.
func TestR8_5LiftRestoresTheGuardOriginalOfAClaimMadeOnAGuardValue(t *testing.T) {
	operators := "209715200"
	first := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "5000000", Orig: &operators}
	onFirst := first.Value
	second := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4000000", Orig: &onFirst}
	recs := NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Configs: []ConfigClaim{first}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{second}}
	recs.Lifts[1] = Lift{ID: "l1", BrokerID: 1, Topics: []string{"events"}}
	recs.Lifts[3] = Lift{ID: "l3", BrokerID: 3, Topics: []string{"events"}}
	for _, order := range [][]ConfigClaim{{first, second}, {second, first}} {
		in := second.Value
		a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
		rel, err := ReleaseUnclaimed(t.Context(), a, nil, 0, order)
		if err != nil {
			t.Fatal(err)
		}
		if v := a.configs["events"]; v == nil || *v != operators {
			t.Fatalf("R8.5/events' local.retention.bytes is %s after the lift (%+v), want the operator's %s", ShowValue(v), rel, operators)
		}
	}
}

// R7.4, R8.7: a remembered claim is shadowed (stale: not written back)
// when another record's claim on the key holds its value, or its earlier
// one, made on another original; not when that claim was made on its own
// value (it took the guard's value for the operator's: GuardOriginal), nor
// by a claim of its own broker's record, nor by one on the same original.
func TestR7_4R8_7ShadowedClaim(t *testing.T) {
	s := func(v string) *string { return &v }
	c := ConfigClaim{Topic: "t", Key: "k", Value: "400"}
	cases := []struct {
		name  string
		other ConfigClaim
		id    int32
		want  bool
	}{
		{"same value, another original", ConfigClaim{Topic: "t", Key: "k", Value: "400", Orig: s("1000")}, 1, true},
		{"its value the other's earlier one", ConfigClaim{Topic: "t", Key: "k", Value: "300", Prev: s("400"), Orig: s("1000")}, 1, true},
		{"same value, same original", ConfigClaim{Topic: "t", Key: "k", Value: "400"}, 1, false},
		{"made on its value", ConfigClaim{Topic: "t", Key: "k", Value: "400", Orig: s("400")}, 1, false},
		{"another value", ConfigClaim{Topic: "t", Key: "k", Value: "399", Orig: s("1000")}, 1, false},
		{"another topic", ConfigClaim{Topic: "u", Key: "k", Value: "400", Orig: s("1000")}, 1, false},
		{"its own broker's record", ConfigClaim{Topic: "t", Key: "k", Value: "400", Orig: s("1000")}, 2, false},
	}
	for _, tc := range cases {
		rs := NewRecords()
		rs.Agents[tc.id] = Record{BrokerID: tc.id, Configs: []ConfigClaim{tc.other}}
		if got := rs.Shadowed(2, c); got != tc.want {
			t.Errorf("%s: Shadowed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// R8.5, R8.7, R7.4: a claim given up is not handed back to a claim of a
// record a peer wrote back (Restored) until its agent writes the record
// again: the copy is as the peer last read it, and its agent may have
// given the claim up since. Found by the simulation, seeds 13308 and
// 18923: broker 3's agent, lifted, dropped its claim while broker 2's
// lower value was in place; the ownership topic was lost, broker 2's
// agent wrote back its older copy of broker 3's record (with the claim,
// without the lift), released its own claim and handed the key back to
// broker 3's value; broker 3's agent wrote its record again without the
// claim, and the value stayed lowered, in no record. The claim stays,
// its value in place, until broker 3's agent writes its record.
func TestR8_5R8_7NoHandBackToAClaimAPeerWroteBack(t *testing.T) {
	operators := "209715200"
	given := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "4751360", Orig: &operators, Releasing: true}
	copied := ConfigClaim{Topic: "events", Key: "local.retention.bytes", Value: "13099008", Orig: &operators}
	recs := NewRecords()
	recs.Agents[2] = Record{BrokerID: 2, Configs: []ConfigClaim{given}}
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{copied}, Restored: true}
	in := given.Value
	a := &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != in || a.alters != 0 {
		t.Fatalf("R8.5/broker 2's hand-back set events' local.retention.bytes to %s, the claim of a record a peer wrote back",
			ShowValue(v))
	}
	if _, ok := recs.HandBackValue(given, &in); ok {
		t.Fatal("R8.5/a hand-back value to a claim of a record a peer wrote back")
	}
	// Written again by its agent, with the claim: the key is handed back.
	recs.Agents[3] = Record{BrokerID: 3, Configs: []ConfigClaim{copied}}
	a = &configAdmin{recs: recs, configs: map[string]*string{"events": &in}}
	if _, err := ReleaseUnclaimed(t.Context(), a, nil, 0, []ConfigClaim{given}); err != nil {
		t.Fatal(err)
	}
	if v := a.configs["events"]; v == nil || *v != copied.Value {
		t.Fatalf("R8.5/events' local.retention.bytes is %s, want broker 3's %s handed back", ShowValue(v), copied.Value)
	}
}
