package forecast

import (
	"math"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

func cfgWith(f func(*agent.TopicConfig)) agent.TopicConfig {
	c := agent.DefaultTopicConfig()
	f(&c)
	return c
}

// R3.8: the steady-state footprint of one partition.
func TestSteadyLogBytesR38(t *testing.T) {
	hour := time.Hour.Milliseconds()
	for _, tc := range []struct {
		name   string
		cfg    agent.TopicConfig
		topic  string
		rate   float64
		active int64
		want   float64
	}{
		{"time bound plus one segment", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = hour; c.SegmentBytes = 100 * mib }),
			"t", mib, 0, 3600*mib + 100*mib},
		{"bytes bound smaller than time bound", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = hour; c.RetentionBytes = gib; c.SegmentBytes = 100 * mib }),
			"t", mib, 0, gib + 100*mib},
		{"time bound smaller than bytes bound", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = 1000; c.RetentionBytes = gib; c.SegmentBytes = 100 * mib }),
			"t", mib, 0, mib + 100*mib},
		{"slow topic: a segment rolls at segment.ms before segment.bytes", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = hour }),
			"t", 10, 0, 10*3600 + 10*DefaultSegmentRoll.Seconds()},
		{"no bound: unbounded", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = -1 }),
			"t", 1, 0, math.Inf(1)},
		{"never under the open segment", cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = 1000; c.SegmentBytes = 100 * mib }),
			"t", 1, 50 * mib, 50 * mib},
		{"tiered: local.retention.bytes bounds the local log", cfgWith(func(c *agent.TopicConfig) {
			c.RemoteStorage, c.RetentionMs, c.LocalRetentionBytes, c.SegmentBytes = true, -1, gib, 100*mib
		}), "t", mib, 0, gib + 100*mib},
		{"tiered with local -2: retention.ms applies", cfgWith(func(c *agent.TopicConfig) {
			c.RemoteStorage, c.RetentionMs, c.SegmentBytes = true, hour, 100*mib
		}), "t", mib, 0, 3600*mib + 100*mib},
		{"internal topic is never tiered: retention.*", cfgWith(func(c *agent.TopicConfig) {
			c.RemoteStorage, c.RetentionMs, c.LocalRetentionBytes, c.SegmentBytes = true, hour, gib, 100*mib
		}), "__consumer_offsets", mib, 0, 3600*mib + 100*mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SteadyLogBytes(tc.cfg, tc.topic, tc.rate, tc.active)
			if got != tc.want && math.Abs(got-tc.want) > 1e-6*tc.want {
				t.Errorf("SteadyLogBytes = %.0f, want %.0f", got, tc.want)
			}
		})
	}
}

// part builds a live partition with one segment of size bytes.
func part(topic string, n int32, size int64, appended uint64) agent.Partition {
	return agent.Partition{Topic: topic, Partition: n, Kind: agent.KindLive, DiskBytes: size, AppendedBytes: appended,
		ActiveWrittenBytes: -1, Segments: []agent.Segment{{LogBytes: 0}}}
}

func snapWith(cfg agent.TopicConfig, used, capacity uint64, parts ...agent.Partition) *agent.Snapshot {
	cfg.IndexIntervalBytes = 0 // no index overhead: round figures
	return &agent.Snapshot{
		Defaults: cfg,
		LogDirs:  []agent.LogDir{{Path: "/d", Usage: agent.Usage{CapacityBytes: capacity, UsedBytes: used}, Partitions: agent.PartitionsOf(parts...)}},
	}
}

// R3.8: a log dir's projection and its time to each band.
func TestProjectR38(t *testing.T) {
	hourly := cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = time.Hour.Milliseconds(); c.SegmentBytes = 100 * mib })
	for _, tc := range []struct {
		name      string
		snap      *agent.Snapshot
		rates     map[Key]float64
		projected float64
		growth    float64
		to        map[float64]time.Duration // ratio -> time; -1 = never
		unest     int
	}{
		{
			// 1 MiB/s for an hour: 3600 MiB + a 100 MiB segment; 500 MiB
			// there now: it grows 3200 MiB at 1 MiB/s then stops.
			name:      "one topic filling up",
			snap:      snapWith(hourly, 1000*mib, 10000*mib, part("a", 0, 500*mib, 1)),
			rates:     map[Key]float64{{"/d", "a"}: mib},
			projected: (1000 - 500 + 3700) * mib, growth: mib,
			to: map[float64]time.Duration{0.05: 0, 0.20: 1000 * time.Second, 0.42: 3200 * time.Second, 0.43: -1},
		},
		{
			name: "two partitions share the topic's rate by what they appended",
			snap: snapWith(hourly, 0, 10000*mib, part("a", 0, 0, 3), part("a", 1, 0, 1)),
			// 0.75 and 0.25 MiB/s: 2700+100 and 900+100 MiB.
			rates:     map[Key]float64{{"/d", "a"}: mib},
			projected: 3800 * mib, growth: mib,
			// Both grow (1 MiB/s) until p0 stops at 2800/0.75 = 3733 s,
			// then p1 alone (0.25 MiB/s) until 1000/0.25 = 4000 s.
			to: map[float64]time.Duration{0.1: 1000 * time.Second, 0.37: 3700 * time.Second,
				0.38: 4000 * time.Second, 0.381: -1},
		},
		{
			name:      "over its footprint after a retention cut: projected smaller, no growth",
			snap:      snapWith(hourly, 8000*mib, 10000*mib, part("a", 0, 7000*mib, 1)),
			rates:     map[Key]float64{{"/d", "a"}: mib},
			projected: (8000 - 7000 + 3700) * mib, growth: 0,
			to: map[float64]time.Duration{0.8: 0, 0.85: -1},
		},
		{
			name:      "warming up: projected at its current size",
			snap:      snapWith(hourly, 1000*mib, 10000*mib, part("a", 0, 500*mib, 1)),
			rates:     map[Key]float64{},
			projected: 1000 * mib, growth: 0, unest: 1,
			to: map[float64]time.Duration{0.5: -1},
		},
		{
			name: "no retention and ingress: unbounded, still a time to each band",
			snap: snapWith(cfgWith(func(c *agent.TopicConfig) { c.RetentionMs = -1 }), 1000*mib, 10000*mib,
				part("a", 0, 500*mib, 1)),
			rates:     map[Key]float64{{"/d", "a"}: mib},
			projected: math.Inf(1), growth: mib,
			to: map[float64]time.Duration{0.2: 1000 * time.Second, 1: 9000 * time.Second},
		},
		{
			name: "compact only: projected at its current size",
			snap: snapWith(cfgWith(func(c *agent.TopicConfig) { c.CleanupPolicy = agent.CleanupPolicy{Compact: true} }),
				1000*mib, 10000*mib, part("a", 0, 500*mib, 1)),
			rates:     map[Key]float64{{"/d", "a"}: mib},
			projected: 1000 * mib, growth: 0,
			to: map[float64]time.Duration{0.5: -1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Project(tc.snap, tc.rates)
			if len(got) != 1 {
				t.Fatalf("%d log dirs", len(got))
			}
			d := got[0]
			if !d.Known {
				t.Fatal("not known")
			}
			if d.ProjectedBytes != tc.projected && math.Abs(d.ProjectedBytes-tc.projected) > 1 {
				t.Errorf("projected %.0f MiB, want %.0f MiB", d.ProjectedBytes/mib, tc.projected/mib)
			}
			if math.Abs(d.GrowthBytesPerSecond-tc.growth) > 1e-6 {
				t.Errorf("growth %.0f B/s, want %.0f", d.GrowthBytesPerSecond, tc.growth)
			}
			if d.Unestimated != tc.unest {
				t.Errorf("unestimated %d, want %d", d.Unestimated, tc.unest)
			}
			for ratio, want := range tc.to {
				got, ok := d.TimeTo(ratio)
				switch {
				case want < 0 && ok:
					t.Errorf("TimeTo(%v) = %v, want never", ratio, got)
				case want >= 0 && !ok:
					t.Errorf("TimeTo(%v) = never, want %v", ratio, want)
				case want >= 0 && (got-want).Abs() > time.Second:
					t.Errorf("TimeTo(%v) = %v, want %v", ratio, got, want)
				}
			}
		})
	}
}

func TestProjectUnknownCapacity(t *testing.T) {
	s := snapWith(agent.DefaultTopicConfig(), 10, 0, part("a", 0, 5, 1))
	d := Project(s, map[Key]float64{{"/d", "a"}: 1})[0]
	if d.Known {
		t.Fatal("a log dir without capacity is projected")
	}
	if _, ok := d.TimeTo(0.5); ok {
		t.Fatal("time to band without capacity")
	}
}

// R3.8: the ingress estimate follows a step and ignores a burst.
func TestRatesR38(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := Key{"/d", "a"}
	type phase struct {
		d    time.Duration
		rate float64 // bytes/s
	}
	for _, tc := range []struct {
		name   string
		phases []phase
		want   float64
	}{
		{"steady", []phase{{time.Hour, 1000}}, 1000},
		{"a 10-minute burst of 10x is ignored", []phase{{time.Hour, 1000}, {10 * time.Minute, 10000}, {5 * time.Minute, 1000}}, 1000},
		{"a step is followed within half the window", []phase{{time.Hour, 1000}, {35 * time.Minute, 3000}}, 3000},
		{"a step down too", []phase{{time.Hour, 3000}, {35 * time.Minute, 1000}}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRates(RateConfig{})
			now, appended := start, uint64(0)
			r.ObserveAt(now, map[Key]uint64{k: 0})
			for _, ph := range tc.phases {
				for end := now.Add(ph.d); now.Before(end); {
					now = now.Add(15 * time.Second) // a scrape interval
					appended += uint64(ph.rate * 15)
					r.ObserveAt(now, map[Key]uint64{k: appended})
				}
			}
			got, ok := r.Rate(k)
			if !ok || math.Abs(got-tc.want) > 0.01*tc.want {
				t.Errorf("rate %.0f (ok %v), want %.0f", got, ok, tc.want)
			}
		})
	}
}

func TestRatesForgetAndReset(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := Key{"/d", "a"}
	r := NewRates(RateConfig{BucketWidth: time.Minute, Buckets: 3})
	r.ObserveAt(start, map[Key]uint64{k: 0})
	if _, ok := r.Rate(k); ok {
		t.Fatal("a rate before any bucket closed")
	}
	r.ObserveAt(start.Add(time.Minute), map[Key]uint64{k: 600})
	if got, ok := r.Rate(k); !ok || got != 10 {
		t.Fatalf("rate %v %v, want 10", got, ok)
	}
	r.ObserveAt(start.Add(time.Minute), map[Key]uint64{k: 6000}) // not newer: ignored
	if got, _ := r.Rate(k); got != 10 {
		t.Fatalf("an old snapshot changed the rate to %v", got)
	}
	r.ObserveAt(start.Add(2*time.Minute), map[Key]uint64{k: 5}) // counter went down: afresh
	if _, ok := r.Rate(k); ok {
		t.Fatal("a reset counter kept its rate")
	}
	r.ObserveAt(start.Add(3*time.Minute), map[Key]uint64{})
	if len(r.Snapshot()) != 0 || len(r.topics) != 0 {
		t.Fatal("a topic that left is remembered")
	}
}
