package simbroker

import (
	"log/slog"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// DemoOptions shape the demo's simulated broker.
type DemoOptions struct {
	Dir string
	Now time.Time
	// Capacity is the log dir's configured capacity: the burst topic's
	// segment size and the scenario's rates follow it.
	Capacity uint64
	// Speed > 1 runs the scenario faster: its rates are multiplied, its
	// durations, the burst topic's retention.ms and the broker's retention
	// check and file delete delay divided (default 1).
	Speed float64
}

// DemoBurstTopic is the topic the demo's scenario floods.
const DemoBurstTopic = "telemetry"

// Demo is the demo's simulated cluster and its fill scenario: a topic with
// time retention that rolls every ~40 s (orders), one with size retention
// (payments.v1), a slow topic whose open segment holds expired records
// (clickstream, seed 000), a compacted topic (user-profiles), and the
// burst topic (telemetry) that the scenario floods until the disk is 93%
// full. The scenario's Usage and Logger are the caller's to set.
func Demo(o DemoOptions) (Config, *Scenario) {
	const kib, mib = 1 << 10, 1 << 20
	speed := o.Speed
	if speed <= 0 {
		speed = 1
	}
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	minute := time.Minute
	def := agent.DefaultTopicConfig()
	def.SegmentIndexBytes = DefaultSegmentIndexBytes
	orders := def
	orders.RetentionMs, orders.SegmentBytes = (4 * minute).Milliseconds(), 1*mib
	payments := def
	payments.RetentionBytes, payments.SegmentBytes = 3*mib, 1*mib
	clicks := def
	clicks.RetentionMs, clicks.SegmentBytes = (2 * minute).Milliseconds(), 1*mib
	profiles := def
	profiles.CleanupPolicy, profiles.SegmentBytes = agent.CleanupPolicy{Compact: true}, 512*kib
	burst := def
	burst.RetentionMs = scaled(minute).Milliseconds()
	burst.SegmentBytes = max(int64(o.Capacity)/32/mib*mib, mib)
	seg := func(bytes int64, age time.Duration) logdirgen.Segment {
		return logdirgen.Segment{Bytes: bytes, Age: age}
	}
	cfg := Config{
		Dir: o.Dir, Now: o.Now, NodeID: 1, ClusterID: "kdg-demo-cluster",
		InitialDelay: scaled(time.Minute), RetentionCheck: scaled(DefaultRetentionCheck), FileDeleteDelay: scaled(DefaultFileDeleteDelay),
		Topics: []Topic{
			{"orders", 3, orders, []logdirgen.Segment{
				seg(mib, 5*minute), seg(mib, 3*minute), seg(mib, 2*minute), seg(mib, minute), seg(300*kib, 0),
			}, 24 * kib},
			{"payments.v1", 2, payments, []logdirgen.Segment{
				seg(mib, 40*minute), seg(mib, 30*minute), seg(mib, 20*minute), seg(mib, 10*minute), seg(200*kib, 0),
			}, 16 * kib},
			{"clickstream", 1, clicks, []logdirgen.Segment{
				seg(mib, 9*minute), seg(700*kib, 0),
			}, 2 * kib},
			{"user-profiles", 1, profiles, []logdirgen.Segment{
				seg(512*kib, 90*minute), seg(512*kib, 30*minute), seg(100*kib, 0),
			}, 4 * kib},
			{DemoBurstTopic, 4, burst, []logdirgen.Segment{
				seg(256*kib, 2*minute), seg(100*kib, 0),
			}, 1 * kib},
		},
	}
	sc := &Scenario{
		Topic: DemoBurstTopic, Capacity: o.Capacity, Peak: 0.93, Low: 0.60,
		StartRate: 0.005 * speed, MaxRate: 0.025 * speed, Doubling: scaled(8 * time.Second), MaxFill: scaled(150 * time.Second),
		FirstCalm: scaled(10 * time.Second), Calm: scaled(minute), Logger: slog.New(slog.DiscardHandler),
	}
	return cfg, sc
}
