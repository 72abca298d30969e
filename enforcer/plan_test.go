package enforcer

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const dir = "/data/kafka"

// seg is a segment of 100 bytes (on disk and .log) whose largest timestamp
// is t0 + ts minutes.
func seg(base int64, ts int, state agent.State) agent.Segment {
	s := agent.Segment{BaseOffset: base, LogBytes: 100, DiskBytes: 100, LargestTimestampMs: t0.Add(time.Duration(ts) * time.Minute).UnixMilli(), State: state}
	if state == agent.StateEligible {
		s.Reason = agent.ReasonRetentionTime
		s.ExpiredBytes = 100
	}
	return s
}

// segRun is n segments of the given number of offsets each, one minute
// apart, all closed but the last (open).
func segRun(n int, offsets int64) []agent.Segment {
	segs := make([]agent.Segment, n)
	for i := range segs {
		st := agent.StateClosed
		if i == n-1 {
			st = agent.StateOpen
		}
		segs[i] = seg(int64(i)*offsets, i, st)
	}
	return segs
}

// part builds a live partition; segments given oldest first, the last one
// open. lso and hw as the checkpoints say.
func part(topic string, p int32, lso, hw int64, segs ...agent.Segment) agent.Partition {
	pt := agent.Partition{Topic: topic, Partition: p, Dir: fmt.Sprintf("%s-%d", topic, p), Kind: agent.KindLive,
		Segments: segs, LogStartOffset: lso, HighWatermark: hw}
	for _, s := range segs {
		pt.DiskBytes += s.DiskBytes
	}
	return pt
}

// clusterID is the cluster the test log dir's meta.properties names.
const clusterID = "test-cluster"

// snap is a snapshot of one log dir of node 1 of clusterID whose topics'
// configs were all read from the cluster at t0.
func snap(used, capacity uint64, parts ...agent.Partition) *agent.Snapshot {
	s := &agent.Snapshot{
		Time: t0,
		LogDirs: []agent.LogDir{{Path: dir, BrokerID: 1, ClusterID: clusterID, Partitions: agent.PartitionsOf(parts...),
			Usage: agent.Usage{CapacityBytes: capacity, UsedBytes: used, AvailableBytes: capacity - used, Basis: agent.CapacityConfigured}}},
		Configs: map[string]agent.TopicConfig{
			"compacted": {CleanupPolicy: agent.CleanupPolicy{Compact: true}},
			"both":      {CleanupPolicy: agent.CleanupPolicy{Compact: true, Delete: true}},
			"tiered":    {CleanupPolicy: agent.CleanupPolicy{Delete: true}, RemoteStorage: true, LocalRetentionMs: -2, LocalRetentionBytes: -2},
			"tiered-copy-off": {CleanupPolicy: agent.CleanupPolicy{Delete: true}, RemoteStorage: true, RemoteCopyDisable: true,
				LocalRetentionMs: -2, LocalRetentionBytes: -2},
		},
		Defaults:      agent.DefaultTopicConfig(),
		ConfigFetched: map[string]time.Time{},
	}
	for _, p := range parts {
		if _, ok := s.Configs[p.Topic]; !ok {
			s.Configs[p.Topic] = agent.DefaultTopicConfig()
		}
	}
	for t := range s.Configs {
		s.ConfigFetched[t] = t0
	}
	return s
}

// withEvidence completes o with the evidence a pass on a healthy cluster
// has: every log dir confirmed, every right held.
func withEvidence(o Observed) Observed {
	if o.Identity == nil && o.Snapshot != nil {
		o.Identity = map[string]agent.LogDirIdentity{}
		for _, ld := range o.Snapshot.LogDirs {
			o.Identity[ld.Path] = agent.LogDirIdentity{Path: ld.Path, MatchedBy: "path", BrokerPath: ld.Path}
		}
	}
	if o.Rights == nil {
		o.Rights = &rights.Report{Features: rights.Features()}
	}
	if o.Now.IsZero() {
		o.Now = t0
	}
	return o
}

// brokerOffsets says the broker's offsets equal the checkpoints.
func brokerOffsets(s *agent.Snapshot) map[TopicPartition]Offsets {
	m := map[TopicPartition]Offsets{}
	for _, ld := range s.LogDirs {
		for _, p := range ld.Partitions {
			m[TopicPartition{p.Topic, p.Partition}] = Offsets{LogStart: p.LogStartOffset, HighWatermark: p.HighWatermark}
		}
	}
	return m
}

type del struct {
	topic     string
	partition int32
	offset    int64
	segments  int
	bytes     int64
	unexpired int64
}

func dels(ds []Deletion) []del {
	out := make([]del, 0, len(ds))
	for _, d := range ds {
		out = append(out, del{d.Topic, d.Partition, d.Offset, d.Segments, d.Bytes, d.UnexpiredBytes})
	}
	slices.SortFunc(out, func(a, b del) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	return out
}

func planFor(p Profile, o Observed) Plan {
	if o.Offsets == nil {
		o.Offsets = brokerOffsets(o.Snapshot)
	}
	o = withEvidence(o)
	return PlanActions(o, Desired(Policy{Profile: p, HysteresisPoints: 5}, o))
}

func TestPlanDeletions(t *testing.T) {
	E, C, O := agent.StateEligible, agent.StateClosed, agent.StateOpen
	seed000, _ := ProfileFor(Config{Profile: ProfileCustom, Bands: Seed000Bands()})
	cases := []struct {
		rule    string
		profile Profile
		obs     Observed
		want    []del
	}{
		{
			rule: "R3.1/below 75% nothing before the schedule", profile: CloudProfile(),
			obs:  Observed{Snapshot: snap(700, 1000, part("a", 0, 0, 30, seg(0, 1, E), seg(10, 2, C), seg(20, 3, O)))},
			want: []del{},
		},
		{
			rule: "R3.1/below 75% the schedule deletes every eligible segment", profile: CloudProfile(),
			obs: Observed{ScheduleDue: true, Snapshot: snap(700, 1000,
				part("a", 0, 0, 40, seg(0, 1, E), seg(10, 2, E), seg(20, 3, C), seg(30, 4, O)),
				part("b", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))},
			want: []del{{"a", 0, 20, 2, 200, 0}},
		},
		{
			rule: "R3.1/75-85% deletes eligible segments until under 75%, oldest first", profile: CloudProfile(),
			// used 800 of 1000: 51 bytes over 749 -> one 100-byte segment is enough.
			obs: Observed{Snapshot: snap(800, 1000,
				part("a", 0, 0, 40, seg(0, 5, E), seg(10, 6, E), seg(20, 7, C), seg(30, 8, O)),
				part("b", 0, 0, 30, seg(0, 1, E), seg(10, 9, E), seg(20, 10, O)))},
			want: []del{{"b", 0, 10, 1, 100, 0}},
		},
		{
			rule: "R1.2/a partition Kafka's retention does not visit is never purged: moving, cleaner off, log dir offline", profile: CloudProfile(),
			obs: func() Observed {
				held := func(topic string, r agent.Reason) agent.Partition {
					p := part(topic, 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 9, O))
					p.Held = r
					return p
				}
				s := snap(1050, 1200, held("m", agent.HeldMoving), held("both", agent.HeldCleanerDisabled),
					held("o", agent.HeldLogDirOffline), held("x", agent.ReasonNone))
				return Observed{Snapshot: s}
			}(),
			want: []del{{"x", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R1.2/compact,delete with the cleaner off is not deletable even unclassified", profile: CloudProfile(),
			obs: func() Observed {
				s := snap(1050, 1200, part("both", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 9, O)))
				c := s.Configs["both"]
				c.CleanerDisabled = true
				s.Configs["both"] = c
				return Observed{Snapshot: s}
			}(),
			want: []del{},
		},
		{
			rule: "R1.2/below the log start offset of a moving partition is not on its way out", profile: CloudProfile(),
			// used 1050 of 1200: need 31. The moving partition's segment below
			// its log start offset stays until the move ends: x loses one.
			obs: func() Observed {
				m := part("m", 0, 10, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 9, O))
				m.Held = agent.HeldMoving
				return Observed{Snapshot: snap(1050, 1200, m, part("x", 0, 0, 40, seg(0, 4, C), seg(10, 5, C), seg(20, 6, C), seg(30, 9, O)))}
			}(),
			want: []del{{"x", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.1/75-85% never takes closed segments that are not eligible", profile: CloudProfile(),
			obs: Observed{Snapshot: snap(840, 1000,
				part("a", 0, 0, 40, seg(0, 5, E), seg(10, 6, C), seg(20, 7, E), seg(30, 8, O)))},
			want: []del{{"a", 0, 10, 1, 100, 0}},
		},
		{
			rule: "R3.1/85-90% purges oldest closed segments across partitions until under 85%", profile: CloudProfile(),
			// used 1050 of 1200 (87.5%): limit floor(0.85*1200)=1020, need 31 -> 1 segment;
			obs: Observed{Snapshot: snap(1050, 1200,
				part("a", 0, 0, 40, seg(0, 3, C), seg(10, 4, C), seg(20, 7, C), seg(30, 8, O)),
				part("b", 0, 0, 40, seg(0, 1, C), seg(10, 5, C), seg(20, 6, C), seg(30, 9, O)))},
			want: []del{{"b", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.1/purge interleaves partitions chronologically and stops at the target", profile: CloudProfile(),
			// used 890 of 1000: need 890-850+1 = 41.. with 10-byte segments below
			obs: func() Observed {
				s := snap(890, 1000,
					part("a", 0, 0, 40, seg(0, 1, C), seg(10, 3, C), seg(20, 5, C), seg(30, 8, O)),
					part("b", 0, 0, 40, seg(0, 2, C), seg(10, 4, C), seg(20, 6, C), seg(30, 9, O)))
				for pi := range s.LogDirs[0].Partitions {
					for si := range s.LogDirs[0].Partitions[pi].Segments {
						s.LogDirs[0].Partitions[pi].Segments[si].DiskBytes = 10
					}
				}
				return Observed{Snapshot: s}
			}(),
			// chronological: a0(1) b0(2) a10(3) b10(4) a20(5) -> 50 bytes >= 41
			want: []del{{"a", 0, 30, 3, 30, 30}, {"b", 0, 20, 2, 20, 20}},
		},
		{
			rule: "R3.5/the open segment is never purged even at 99%", profile: CloudProfile(),
			obs:  Observed{Snapshot: snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))},
			want: []del{{"a", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.5/never past the high watermark", profile: CloudProfile(),
			obs:  Observed{Snapshot: snap(990, 1000, part("a", 0, 0, 15, seg(0, 1, C), seg(10, 2, C), seg(20, 3, O)))},
			want: []del{{"a", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.5/compact-only and internal topics are never purged; compact,delete is", profile: CloudProfile(),
			obs: Observed{Snapshot: snap(990, 1000,
				part("compacted", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)),
				part("__consumer_offsets", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)),
				part("__kafka_disk_guard_protection", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)),
				part("both", 0, 0, 20, seg(0, 3, C), seg(10, 4, O)))},
			want: []del{{"both", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R7.4/a tiered topic never gets DeleteRecords, eligible or purged", profile: CloudProfile(),
			obs: Observed{ScheduleDue: true, Snapshot: snap(990, 1000,
				part("tiered", 0, 0, 30, seg(0, 1, E), seg(10, 2, C), seg(20, 3, O)),
				part("tiered-copy-off", 0, 0, 30, seg(0, 1, E), seg(10, 2, C), seg(20, 3, O)),
				part("a", 0, 0, 20, seg(0, 5, C), seg(10, 6, O)))},
			want: []del{{"a", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R7.4/a tiered topic is left alone by the schedule", profile: CloudProfile(),
			obs: Observed{ScheduleDue: true, Snapshot: snap(100, 1000,
				part("tiered", 0, 0, 30, seg(0, 1, E), seg(10, 2, E), seg(20, 3, O)))},
			want: []del{},
		},
		{
			rule: "R3.5/pending .deleted bytes count as already freed", profile: CloudProfile(),
			obs: func() Observed {
				s := snap(880, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)))
				s.LogDirs[0].PendingDeleteBytes = 40 // 880-40 = 840 < 850: nothing to do
				return Observed{Snapshot: s}
			}(),
			want: []del{},
		},
		{
			rule: "R3.5/segments below the broker's log start offset count as freed and are not deleted twice", profile: CloudProfile(),
			obs: func() Observed {
				s := snap(960, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)))
				// The checkpoint still says 0; the broker already moved to 10.
				return Observed{Snapshot: s, Offsets: map[TopicPartition]Offsets{{"a", 0}: {LogStart: 10, HighWatermark: 40}}}
			}(),
			// need 960-100-850+1 = 11 -> one more segment, from 10 to 20.
			want: []del{{"a", 0, 20, 1, 100, 100}},
		},
		{
			rule: "R3.5/a partition the broker gave no offsets for is left alone", profile: CloudProfile(),
			obs: Observed{Snapshot: snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)), part("b", 0, 0, 20, seg(0, 2, C), seg(10, 3, O))),
				Offsets: map[TopicPartition]Offsets{{"b", 0}: {LogStart: 0, HighWatermark: 20}}},
			want: []del{{"b", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.2/local 83-88% takes at most 10% of each partition's messages", profile: LocalProfile(),
			// a: 100 messages in segments of 5 -> cap 10 messages = 2 segments.
			// b: 40 messages in segments of 10 -> cap 4: nothing (segment boundary).
			obs: func() Observed {
				return Observed{Snapshot: snap(870_000, 1_000_000, part("a", 0, 0, 100, segRun(20, 5)...), part("b", 0, 0, 40, segRun(4, 10)...))}
			}(),
			want: []del{{"a", 0, 10, 2, 200, 200}},
		},
		{
			rule: "R3.2/local: one pass per partition per interval", profile: LocalProfile(),
			obs: func() Observed {
				return Observed{Snapshot: snap(870_000, 1_000_000, part("a", 0, 0, 100, segRun(20, 5)...)),
					FractionDone: map[TopicPartition]bool{{"a", 0}: true}}
			}(),
			want: []del{},
		},
		{
			rule: "R3.2/local below 83% leaves retention to the broker", profile: LocalProfile(),
			obs:  Observed{ScheduleDue: true, Snapshot: snap(820, 1000, part("a", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)))},
			want: []del{},
		},
		{
			rule: "R3.3/serverless never purges", profile: ServerlessProfile(),
			obs:  Observed{Snapshot: snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))},
			want: []del{},
		},
		{
			rule: "R3.4/seed 000 purges at 85% regardless of retention", profile: seed000,
			obs:  Observed{Snapshot: snap(860, 1000, part("a", 0, 0, 30, seg(0, 1, C), seg(10, 2, C), seg(20, 3, O)))},
			want: []del{{"a", 0, 10, 1, 100, 100}},
		},
		{
			rule: "R3.1/protect band keeps purging to the purge band's target", profile: CloudProfile(),
			obs: Observed{Snapshot: snap(950, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, E), seg(20, 3, C), seg(30, 4, O)))},
			// need 950-850+1 = 101: two segments, the eligible one expired.
			want: []del{{"a", 0, 20, 2, 200, 100}},
		},
		{
			rule: "R6/stale snapshot: no deletion", profile: CloudProfile(),
			obs:  Observed{Stale: true, Snapshot: snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))},
			want: []del{},
		},
		{
			rule: "R6/broker unreachable: no deletion", profile: CloudProfile(),
			obs:  Observed{BrokerUnreachable: true, Snapshot: snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))},
			want: []del{},
		},
		{
			rule: "R6/scan errors in the log dir: no deletion", profile: CloudProfile(),
			obs: func() Observed {
				s := snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, C), seg(10, 2, O)))
				s.LogDirs[0].Err = fmt.Errorf("permission denied")
				return Observed{Snapshot: s}
			}(),
			want: []del{},
		},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			got := dels(planFor(c.profile, c.obs).Deletions)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("deletions\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestPlanHeldReasons(t *testing.T) {
	s := snap(990, 1000, part("a", 0, 0, 20, seg(0, 1, agent.StateClosed), seg(10, 2, agent.StateOpen)))
	p := planFor(CloudProfile(), Observed{Stale: true, BrokerUnreachable: true, Snapshot: s})
	want := []BlockReason{BlockSnapshotStale, BlockBrokerUnreachable}
	if !reflect.DeepEqual(p.Held[dir], want) {
		t.Fatalf("held %v, want %v", p.Held, want)
	}
}

// A topic held back in a log dir (DirGoal.HeldTopics, where per-topic
// evidence lands) gives nothing: the plan skips it, takes the next oldest
// segments elsewhere and records why.
func TestPlanSkipsHeldTopics(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	o := Observed{Snapshot: snap(950, 1000,
		part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)),
		part("b", 0, 0, 40, seg(0, 5, C), seg(10, 6, C), seg(20, 7, C), seg(30, 8, O)))}
	o.Offsets = brokerOffsets(o.Snapshot)
	o = withEvidence(o)
	goals := Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)
	const why = BlockConfigStale
	goals[0].HeldTopics = map[string][]BlockReason{"a": {why}}
	p := PlanActions(o, goals)
	if got, want := dels(p.Deletions), []del{{"b", 0, 20, 2, 200, 200}}; !reflect.DeepEqual(got, want) {
		t.Errorf("deletions %+v, want %+v", got, want)
	}
	if want := []TopicHold{{LogDir: dir, Topic: "a", Reasons: []BlockReason{why}}}; !reflect.DeepEqual(p.HeldTopics, want) {
		t.Errorf("held topics %+v, want %+v", p.HeldTopics, want)
	}
}
