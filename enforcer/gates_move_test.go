package enforcer

import (
	"slices"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R3.8: while a partition of a log dir is being moved to another log dir
// of the broker, nothing unexpired is purged in it under the protect band
// (move_in_flight); expired data still goes. At the protect band the
// purge goes on as usual, and a move into the log dir holds nothing.
func TestR3_8PurgeWaitsForAMoveOut(t *testing.T) {
	C, E, O := agent.StateClosed, agent.StateEligible, agent.StateOpen
	const other = "/data/2"
	build := func(used uint64, future string) *agent.Snapshot {
		var segs []agent.Segment
		for i := range 10 {
			segs = append(segs, sized(int64(i)*10, i, C, 100))
		}
		segs = append(segs, sized(100, 10, O, 100))
		s := snap(used, 10000,
			part("a", 0, 0, 110, segs...),
			part("b", 0, 0, 30, sized(0, 1, E, 100), sized(10, 2, E, 100), sized(20, 3, O, 100)),
			part("m", 0, 0, 20, sized(0, 1, C, 1000), sized(10, 2, O, 100)))
		s.LogDirs = append(s.LogDirs, agent.LogDir{Path: other, BrokerID: 1, ClusterID: clusterID,
			Usage: agent.Usage{CapacityBytes: 10000, UsedBytes: 1000, AvailableBytes: 9000, Basis: agent.CapacityConfigured}})
		if future != "" {
			// The copy of m-0: a -future log in future.
			f := part("m", 0, 0, 20, sized(0, 1, C, 500))
			f.Kind = agent.KindFuture
			for i := range s.LogDirs {
				if s.LogDirs[i].Path == future {
					s.LogDirs[i].Partitions = append(s.LogDirs[i].Partitions, &f)
				}
			}
		}
		return s
	}
	p := Policy{Profile: CloudProfile(), HysteresisPoints: 5, Gates: Gates{Purge: PurgeConfig{}}}
	for _, c := range []struct {
		name             string
		used             uint64
		future           string
		wantUnexpired    bool
		wantExpired      int64
		wantMoveInFlight bool
	}{
		{"purge band, no move: unexpired data is purged", 8700, "", true, 100, false},
		{"purge band, a move out in flight: only expired data goes", 8700, other, false, 200, true},
		{"purge band, a move into the log dir: purged as usual", 8700, dir, true, 100, false},
		{"protect band, a move out in flight: purged as usual", 9300, other, true, 100, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := build(c.used, c.future)
			o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
			goals := Desired(p, o)
			var unexpired, expired int64
			for _, d := range PlanActions(o, goals).Deletions {
				if d.LogDir != dir {
					t.Errorf("deletion in %s: %+v", d.LogDir, d)
				}
				unexpired += d.UnexpiredBytes
				expired += d.Bytes - d.UnexpiredBytes
			}
			if (unexpired > 0) != c.wantUnexpired || expired != c.wantExpired {
				t.Errorf("unexpired %d, expired %d bytes planned; want unexpired %v, expired %d", unexpired, expired, c.wantUnexpired, c.wantExpired)
			}
			if got := slices.Contains(goals[0].Purge.Reasons, BlockMoveInFlight); got != c.wantMoveInFlight {
				t.Errorf("purge reasons %v, want move_in_flight %v", goals[0].Purge.Reasons, c.wantMoveInFlight)
			}
		})
	}
	// (Oldest first across partitions: with unexpired data allowed, the
	// need of 201 bytes is met before b's second expired segment.)
	// A profile without a protect band has no hard band to fall back on:
	// its purges do not wait.
	noProtect, err := ProfileFor(Config{Profile: ProfileCustom, Bands: Seed000Bands()})
	if err != nil {
		t.Fatal(err)
	}
	s := build(8700, other)
	o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
	goals := Desired(Policy{Profile: noProtect, Gates: Gates{Purge: PurgeConfig{}}}, o)
	var unexpired int64
	for _, d := range PlanActions(o, goals).Deletions {
		unexpired += d.UnexpiredBytes
	}
	if unexpired == 0 || slices.Contains(goals[0].Purge.Reasons, BlockMoveInFlight) {
		t.Errorf("no protect band: unexpired %d, reasons %v; want a purge", unexpired, goals[0].Purge.Reasons)
	}
}
