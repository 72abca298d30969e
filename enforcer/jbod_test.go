package enforcer

import (
	"reflect"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

const mib = 1 << 20

func movePolicy() MovePolicy {
	return MovePolicy{From: 0.70, Target: 0.65, PurgeAt: 0.85, RateBytesPerSecond: 10 * mib, ColdBytesPerSecond: 0, MaxMoves: 10}
}

// dir of 1000 MiB at used MiB.
func mdir(path string, used uint64, parts ...MoveCandidate) MoveDir {
	return MoveDir{Path: path, CapacityBytes: 1000 * mib, UsedBytes: used * mib, Online: true, Partitions: parts}
}

func cand(topic string, p int32, bytes int64, rate float64) MoveCandidate {
	return MoveCandidate{Topic: topic, Partition: p, Bytes: bytes * mib, WriteBytesPerSecond: rate}
}

func moved(p MovePlan) []string {
	var out []string
	for _, m := range p.Moves {
		out = append(out, m.Topic+"->"+m.To)
	}
	return out
}

// R3.8: the planner's choices, one rule per case.
func TestR3_8PlanMoves(t *testing.T) {
	cases := []struct {
		name      string
		dirs      []MoveDir
		pol       func(*MovePolicy)
		want      []string
		wantSkips []MoveSkip
	}{{
		name: "under the move band: nothing",
		dirs: []MoveDir{mdir("/a", 690, cand("t", 0, 300, 0)), mdir("/b", 100)},
	}, {
		name: "largest cold first, until under target",
		// 750 used, target 650: 100 MiB to move; the 120 MiB cold one does it.
		dirs: []MoveDir{mdir("/a", 750, cand("small", 0, 40, 0), cand("big", 0, 120, 0), cand("hot", 0, 300, 5*mib)), mdir("/b", 100)},
		want: []string{"big->/b"},
	}, {
		name: "cold ones before a larger warm one, warm one when needed",
		dirs: []MoveDir{mdir("/a", 800, cand("warm", 0, 200, 1*mib), cand("cold", 0, 60, 0)), mdir("/b", 100)},
		want: []string{"cold->/b", "warm->/b"},
	}, {
		name:      "a partition written faster than half the throttle never moves",
		dirs:      []MoveDir{mdir("/a", 750, cand("hot", 0, 300, 6*mib)), mdir("/b", 100)},
		wantSkips: []MoveSkip{{"/a", MoveSkipNoCandidate}},
	}, {
		name:      "destination with most room; none in the move band",
		dirs:      []MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)), mdir("/b", 500), mdir("/c", 200), mdir("/d", 720)},
		want:      []string{"t->/c"},
		wantSkips: []MoveSkip{{"/d", MoveSkipNoCandidate}},
	}, {
		name:      "destination would pass target after the copy: no room",
		dirs:      []MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)), mdir("/b", 600)},
		wantSkips: []MoveSkip{{"/a", MoveSkipNoRoom}},
	}, {
		name: "destination's own growth during the copy counts",
		// 120 MiB at 1 MiB/s takes 120 s; /b grows 0.5 MiB/s: 520+120+60 > 650.
		dirs: []MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)),
			func() MoveDir { d := mdir("/b", 520); d.GrowthBytesPerSecond = 0.5 * mib; return d }()},
		pol:       func(p *MovePolicy) { p.RateBytesPerSecond = 1 * mib },
		wantSkips: []MoveSkip{{"/a", MoveSkipNoRoom}},
	}, {
		name: "the copy would end after the source reaches the purge band: too slow",
		// 120 MiB at 1 MiB/s = 120 s; /a grows 1 MiB/s from 750: 870 > 850 before the swap.
		dirs: []MoveDir{func() MoveDir {
			d := mdir("/a", 750, cand("t", 0, 120, 0))
			d.GrowthBytesPerSecond = 1 * mib
			return d
		}(), mdir("/b", 100)},
		pol:       func(p *MovePolicy) { p.RateBytesPerSecond = 1 * mib },
		wantSkips: []MoveSkip{{"/a", MoveSkipTooSlow}},
	}, {
		name: "a smaller partition that finishes in time is taken instead",
		dirs: []MoveDir{func() MoveDir {
			d := mdir("/a", 750, cand("big", 0, 120, 0), cand("small", 0, 50, 0))
			d.GrowthBytesPerSecond = 1 * mib
			return d
		}(), mdir("/b", 100)},
		pol:  func(p *MovePolicy) { p.RateBytesPerSecond = 1 * mib },
		want: []string{"small->/b"},
	}, {
		name:      "already at the purge band: past the move rung",
		dirs:      []MoveDir{mdir("/a", 860, cand("t", 0, 300, 0)), mdir("/b", 100)},
		wantSkips: []MoveSkip{{"/a", MoveSkipAtPurge}},
	}, {
		name: "a move in flight: nothing new",
		dirs: []MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)),
			func() MoveDir { d := mdir("/b", 100); d.IncomingBytes = 10 * mib; return d }()},
		wantSkips: []MoveSkip{{"/a", MoveSkipInFlight}},
	}, {
		name: "offline destination is not one",
		dirs: []MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)),
			func() MoveDir { d := mdir("/b", 100); d.Online = false; return d }()},
		wantSkips: []MoveSkip{{"/a", MoveSkipNoRoom}},
	}, {
		name: "two full dirs share one roomy dir and the throttle",
		dirs: []MoveDir{mdir("/a", 750, cand("a", 0, 120, 0)), mdir("/b", 760, cand("b", 0, 130, 0)), mdir("/c", 100)},
		want: []string{"b->/c", "a->/c"},
	}, {
		name: "MaxMoves bounds the plan",
		dirs: []MoveDir{mdir("/a", 900-60, cand("x", 0, 50, 0), cand("y", 0, 50, 0), cand("z", 0, 50, 0)), mdir("/b", 0)},
		pol:  func(p *MovePolicy) { p.MaxMoves = 2 },
		want: []string{"x->/b", "y->/b"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol := movePolicy()
			if tc.pol != nil {
				tc.pol(&pol)
			}
			got := PlanMoves(tc.dirs, pol)
			if !reflect.DeepEqual(moved(got), tc.want) {
				t.Errorf("moves %v, want %v", moved(got), tc.want)
			}
			if !reflect.DeepEqual(got.Skipped, tc.wantSkips) {
				t.Errorf("skipped %v, want %v", got.Skipped, tc.wantSkips)
			}
		})
	}
}

// The plan's duration is every planned byte at the throttle.
func TestR3_8PlanMovesDuration(t *testing.T) {
	got := PlanMoves([]MoveDir{mdir("/a", 750, cand("t", 0, 120, 0)), mdir("/b", 100)}, movePolicy())
	if got.Bytes() != 120*mib || got.Duration != 12*time.Second {
		t.Fatalf("bytes %d duration %s, want 120 MiB in 12s", got.Bytes(), got.Duration)
	}
}

// MoveDirs: live partitions are candidates; -future logs mark the
// receiving dir and the moving one; tiered, held, internal and compact
// partitions stay; an unconfirmed dir is offline.
func TestR3_8MoveDirsFromSnapshot(t *testing.T) {
	live := func(topic string, p int32, bytes int64) agent.Partition {
		return agent.Partition{Topic: topic, Partition: p, Kind: agent.KindLive, DiskBytes: bytes}
	}
	snap := &agent.Snapshot{
		Defaults: agent.DefaultTopicConfig(),
		Configs:  map[string]agent.TopicConfig{"compacted": {CleanupPolicy: agent.CleanupPolicy{Compact: true}}},
		LogDirs: []agent.LogDir{{
			Path: "/a", Usage: agent.Usage{CapacityBytes: 100, UsedBytes: 90}, PendingDeleteBytes: 10,
			Partitions: []*agent.Partition{new(live("t", 0, 10)), new(live("m", 0, 5)), new(live("compacted", 0, 7)), new(live("__consumer_offsets", 0, 3)),
				new(func() agent.Partition { p := live("tiered", 0, 4); p.Tiered = true; return p }())},
		}, {
			Path: "/b", Usage: agent.Usage{CapacityBytes: 100, UsedBytes: 10},
			Partitions: []*agent.Partition{{Topic: "m", Partition: 0, Kind: agent.KindFuture, DiskBytes: 2}},
		}, {
			Path: "/c", Usage: agent.Usage{CapacityBytes: 100, UsedBytes: 10},
		}},
	}
	got := MoveDirs(snap, map[string]float64{"/a": 3}, func(p string) bool { return p != "/c" })
	want := []MoveDir{
		{Path: "/a", CapacityBytes: 100, UsedBytes: 80, Online: true, GrowthBytesPerSecond: 3, Moving: true,
			Partitions: []MoveCandidate{{Topic: "t", Partition: 0, Bytes: 10}}},
		{Path: "/b", CapacityBytes: 100, UsedBytes: 10, Online: true, IncomingBytes: 2},
		{Path: "/c", CapacityBytes: 100, UsedBytes: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MoveDirs =\n%+v\nwant\n%+v", got, want)
	}
}
