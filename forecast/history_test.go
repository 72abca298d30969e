package forecast

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

func TestHistoryRatesR38(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seg := func(bytes int64, at time.Duration) agent.Segment {
		s := agent.Segment{LogBytes: bytes}
		if at >= 0 {
			s.LargestTimestampMs = t0.Add(at).UnixMilli()
		}
		return s
	}
	live := func(topic string, segs ...agent.Segment) agent.Partition {
		return agent.Partition{Topic: topic, Kind: agent.KindLive, Segments: segs}
	}
	snap := &agent.Snapshot{LogDirs: []agent.LogDir{{Path: "/d", Partitions: []*agent.Partition{
		// 2000 bytes after the first segment, over 1000 s: 2 B/s.
		new(live("a", seg(500, 0), seg(1000, 500*time.Second), seg(1000, 1000*time.Second))),
		// Another partition of a: the open segment has no timestamp yet.
		new(live("a", seg(100, 0), seg(300, 100*time.Second), seg(50, -1))),
		// One segment: no rate.
		new(live("b", seg(100, 0))),
		// Under a minute of timestamps: no rate.
		new(live("c", seg(100, 0), seg(100, 30*time.Second))),
		{Topic: "d", Kind: agent.KindFuture, Segments: []agent.Segment{seg(1, 0), seg(1000, time.Hour)}},
	}}}}
	got := HistoryRates(snap)
	want := map[Key]float64{{"/d", "a"}: 2 + 3}
	if len(got) != len(want) || got[Key{"/d", "a"}] != want[Key{"/d", "a"}] {
		t.Errorf("rates %v, want %v", got, want)
	}
}
