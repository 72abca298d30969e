package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R3.5, R7.4: once the guard's lowered local.retention.bytes is in the
// configs, the uploaded segments past it are eligible and wait for Kafka's
// next retention check: they count as on their way out, and no other
// topic is purged for them, until twice the check interval has passed
// since they were first seen eligible.
func TestTieredPendingCountsForThePurgeBands(t *testing.T) {
	lowered := func() *agent.Snapshot {
		s := tieredSnap(870)
		c := s.Configs["tiered"]
		c.LocalRetentionBytes = 400
		s.Configs["tiered"] = c
		for i := range s.LogDirs[0].Partitions {
			p := s.LogDirs[0].Partitions[i]
			if p.Topic == "tiered" {
				p.Segments[0].State, p.Segments[0].Reason = agent.StateEligible, agent.ReasonLocalRetentionSize
				p.Segments[0].ExpiredBytes = 100
			}
		}
		return s
	}
	cases := []struct {
		name  string
		since time.Duration // first seen eligible this long ago
		lower map[string]int64
	}{
		{"just seen: pending, nothing purged or lowered", 0, map[string]int64{}},
		{"within two check intervals", 9 * time.Minute, map[string]int64{}},
		// 870 of 1000 in the purge band, 71 bytes over the restore bound:
		// no longer counted, the band acts again (lowering, which loses
		// nothing, before purging "a").
		{"Kafka did not free them in two checks: the band goes on", 11 * time.Minute, map[string]int64{"tiered": 300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := lowered()
			since := trackEligible(nil, s, t0.Add(-c.since))
			if len(since) != 2 {
				t.Fatalf("tracked %v", since)
			}
			o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s), EligibleSince: since})
			goals := Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)
			if got := dels(PlanActions(o, goals).Deletions); len(got) != 0 {
				t.Fatalf("R3.5/deletions %+v, want none", got)
			}
			if got := goals[0].Lower.values; !equalMaps(got, c.lower) {
				t.Fatalf("R7.4/lowered %v, want %v", got, c.lower)
			}
		})
	}
	// trackEligible keeps the first sighting and drops what is gone.
	s := lowered()
	first := trackEligible(nil, s, t0)
	again := trackEligible(first, s, t0.Add(time.Minute))
	for k, at := range again {
		if !at.Equal(t0) {
			t.Errorf("%v: first seen %v, want %v", k, at, t0)
		}
	}
	if gone := trackEligible(again, tieredSnap(870), t0.Add(2*time.Minute)); len(gone) != 0 {
		t.Errorf("kept %v after the segments stopped being eligible", gone)
	}
}
