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
	s := agent.Segment{BaseOffset: base, LogBytes: 100, DiskBytes: 100, LargestTimestamp: t0.Add(time.Duration(ts) * time.Minute), State: state}
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
		LogDirs: []agent.LogDir{{Path: dir, BrokerID: 1, ClusterID: clusterID, Partitions: parts,
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

func TestDesiredProtection(t *testing.T) {
	cases := []struct {
		rule    string
		profile Profile
		usage   uint64 // of 1000
		was     bool
		stale   bool
		scanErr bool
		want    bool
	}{
		{"R3.1/protect at 90%", CloudProfile(), 900, false, false, false, true},
		{"R3.1/no protection at 89.9%", CloudProfile(), 899, false, false, false, false},
		{"R3.7/stays on at 89.9% (hysteresis)", CloudProfile(), 899, true, false, false, true},
		{"R3.7/stays on at 85.0% (band - 5 points, inclusive)", CloudProfile(), 850, true, false, false, true},
		{"R3.7/lifts at 84.9%", CloudProfile(), 849, true, false, false, false},
		{"R3.2/local protects at 88%", LocalProfile(), 880, false, false, false, true},
		{"R3.2/local lifts under 83%", LocalProfile(), 829, true, false, false, false},
		{"R3.2/local stays at 83%", LocalProfile(), 830, true, false, false, true},
		{"R3.3/serverless never protects", ServerlessProfile(), 999, false, false, false, false},
		{"R6/stale keeps protection on", CloudProfile(), 100, true, true, false, true},
		{"R6/stale does not add protection", CloudProfile(), 990, false, true, false, false},
		{"R6/scan errors never lift", CloudProfile(), 100, true, false, true, true},
		{"R6/scan errors may still protect", CloudProfile(), 950, false, false, true, true},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := snap(c.usage, 1000)
			if c.scanErr {
				s.LogDirs[0].Err = fmt.Errorf("io")
			}
			o := withEvidence(Observed{Snapshot: s, Stale: c.stale, Protected: map[string]bool{dir: c.was}})
			g := Desired(Policy{Profile: c.profile, HysteresisPoints: 5}, o)
			if g[0].Protect != c.want {
				t.Fatalf("protect %v, want %v", g[0].Protect, c.want)
			}
		})
	}
}

// protObs builds a protection observation: this agent is broker 1.
func protObs(s *agent.Snapshot, protected bool, own map[int32]Ownership, acls []ACL) Observed {
	return Observed{Snapshot: s, Protected: map[string]bool{dir: protected}, Offsets: map[TopicPartition]Offsets{},
		Protection: &ProtectionObserved{BrokerID: 1, Strategy: StrategyACL, Ownership: own, ACLs: acls, ProducerByteRate: 1024}}
}

func TestPlanProtectionACL(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)), part("__consumer_offsets", 0, 0, 0, seg(0, 1, O)))
	calm := snap(100, 1000, part("t1", 0, 0, 0, seg(0, 1, O)), part("t2", 0, 0, 0, seg(0, 1, O)))
	deny := func(t string) ACL { return guardACL(t, OpWrite, PermDeny) }
	read := func(t string) ACL { return guardACL(t, OpRead, PermAllow) }
	desc := func(t string) ACL { return guardACL(t, OpDescribe, PermAllow) }
	operator := ACL{Topic: "t", Pattern: PatternPrefixed, Principal: "User:alice", Host: "*", Operation: OpRead, Permission: PermAllow}
	allMine := []ACL{deny("t1"), desc("t1"), read("t1"), deny("t2")}
	bob := ACL{Topic: "t2", Pattern: PatternLiteral, Principal: "User:bob", Host: "*", Operation: OpRead, Permission: PermAllow}

	cases := []struct {
		rule       string
		obs        Observed
		create     []ACL
		delete     []ACL
		record     bool
		ownACLs    []ACL
		ownLogDirs []string
	}{
		{
			rule:   "R4.3/deny write on every topic in the full log dir, readers kept where no ACL existed",
			obs:    protObs(full, false, map[int32]Ownership{}, []ACL{{Topic: "t2", Pattern: PatternLiteral, Principal: "User:bob", Host: "*", Operation: OpRead, Permission: PermAllow}}),
			create: []ACL{deny("t1"), desc("t1"), read("t1"), deny("t2")},
			record: true, ownACLs: allMine, ownLogDirs: []string{dir},
		},
		{
			rule:   "R4.3/an operator's prefixed ACL counts: access not widened",
			obs:    protObs(full, false, map[int32]Ownership{}, []ACL{operator}),
			create: []ACL{deny("t1"), deny("t2")},
			record: true, ownACLs: []ACL{deny("t1"), deny("t2")}, ownLogDirs: []string{dir},
		},
		{
			rule:   "R4.3/idempotent: everything in place, nothing to do",
			obs:    protObs(full, true, map[int32]Ownership{1: {BrokerID: 1, LogDirs: []string{dir}, ACLs: allMine}}, append(slices.Clone(allMine), ACL{Topic: "t2", Principal: "User:bob", Host: "*", Operation: OpRead, Permission: PermAllow})),
			record: false, ownACLs: allMine, ownLogDirs: []string{dir},
		},
		{
			rule:   "R4.3/a binding removed behind the agent's back is recreated (level-triggered)",
			obs:    protObs(full, true, map[int32]Ownership{1: {BrokerID: 1, LogDirs: []string{dir}, ACLs: allMine}}, []ACL{desc("t1"), read("t1"), deny("t2")}),
			create: []ACL{deny("t1")},
			record: false, ownACLs: allMine, ownLogDirs: []string{dir},
		},
		{
			rule:   "R4.3/another agent's guard ACLs are not operator ACLs: a second agent claims the same set",
			obs:    protObs(full, false, map[int32]Ownership{2: {BrokerID: 2, LogDirs: []string{"/b"}, ACLs: allMine}}, append(slices.Clone(allMine), bob)),
			record: true, ownACLs: allMine, ownLogDirs: []string{dir},
		},
		{
			rule:   "R3.7/lifting removes exactly this agent's bindings, never an operator's",
			obs:    protObs(calm, true, map[int32]Ownership{1: {BrokerID: 1, LogDirs: []string{dir}, ACLs: allMine}}, append(slices.Clone(allMine), operator)),
			delete: allMine, record: true,
		},
		{
			rule:   "R4.3/lifting keeps what another agent still claims",
			obs:    protObs(calm, true, map[int32]Ownership{1: {BrokerID: 1, LogDirs: []string{dir}, ACLs: allMine}, 2: {BrokerID: 2, LogDirs: []string{"/b"}, ACLs: []ACL{deny("t1"), desc("t1"), read("t1")}}}, allMine),
			delete: []ACL{deny("t2")}, record: true,
		},
		{
			rule:   "R4.3/after a restart, bindings already gone are not deleted again, the record is cleared",
			obs:    protObs(calm, true, map[int32]Ownership{1: {BrokerID: 1, LogDirs: []string{dir}, ACLs: allMine}}, nil),
			record: true,
		},
		{
			rule:   "R4.3/internal topics are never protected",
			obs:    protObs(snap(950, 1000, part("__consumer_offsets", 0, 0, 0, seg(0, 1, O))), false, map[int32]Ownership{}, nil),
			record: true, ownLogDirs: []string{dir},
		},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			obs := withEvidence(c.obs)
			p := PlanActions(obs, Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, obs)).Protection
			flat := func(tps []TopicProtection) []ACL {
				var out []ACL
				for _, tp := range tps {
					out = append(out, tp.ACLs...)
				}
				sortACLs(out)
				return out
			}
			sortACLs(c.create)
			sortACLs(c.delete)
			if got := flat(p.Create); !reflect.DeepEqual(got, c.create) {
				t.Errorf("create\n got %v\nwant %v", got, c.create)
			}
			if got := flat(p.Delete); !reflect.DeepEqual(got, c.delete) {
				t.Errorf("delete\n got %v\nwant %v", got, c.delete)
			}
			if p.Record != c.record {
				t.Errorf("record %v, want %v", p.Record, c.record)
			}
			sortACLs(c.ownACLs)
			if !reflect.DeepEqual(p.Ownership.ACLs, c.ownACLs) || !reflect.DeepEqual(p.Ownership.LogDirs, c.ownLogDirs) {
				t.Errorf("ownership %+v, want acls %v dirs %v", p.Ownership, c.ownACLs, c.ownLogDirs)
			}
		})
	}
}

func TestPlanProtectionQuota(t *testing.T) {
	O := agent.StateOpen
	full := snap(950, 1000, part("t1", 0, 0, 0, seg(0, 1, O)))
	calm := snap(100, 1000, part("t1", 0, 0, 0, seg(0, 1, O)))
	obs := func(s *agent.Snapshot, was bool, own map[int32]Ownership, current int64) Observed {
		o := protObs(s, was, own, nil)
		o.Protection.Strategy = StrategyQuota
		o.Protection.DefaultProducerByteRate = current
		return o
	}
	cases := []struct {
		rule     string
		obs      Observed
		set      int64
		remove   bool
		operator bool
		claim    int64
	}{
		{"R4.3/quota set on the default client entity", obs(full, false, map[int32]Ownership{}, 0), 1024, false, false, 1024},
		{"R4.3/an operator's default quota is never touched", obs(full, false, map[int32]Ownership{}, 5000), 0, false, true, 0},
		{"R4.3/quota already set by this agent: idempotent", obs(full, true, map[int32]Ownership{1: {ProducerByteRate: 1024, LogDirs: []string{dir}}}, 1024), 0, false, false, 1024},
		{"R4.3/another agent's quota is shared, not an operator's", obs(full, false, map[int32]Ownership{2: {ProducerByteRate: 1024}}, 1024), 0, false, false, 1024},
		{"R3.7/lifted when calm", obs(calm, true, map[int32]Ownership{1: {ProducerByteRate: 1024, LogDirs: []string{dir}}}, 1024), 0, true, false, 0},
		{"R4.3/lifting keeps another agent's claim", obs(calm, true, map[int32]Ownership{1: {ProducerByteRate: 1024, LogDirs: []string{dir}}, 2: {ProducerByteRate: 1024}}, 1024), 0, false, false, 0},
		{"R4.3/an operator changed the quota meanwhile: left alone", obs(calm, true, map[int32]Ownership{1: {ProducerByteRate: 1024, LogDirs: []string{dir}}}, 9999), 0, false, false, 0},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			obs := withEvidence(c.obs)
			p := PlanActions(obs, Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, obs)).Protection
			if p.SetQuota != c.set || p.RemoveQuota != c.remove || p.OperatorQuota != c.operator || p.Ownership.ProducerByteRate != c.claim {
				t.Fatalf("plan set=%d remove=%v operator=%v claim=%d", p.SetQuota, p.RemoveQuota, p.OperatorQuota, p.Ownership.ProducerByteRate)
			}
		})
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
