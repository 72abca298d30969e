package exporter

import (
	"errors"
	"fmt"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// fixtureNow is the clock of every fixture.
func fixtureNow() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// staticSource serves a fixed snapshot.
type staticSource struct{ snap *agent.Snapshot }

func (s staticSource) Snapshot() *agent.Snapshot { return s.snap }

func seg(base, logBytes int64, state agent.State, age time.Duration) agent.Segment {
	s := agent.Segment{
		BaseOffset:         base,
		LogBytes:           logBytes,
		DiskBytes:          logBytes + 12*1024,
		IndexApparentBytes: 20 << 20,
		LargestTimestampMs: fixtureNow().Add(-age).UnixMilli(),
		TimestampSource:    agent.TimestampFromTimeIndex,
		State:              state,
	}
	if state == agent.StateEligible {
		s.Reason, s.ExpiredBytes = agent.ReasonRetentionTime, logBytes
	}
	return s
}

// expiredOpen is an open segment holding expired records (seed 000).
func expiredOpen(logBytes int64, age time.Duration, expired int64) agent.Segment {
	s := seg(0, logBytes, agent.StateOpen, age)
	s.ExpiredBytes = expired
	return s
}

func part(topic string, p int32, segs ...agent.Segment) agent.Partition {
	var disk int64
	for _, s := range segs {
		disk += s.DiskBytes
	}
	return agent.Partition{
		Topic: topic, Partition: p, Dir: fmt.Sprintf("%s-%d", topic, p), Kind: agent.KindLive,
		Segments: segs, LogStartOffset: segs[0].BaseOffset, HighWatermark: 1000,
		DiskBytes: disk + 4096, OtherBytes: 4096,
	}
}

// fixtureSnapshot is a broker with two log dirs: one healthy with every kind
// of topic and directory of spec R1.4, one the last scan could not read.
func fixtureSnapshot() *agent.Snapshot {
	now := fixtureNow()
	day := 24 * time.Hour

	orders0 := part("orders", 0,
		seg(0, 512*mib, agent.StateEligible, 9*day),
		seg(1000, 512*mib, agent.StateEligible, 8*day),
		seg(2000, 512*mib, agent.StateClosed, 2*day),
		seg(3000, 100*mib, agent.StateOpen, time.Minute),
	)
	orders0.PendingDeleteBytes = 300 * mib
	orders0.AppendedBytes = 700 * uint64(mib)
	orders1 := part("orders", 1,
		seg(0, 512*mib, agent.StateClosed, 3*day),
		seg(1000, 40*mib, agent.StateOpen, time.Minute),
	)
	orders1.AppendedBytes = 40 * uint64(mib)
	// A dotted, dashed topic whose open segment holds expired records (seed 000).
	events := part("user.events-v2", 0,
		expiredOpen(200*mib, 8*day, 150*mib),
	)
	events.WriteRateBytesPerSecond = 1024
	events.AppendedBytes = 200 * uint64(mib)
	// retention.bytes = -1, observed write rate: reserved by estimate (R5.2).
	clicks := part("clicks", 0,
		seg(0, 1*gib, agent.StateClosed, 12*time.Hour),
		seg(5000, 10*mib, agent.StateOpen, time.Second),
	)
	clicks.WriteRateBytesPerSecond = 2048
	clicks.AppendedBytes = 10 * uint64(mib)
	// retention.bytes = -1, no rate seen yet: unbounded.
	audit := part("audit", 0, seg(0, 5*mib, agent.StateOpen, time.Hour))
	offsets := part("__consumer_offsets", 7,
		seg(0, 100*mib, agent.StateClosed, 30*day),
		seg(900, 1*mib, agent.StateOpen, time.Minute),
	)
	// Every segment past time retention: Kafka rolls and deletes the active one too.
	stale := part("stale", 0,
		seg(0, 3*mib, agent.StateEligible, 10*day),
		seg(10, 1*mib, agent.StateEligible, 9*day),
	)
	stale.Segments[1].Reason = agent.ReasonAllExpiredActive
	// A tiered topic (R1.7): one segment uploaded and past local
	// retention, one uploaded, the open one local only; partition 1's
	// remote offsets could not be read.
	tiered0 := part("tiered", 0,
		seg(0, 64*mib, agent.StateEligible, 2*day),
		seg(100, 64*mib, agent.StateClosed, time.Hour),
		seg(200, 8*mib, agent.StateOpen, time.Minute),
	)
	tiered0.Segments[0].Reason = agent.ReasonLocalRetentionTime
	tiered0.Segments[0].Tier, tiered0.Segments[1].Tier, tiered0.Segments[2].Tier = agent.TierUploaded, agent.TierUploaded, agent.TierLocalOnly
	tiered0.Tiered, tiered0.Remote = true, &agent.RemoteOffsets{HighestUploaded: 199, LocalLogStart: 0, LogStart: 0}
	tiered1 := part("tiered", 1, seg(0, 16*mib, agent.StateClosed, 3*day), seg(100, 1*mib, agent.StateOpen, time.Minute))
	tiered1.Segments[0].Tier, tiered1.Segments[1].Tier = agent.TierUnknown, agent.TierUnknown
	tiered1.Tiered, tiered1.Remote = true, &agent.RemoteOffsets{Err: "list offsets: NOT_LEADER_OR_FOLLOWER"}
	deleted := agent.Partition{Topic: "old-topic", Partition: 0, Dir: "old-topic-0.abc-delete", Kind: agent.KindDeleted,
		DiskBytes: 64 * mib, PendingDeleteBytes: 64 * mib, LogStartOffset: -1, HighWatermark: -1}
	future := agent.Partition{Topic: "orders", Partition: 2, Dir: "orders-2.def-future", Kind: agent.KindFuture,
		Segments: []agent.Segment{seg(0, 8*mib, agent.StateOpen, time.Minute)}, DiskBytes: 8 * mib,
		LogStartOffset: -1, HighWatermark: -1}
	metadata := agent.Partition{Topic: "__cluster_metadata", Partition: 0, Dir: "__cluster_metadata-0", Kind: agent.KindMetadata,
		Segments: []agent.Segment{seg(0, 2*mib, agent.StateOpen, time.Second)}, DiskBytes: 2 * mib,
		LogStartOffset: -1, HighWatermark: -1}

	ordersCfg := agent.DefaultTopicConfig()
	ordersCfg.RetentionBytes = 1 * gib
	ordersCfg.SegmentBytes = 512 * mib
	ordersCfg.RetentionMs = 7 * day.Milliseconds()
	clicksCfg := agent.DefaultTopicConfig()
	clicksCfg.RetentionMs = day.Milliseconds()
	offsetsCfg := agent.DefaultTopicConfig()
	offsetsCfg.CleanupPolicy = agent.CleanupPolicy{Compact: true}
	eventsCfg := agent.DefaultTopicConfig()
	eventsCfg.CleanupPolicy = agent.CleanupPolicy{Compact: true, Delete: true}
	eventsCfg.SegmentBytes = 256 * mib
	tieredCfg := agent.DefaultTopicConfig()
	tieredCfg.RemoteStorage, tieredCfg.LocalRetentionMs = true, day.Milliseconds()

	return &agent.Snapshot{
		Time: now.Add(-10 * time.Second),
		LogDirs: []agent.LogDir{
			{
				Path: "/var/lib/kafka/data-0", BrokerID: 1, ClusterID: "c1",
				Partitions: []*agent.Partition{&audit, &clicks, &offsets, &metadata, &deleted, &orders0, &orders1, &future, &stale, &tiered0, &tiered1, &events},
				Usage: agent.Usage{CapacityBytes: 100 * uint64(gib), UsedBytes: 62 * uint64(gib),
					AvailableBytes: 38 * uint64(gib), Basis: agent.CapacityFilesystem},
				PendingDeleteBytes: 364 * mib, OtherBytes: 8192, DiskBytes: 5 * gib,
				// Its filesystem: 62 GiB used, of which the live partitions
				// explain a few GiB.
				Filesystem: agent.Filesystem{Known: true, Device: 2049, TotalBytes: 105 * uint64(gib),
					UsedBytes: 62 * uint64(gib), AvailableBytes: 38 * uint64(gib)},
			},
			{
				Path: "/var/lib/kafka/data-1", BrokerID: 1, ClusterID: "c1",
				Usage: agent.Usage{CapacityBytes: 50 * uint64(gib), UsedBytes: 10 * uint64(gib),
					AvailableBytes: 40 * uint64(gib), Basis: agent.CapacityConfigured},
				Err: errors.New("read log dir /var/lib/kafka/data-1: permission denied"),
			},
		},
		Configs: map[string]agent.TopicConfig{
			"orders": ordersCfg, "clicks": clicksCfg, "__consumer_offsets": offsetsCfg, "user.events-v2": eventsCfg,
			"tiered": tieredCfg,
		},
		Defaults:    agent.DefaultTopicConfig(),
		ConfigsTime: now.Add(-90 * time.Second),
		// orders and clicks fetched from the cluster, the offsets topic's
		// lookup failed since, user.events-v2 from a file; audit and stale
		// have no config of their own.
		ConfigFetched: map[string]time.Time{"orders": now.Add(-90 * time.Second), "clicks": now.Add(-30 * time.Second),
			"__consumer_offsets": now.Add(-10 * time.Minute)},
		ConfigErrors: map[string]error{"__consumer_offsets": errors.New("describe configs: timeout")},
		Health: agent.Health{
			LastFullScan:         now.Add(-30 * time.Second),
			LastFullScanDuration: 1500 * time.Millisecond,
			ScanErrors:           map[agent.ErrorKind]uint64{agent.ErrPermission: 3, agent.ErrVanished: 1},
			Rescans:              map[string]uint64{"start": 1, "periodic": 12},
			PartitionRereads:     4711,
			WatchMode:            "inotify",
		},
	}
}
