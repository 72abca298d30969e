package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// tieredPart is a partition of the "tiered" topic: n segments of 100
// bytes, the last open, the first uploaded ones in remote storage.
func tieredPart(p int32, n, uploaded int) agent.Partition {
	segs := segRun(n, 10)
	for i := range segs {
		segs[i].Tier = agent.TierLocalOnly
		if i < uploaded {
			segs[i].Tier = agent.TierUploaded
		}
	}
	pt := part("tiered", p, 0, int64(n*10), segs...)
	pt.Tiered, pt.ActiveWrittenBytes = true, -1
	return pt
}

// tieredSnap: usage used/1000 with two tiered partitions (five segments,
// four uploaded) and a local-only topic "a".
func tieredSnap(used uint64) *agent.Snapshot {
	C, O := agent.StateClosed, agent.StateOpen
	return withTiered(snap(used, 1000, tieredPart(0, 5, 4), tieredPart(1, 5, 4),
		part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O))))
}

// withTiered gives the "tiered" topic Kafka's defaults with
// remote.storage.enable=true.
func withTiered(s *agent.Snapshot) *agent.Snapshot {
	c := agent.DefaultTopicConfig()
	c.RemoteStorage = true
	s.Configs["tiered"] = c
	return s
}

func localRetention(f *fakeAdmin, topic string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.configs[topic][LocalRetentionBytesKey]
	return v, ok
}

// R7.4: in a purge band the plan lowers a tiered topic's local retention
// to the gentlest value that frees what usage is above the target, counts
// what Kafka will free before purging anything else, never deletes
// records of the tiered topic, and never counts segments not yet in
// remote storage.
func TestR7_4PlanLowersLocalRetention(t *testing.T) {
	cases := []struct {
		name      string
		s         *agent.Snapshot
		want      map[string]int64
		freed     int64
		deletions []del
	}{
		// 870 of 1000, target 85%, restore bound 80%: 71 bytes to free.
		// One uploaded segment per partition (local size 500 -> 400)
		// frees 200.
		{"purge band, gentlest value", tieredSnap(870), map[string]int64{"tiered": 400}, 200, []del{}},
		// 1020 (the protect band frees with purge): 221 bytes; two
		// segments each.
		{"protect band, more", tieredSnap(1020), map[string]int64{"tiered": 300}, 400, []del{}},
		// Nothing uploaded: lowering frees nothing, "a" is purged.
		{"nothing uploaded", withTiered(snap(870, 1000, tieredPart(0, 5, 0),
			part("a", 0, 0, 40, seg(0, 1, agent.StateClosed), seg(10, 2, agent.StateClosed), seg(20, 3, agent.StateOpen)))),
			map[string]int64{}, 0, []del{{"a", 0, 10, 1, 100, 100}}},
		// Periodic band: eligible segments only, Kafka's own local
		// retention handles tiered topics.
		{"periodic band", tieredSnap(800), map[string]int64{}, 0, []del{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := withEvidence(Observed{Snapshot: c.s, Offsets: brokerOffsets(c.s)})
			goals := Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)
			if got := goals[0].Lower; !equalMaps(got.values, c.want) || got.freed != c.freed {
				t.Fatalf("R7.4/lower %v freed %d, want %v %d", got.values, got.freed, c.want, c.freed)
			}
			if got := dels(PlanActions(o, goals).Deletions); !equalDels(got, c.deletions) {
				t.Fatalf("R7.4/deletions %+v, want %+v", got, c.deletions)
			}
		})
	}
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalDels(a, b []del) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// R7.4: gentlest never frees less than asked, across partitions of
// different sizes.
func TestR7_4GentlestValue(t *testing.T) {
	p0, p1 := tieredPart(0, 5, 4), tieredPart(1, 3, 2)
	parts := []*agent.Partition{&p0, &p1}
	for need := int64(1); need <= freedAt(parts, 0); need++ {
		v := gentlest(parts, need)
		if freedAt(parts, v) < need {
			t.Fatalf("need %d: value %d frees %d", need, v, freedAt(parts, v))
		}
		if v > 0 && freedAt(parts, v+1) >= need && v+1 <= 500 {
			// a larger value at a breakpoint would do: v must be the
			// largest breakpoint that does.
			for _, bp := range []int64{400, 300, 200, 100, 0} {
				if bp > v && freedAt(parts, bp) >= need {
					t.Fatalf("need %d: value %d, but %d frees enough", need, v, bp)
				}
			}
		}
	}
}

// R7.4: enforcing, the guard records the claim with the operator's value
// before it lowers, restores exactly that value once usage is under the
// lowest purge band minus the hysteresis, and deletes the override when
// the topic had none.
func TestR7_4LowerThenRestore(t *testing.T) {
	for _, orig := range []*string{nil, strPtr("100000")} {
		t.Run(show(orig), func(t *testing.T) {
			f := newFakeAdmin(tieredSnap(870))
			if orig != nil {
				f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: *orig}}
			}
			clock := &clockAt{t0}
			e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
			passAt(t, e, clock, tieredSnap(870))
			if v, _ := localRetention(f, "tiered"); v != "400" {
				t.Fatalf("R7.4/local.retention.bytes %q, want 400", v)
			}
			claims := f.records.Agents[1].ConfigClaims()
			if len(claims) != 1 || claims[0].Value != "400" || show(claims[0].Orig) != show(orig) {
				t.Fatalf("R7.4/record %+v", claims)
			}
			if f.lso[TopicPartition{"tiered", 0}] != 0 {
				t.Fatal("R7.4/DeleteRecords on a tiered topic")
			}
			if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "lower_local_retention", "result": "ok"}); v != 1 {
				t.Errorf("actions_total{lower_local_retention,ok} %v", v)
			}
			// Kafka frees the segments; usage stays above 80% (85 - 5):
			// kept, not lowered again.
			clock.t = clock.t.Add(time.Second)
			passAt(t, e, clock, tieredSnap(820))
			if v, _ := localRetention(f, "tiered"); v != "400" {
				t.Fatalf("R3.7/within the hysteresis: %q", v)
			}
			if v := gather(t, reg, "kafka_disk_guard_local_retention_lowered_topics", nil); v != 1 {
				t.Errorf("lowered_topics %v", v)
			}
			clock.t = clock.t.Add(time.Second)
			passAt(t, e, clock, tieredSnap(790))
			v, set := localRetention(f, "tiered")
			if (orig == nil && set) || (orig != nil && v != *orig) {
				t.Fatalf("R7.4/restored %q (set %v), want %s", v, set, show(orig))
			}
			if len(f.records.Agents[1].ConfigClaims()) != 0 {
				t.Fatalf("R7.4/claim kept after the restore: %+v", f.records.Agents[1])
			}
			if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "restore_local_retention", "result": "ok"}); v != 1 {
				t.Errorf("actions_total{restore_local_retention,ok} %v", v)
			}
		})
	}
}

// R7.4: a value the guard did not set is never touched: an operator who
// changes it after the guard lowered it keeps it; the guard drops its
// claim and says so.
func TestR7_4OperatorChangedValueIsLeft(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	passAt(t, e, clock, tieredSnap(870))
	f.configs["tiered"][LocalRetentionBytesKey] = "12345"
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "12345" {
		t.Fatalf("R7.4/operator's value replaced: %q", v)
	}
	if len(f.records.Agents[1].ConfigClaims()) != 0 {
		t.Fatalf("R7.4/claim kept: %+v", f.records.Agents[1])
	}
	if v := gather(t, reg, "kafka_disk_guard_local_retention_operator_changed_total", nil); v != 1 {
		t.Errorf("operator_changed_total %v", v)
	}
	// Still in the band: the operator's value is not lowered again in
	// this episode, whatever the model says.
	for range 2 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, e, clock, tieredSnap(870))
	}
	if v, _ := localRetention(f, "tiered"); v != "12345" {
		t.Fatalf("R7.4/operator's value lowered again in the episode: %q", v)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, tieredSnap(100))
	if v, _ := localRetention(f, "tiered"); v != "12345" {
		t.Fatalf("R7.4/operator's value restored over: %q", v)
	}
}

// R7.4, R8.1: the agent that lowered dies; a peer restores the operator's
// value once the lease has gone unrenewed for its length.
func TestR7_4PeerRestoresAfterTheLease(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "5000"}}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	dead, _ := enforcerAs(t, 2, cfg, tieredSnap(870), f, clock)
	peer, _ := enforcerAs(t, 1, cfg, snap(100, 1000, part("a", 0, 0, 10, seg(0, 1, agent.StateOpen))), f, clock)
	passAt(t, dead, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" {
		t.Fatalf("not lowered: %q", v)
	}
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, peer, clock, snap(100, 1000, part("a", 0, 0, 10, seg(0, 1, agent.StateOpen))))
		if v, _ := localRetention(f, "tiered"); v == "5000" {
			if waited := clock.t.Sub(t0); waited < 10*time.Second || waited > 12*time.Second {
				t.Fatalf("R8.1/restored after %s, want the 10s lease (+ an interval)", waited)
			}
			break
		}
	}
	if v, _ := localRetention(f, "tiered"); v != "5000" {
		t.Fatalf("R7.4/peer did not restore: %q", v)
	}
	if l, ok := f.records.PendingLift(2); !ok || l.Kind != LiftLeaseExpired {
		t.Fatalf("R8.1/lift %+v %v", l, ok)
	}
	// Back and calm: it acknowledges and does not touch the value again.
	clock.t = clock.t.Add(time.Second)
	passAt(t, dead, clock, tieredSnap(100))
	if v, _ := localRetention(f, "tiered"); v != "5000" || len(f.records.Agents[2].ConfigClaims()) != 0 {
		t.Fatalf("R7.4/after the agent's return: %q %+v", v, f.records.Agents[2])
	}
}

// R7.4, R8.1: an operator restores by hand with protection lift.
func TestR7_4OperatorLiftRestores(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, _ := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	passAt(t, e, clock, tieredSnap(870))
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Topic: "tiered", By: "alice", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Released.Configs) != 1 {
		t.Fatalf("R8.1/lift %+v", res)
	}
	if _, set := localRetention(f, "tiered"); set {
		t.Fatal("R7.4/override left after the lift")
	}
	// The agent honours the lift for the episode: not lowered again.
	for range 2 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, e, clock, tieredSnap(870))
	}
	if v, set := localRetention(f, "tiered"); set {
		t.Fatalf("R8.1/lowered again after the operator's lift: %q", v)
	}
}

// R4.4, R7.4: observe mode plans and reports the change once and sets
// nothing.
func TestR7_4ObserveModeOnlyReports(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Interval: time.Second}, tieredSnap(870), f, clock)
	for range 3 {
		clock.t = clock.t.Add(time.Second)
		passAt(t, e, clock, tieredSnap(870))
	}
	if _, set := localRetention(f, "tiered"); set || f.writes != 0 {
		t.Fatalf("R4.4/observe mode wrote: %v", f.configs)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "lower_local_retention", "result": "dry_run"}); v != 1 {
		t.Errorf("actions_total{lower_local_retention,dry_run} %v, want 1", v)
	}
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, tieredSnap(100))
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "restore_local_retention", "result": "dry_run"}); v != 1 {
		t.Errorf("actions_total{restore_local_retention,dry_run} %v, want 1", v)
	}
}

// R7.4: without the tiered rights on the topic nothing is lowered.
func TestR7_4NeedsTheRights(t *testing.T) {
	s := tieredSnap(870)
	o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
	o.Rights = &rights.Report{Features: rights.Features(), Gaps: []rights.Gap{{Need: rights.Needs(rights.Tiered)[1], Topics: []string{"tiered"}}}}
	goals := Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)
	if len(goals[0].Lower.values) != 0 {
		t.Fatalf("R7.4/lowered without the rights: %v", goals[0].Lower.values)
	}
}

// R7.4, R6: a lowered topic that is deleted takes its claim with it; the
// pass carries on (protection and deletions are not held back).
func TestR7_4DeletedTopicDropsTheClaim(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	passAt(t, e, clock, tieredSnap(870))
	if len(f.records.Agents[1].ConfigClaims()) != 1 {
		t.Fatal("not lowered")
	}
	f.gone = map[string]bool{"tiered": true}
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, tieredSnap(100))
	if len(f.records.Agents[1].ConfigClaims()) != 0 {
		t.Fatalf("R7.4/claim on a deleted topic kept: %+v", f.records.Agents[1])
	}
	if v := gather(t, reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "broker_unreachable"}); v != 0 {
		t.Errorf("R6/a deleted topic held the pass back")
	}
}

// R8.1, R7.4: protection status lists the lowered local retention with
// the operator's value and whether the value in place is the guard's.
func TestR7_4StatusListsLoweredLocalRetention(t *testing.T) {
	recs := ledger.NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, LeaseMs: 60000, Renewed: t0, Owned: []Owned{
		{Kind: OwnedTopicConfig, Topic: "events", Key: LocalRetentionBytesKey, Value: "1000"},
		{Kind: OwnedTopicConfig, Topic: "clicks", Key: LocalRetentionBytesKey, Value: "2000", Orig: strPtr("9000")},
	}}
	if got := recs.ConfigTopics(); len(got) != 2 || got[0] != "clicks" {
		t.Fatalf("config topics %v", got)
	}
	st := ledger.BuildStatus(ledger.StatusInput{Records: recs, Now: t0.Add(time.Second),
		TopicConfigs: map[string]*string{"events": strPtr("1000"), "clicks": strPtr("5")}})
	b := st.Brokers[0]
	if b.State != ledger.StateActive || len(b.Configs) != 2 {
		t.Fatalf("status %+v", b)
	}
	for _, c := range b.Configs {
		switch c.Topic {
		case "events":
			if !c.InPlace || c.Original != nil {
				t.Errorf("events %+v", c)
			}
		case "clicks":
			if c.InPlace || show(c.Original) != "9000" {
				t.Errorf("clicks: an operator's value shown as the guard's: %+v", c)
			}
		}
	}
}
