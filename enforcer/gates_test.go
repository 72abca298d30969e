package enforcer

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// gatePolicy is the cloud profile with the default gates.
func gatePolicy() Policy {
	cfg := Config{}.WithDefaults()
	return Policy{Profile: CloudProfile(), HysteresisPoints: 5, Gates: Gates{ConfigMaxAge: cfg.Evidence.ConfigMaxAge,
		FutureTolerance: cfg.Evidence.FutureTolerance, ProtectFeature: rights.ProtectACL, Purge: cfg.Purge}}
}

// planned plans a pass and sums a figure of its deletions.
func planned(p Policy, o Observed, figure func(Deletion) int64) ([]DirGoal, int64) {
	goals := Desired(p, o)
	var sum int64
	for _, d := range PlanActions(o, goals).Deletions {
		sum += figure(d)
	}
	return goals, sum
}

// sized is a segment of the given disk bytes.
func sized(base int64, ts int, st agent.State, bytes int64) agent.Segment {
	s := seg(base, ts, st)
	s.DiskBytes, s.LogBytes = bytes, bytes
	if st == agent.StateEligible {
		s.ExpiredBytes = bytes
	}
	return s
}

// R7.1: a log dir whose identity is not confirmed is never acted on: no
// deletion, no protection switched on (protection already on is kept and
// lifted as usual); one found by a glob that belongs to another cluster
// or node is observed only, without a hold; a configured path naming
// another cluster is a hold.
func TestR7_1IdentityGate(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	full := func() *agent.Snapshot {
		return snap(950, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)))
	}
	id := func(r agent.IdentityReason) map[string]agent.LogDirIdentity {
		return map[string]agent.LogDirIdentity{dir: {Path: dir, Reason: r}}
	}
	cases := []struct {
		rule      string
		identity  map[string]agent.LogDirIdentity
		pattern   string
		was       bool
		usage     uint64
		protect   bool
		blocked   []BlockReason
		foreign   bool
		deletions int
	}{
		{"R7.1/confirmed: purge and protect", id(agent.IdentityConfirmed), "", false, 950, true, nil, false, 1},
		{"R7.1/no evidence read yet: nothing", nil, "", false, 950, false, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
		{"R7.1/not confirmed by the broker: nothing", id(agent.IdentityNotConfirmed), "", false, 950, false, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
		{"R7.1/no meta.properties: nothing", id(agent.IdentityNoMeta), "/pods/*/data", false, 950, false, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
		{"R7.1/a configured path of another cluster: held", id(agent.IdentityOtherCluster), "", false, 950, false, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
		{"R7.1/a glob's match of another cluster: observed only", id(agent.IdentityOtherCluster), "/pods/*/data", false, 950, false, nil, true, 0},
		{"R7.1/a glob's match of another node: observed only", id(agent.IdentityOtherNode), "/pods/*/data", true, 950, false, nil, true, 0},
		{"R7.1/protection already on stays while not confirmed", id(agent.IdentityNotConfirmed), "", true, 950, true, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
		{"R7.1/and is lifted as usual", id(agent.IdentityNotConfirmed), "", true, 800, false, []BlockReason{BlockIdentityUnconfirmed}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := full()
			s.LogDirs[0].Usage.UsedBytes = c.usage
			s.LogDirs[0].Pattern = c.pattern
			o := withEvidence(Observed{Now: t0, Snapshot: s, Identity: c.identity, Protected: map[string]bool{dir: c.was}})
			if c.identity == nil {
				o.Identity = map[string]agent.LogDirIdentity{}
			}
			o.Offsets = brokerOffsets(s)
			p := Policy{Profile: CloudProfile(), HysteresisPoints: 5}
			g := Desired(p, o)[0]
			if g.Protect != c.protect || !slices.Equal(g.Blocked, c.blocked) || g.Foreign != c.foreign {
				t.Fatalf("goal protect=%v blocked=%v foreign=%v, want %v %v %v", g.Protect, g.Blocked, g.Foreign, c.protect, c.blocked, c.foreign)
			}
			if n := len(PlanActions(o, Desired(p, o)).Deletions); n != c.deletions {
				t.Fatalf("%d deletions, want %d", n, c.deletions)
			}
			if dirs := p.protectDirs(o); dirs[dir] != c.protect {
				t.Errorf("protectDirs %v, want %v", dirs, c.protect)
			}
		})
	}
	t.Run("R7.1/offline: the gate does not apply", func(t *testing.T) {
		o := Observed{Now: t0, Snapshot: full(), Offline: true}
		if g := Desired(Policy{Profile: CloudProfile()}, o)[0]; len(g.Blocked) != 0 || !g.Protect {
			t.Fatalf("offline goal %+v", g)
		}
	})
}

// R7.2: a topic's eligibility drives deletion only with its own configs
// read from the cluster within the bound and a last lookup that did not
// fail; the hold names the cause, topic by topic.
func TestR7_2ConfigGate(t *testing.T) {
	E, O := agent.StateEligible, agent.StateOpen
	maxAge := 10 * time.Minute
	s := snap(800, 1000,
		part("fresh", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("edge", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("stale", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("failed", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("unknown-to-cluster", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("offline", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("never", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)),
		part("__consumer_offsets", 0, 0, 20, seg(0, 1, E), seg(10, 2, O)))
	now := t0.Add(time.Hour)
	s.ConfigFetched["fresh"] = now.Add(-time.Minute)
	s.ConfigFetched["edge"] = now.Add(-maxAge)                     // exactly the bound: fresh
	s.ConfigFetched["stale"] = now.Add(-maxAge - time.Millisecond) // 1 ms older: stale
	s.ConfigFetched["failed"] = now.Add(-time.Minute)              // fetched, but the last lookup failed
	s.ConfigErrors = map[string]error{"failed": errors.New("TOPIC_AUTHORIZATION_FAILED"), "unknown-to-cluster": agent.ErrTopicUnknown}
	delete(s.ConfigFetched, "unknown-to-cluster")
	delete(s.ConfigFetched, "offline") // from the offline configs file
	delete(s.ConfigFetched, "never")
	delete(s.Configs, "never") // defaults assumed
	o := withEvidence(Observed{Now: now, Snapshot: s})
	p := Policy{Profile: CloudProfile(), Gates: Gates{ConfigMaxAge: maxAge}}
	g := Desired(p, o)[0]
	want := map[string][]BlockReason{
		"stale":              {BlockConfigStale},
		"failed":             {BlockConfigFetchFailed},
		"unknown-to-cluster": {BlockConfigFetchFailed},
		"offline":            {BlockConfigOffline},
		"never":              {BlockConfigUnknown},
	}
	if !reflect.DeepEqual(g.HeldTopics, want) {
		t.Fatalf("held topics\n got %v\nwant %v", g.HeldTopics, want)
	}
	o.Offsets = brokerOffsets(s)
	plan := PlanActions(o, []DirGoal{g})
	var deleted []string
	for _, d := range plan.Deletions {
		deleted = append(deleted, d.Topic)
	}
	slices.Sort(deleted)
	// 800 of 1000 in the periodic band: 51 bytes to free, oldest first;
	// the held topics give nothing, so the next oldest (equal ages, by
	// name) is taken.
	if !slices.Equal(deleted, []string{"edge"}) {
		t.Errorf("deleted %v, want [edge]", deleted)
	}
	if len(plan.HeldTopics) != len(want) {
		t.Errorf("plan held topics %+v", plan.HeldTopics)
	}
	// Offsets are read only for topics that may be deleted.
	for _, tp := range p.freeingPartitions(o) {
		if want[tp.Topic] != nil {
			t.Errorf("offsets read for held topic %s", tp.Topic)
		}
	}
}

// Rights: a topic the principal may not delete records of is held; without
// the rights write protection needs, nothing unexpired is purged (while
// eligible segments still go); a profile that never protects does not
// wait for protection.
func TestRightsGate(t *testing.T) {
	E, C, O := agent.StateEligible, agent.StateClosed, agent.StateOpen
	s := snap(950, 1000,
		part("a", 0, 0, 40, seg(0, 1, E), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)),
		part("b", 0, 0, 40, seg(0, 5, C), seg(10, 6, C), seg(20, 7, C), seg(30, 8, O)))
	noDelete := rights.Report{Features: rights.Features(), Gaps: []rights.Gap{{Need: rights.Need{Feature: rights.DeleteRecords, Scope: rights.ScopeTopics, Operation: rights.Delete}, Topics: []string{"b"}}}}
	noAlter := rights.Report{Features: rights.Features(), Gaps: []rights.Gap{{Need: rights.Need{Feature: rights.ProtectACL, Scope: rights.ScopeCluster, Operation: rights.Alter}}}}
	for _, c := range []struct {
		rule    string
		report  *rights.Report
		profile Profile
		want    []del
		held    map[string][]BlockReason
		reasons []BlockReason
	}{
		{"all rights: the purge takes the oldest", &rights.Report{Features: rights.Features()}, CloudProfile(),
			[]del{{"a", 0, 20, 2, 200, 100}}, map[string][]BlockReason{}, nil},
		{"no DELETE on b: b held", &noDelete, CloudProfile(),
			[]del{{"a", 0, 20, 2, 200, 100}}, map[string][]BlockReason{"b": {BlockMissingRights}}, nil},
		{"protection impossible: only the eligible segment", &noAlter, CloudProfile(),
			[]del{{"a", 0, 10, 1, 100, 0}}, map[string][]BlockReason{}, []BlockReason{BlockProtectionUnavailable}},
		{"rights not known yet: only the eligible segment", nil, CloudProfile(),
			[]del{{"a", 0, 10, 1, 100, 0}}, map[string][]BlockReason{}, []BlockReason{BlockProtectionUnavailable}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
			o.Rights = c.report
			p := Policy{Profile: c.profile, Gates: Gates{ProtectFeature: protectFeature(c.profile, StrategyACL)}}
			goals := Desired(p, o)
			if !reflect.DeepEqual(goals[0].HeldTopics, c.held) || !slices.Equal(goals[0].Purge.Reasons, c.reasons) {
				t.Fatalf("held %v reasons %v, want %v %v", goals[0].HeldTopics, goals[0].Purge.Reasons, c.held, c.reasons)
			}
			if got := dels(PlanActions(o, goals).Deletions); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("deletions %+v, want %+v", got, c.want)
			}
		})
	}
	if f := protectFeature(ServerlessProfile(), StrategyACL); f != "" {
		t.Errorf("serverless needs %q to protect", f)
	}
	seed000, _ := ProfileFor(Config{Profile: ProfileCustom, Bands: Seed000Bands()})
	if f := protectFeature(seed000, StrategyACL); f != "" {
		t.Errorf("seed 000 (no protect band) waits for %q", f)
	}
	if got := enforcerFeatures(LocalProfile(), StrategyQuota, ReliefConfig{}, []rights.Feature{rights.Admission}); !slices.Equal(got,
		[]rights.Feature{rights.Observe, rights.DeleteRecords, rights.ProtectQuota, rights.Tiered, rights.Cordon, rights.Move, rights.Admission}) {
		t.Errorf("local profile, quota strategy: features %v", got)
	}
	off := false
	if got := enforcerFeatures(LocalProfile(), StrategyACL, ReliefConfig{Cordon: CordonConfig{Enabled: &off}, Move: MoveConfig{Enabled: &off}}, nil); !slices.Equal(got,
		[]rights.Feature{rights.Observe, rights.DeleteRecords, rights.ProtectACL, rights.Tiered}) {
		t.Errorf("local profile, relief off: features %v", got)
	}
	// The reassign rung's rights are checked only when it is switched on.
	if got := enforcerFeatures(LocalProfile(), StrategyACL, ReliefConfig{Reassign: true}, []rights.Feature{rights.Admission}); !slices.Equal(got,
		[]rights.Feature{rights.Observe, rights.DeleteRecords, rights.ProtectACL, rights.Tiered, rights.Cordon, rights.Move, rights.Reassign, rights.Admission}) {
		t.Errorf("local profile, reassign on: features %v", got)
	}
}

// R7.5: a forward jump of the wall clock holds back deletions by retention
// time (not by size, not purges); data stamped beyond the tolerance in
// the future holds back its topic's; while the clock is in doubt, bytes
// eligible by time count as unexpired against the purge limits.
func TestR7_5ClockGate(t *testing.T) {
	E, O := agent.StateEligible, agent.StateOpen
	sizeSeg := func(base int64, ts int) agent.Segment {
		s := seg(base, ts, E)
		s.Reason = agent.ReasonRetentionSize
		return s
	}
	future := seg(20, 24*60, O) // stamped a day after t0
	// 8400 of 10000: the periodic band, 901 bytes to free: every eligible
	// segment that may go.
	s := snap(8400, 10000,
		part("time", 0, 0, 30, seg(0, 1, E), seg(10, 2, E), seg(20, 3, O)),
		part("size", 0, 0, 30, sizeSeg(0, 4), sizeSeg(10, 5), seg(20, 6, O)),
		part("future", 0, 0, 30, seg(0, 0, E), seg(10, 1, E), future))
	p := Policy{Profile: CloudProfile(), Gates: Gates{FutureTolerance: time.Hour}}
	plan := func(o Observed) []del {
		o = withEvidence(o)
		o.Offsets = brokerOffsets(s)
		return dels(PlanActions(o, Desired(p, o)).Deletions)
	}
	if got := plan(Observed{Now: t0.Add(2 * time.Hour), Snapshot: s}); !reflect.DeepEqual(got, []del{
		{"size", 0, 20, 2, 200, 0}, {"time", 0, 20, 2, 200, 0}}) {
		t.Errorf("R7.5/future topic held, the others deleted: %+v", got)
	}
	if got := plan(Observed{Now: t0.Add(2 * time.Hour), Snapshot: s, ClockJump: 3 * time.Hour}); !reflect.DeepEqual(got, []del{
		{"size", 0, 20, 2, 200, 0}}) {
		t.Errorf("R7.5/clock jump: only deletions by size, got %+v", got)
	}
	g := Desired(p, withEvidence(Observed{Now: t0.Add(2 * time.Hour), Snapshot: s, ClockJump: time.Hour}))[0]
	if !slices.Equal(g.TimeBlocked, []BlockReason{BlockClockJump}) || !reflect.DeepEqual(g.TimeHeldTopics,
		map[string][]BlockReason{"future": {BlockFutureTimestamps}}) {
		t.Errorf("R7.5/holds %v %v", g.TimeBlocked, g.TimeHeldTopics)
	}
	// Data a day ahead is within a two-day tolerance.
	p.Gates.FutureTolerance = 48 * time.Hour
	if g := Desired(p, withEvidence(Observed{Now: t0, Snapshot: s}))[0]; g.TimeHeldTopics != nil {
		t.Errorf("R7.5/within tolerance: %v", g.TimeHeldTopics)
	}

	// Purges are by age, not by expiry: the jump does not hold them, but
	// the segments eligible by time count as unexpired.
	s2 := snap(950, 1000, part("time", 0, 0, 40, seg(0, 1, E), seg(10, 2, E), seg(20, 3, agent.StateClosed), seg(30, 4, O)))
	o := withEvidence(Observed{Now: t0, Snapshot: s2, Offsets: brokerOffsets(s2), ClockJump: time.Hour})
	if got := dels(PlanActions(o, Desired(Policy{Profile: CloudProfile()}, o)).Deletions); !reflect.DeepEqual(got, []del{{"time", 0, 20, 2, 200, 200}}) {
		t.Errorf("R7.5/purge under a clock jump: %+v", got)
	}
}

// R7.3 caps: unexpired bytes per pass, per hour and per day, each a share
// of the log dir's capacity; the segment that reaches a cap is the last.
func TestR7_3PurgeCaps(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	var segs []agent.Segment
	for i := range 20 {
		segs = append(segs, sized(int64(i)*10, i, C, 100))
	}
	segs = append(segs, sized(200, 20, O, 100))
	s := snap(9500, 10000, part("a", 0, 0, 210, segs...))
	s.LogDirs[0].Usage.UsedBytes = 9500   // 95%: purge to < 85%, 1001 bytes
	base := Config{}.WithDefaults().Purge // 2% / 5% / 10% of 10000: 200 / 500 / 1000
	base.OtherBytesPercent = 100
	for _, c := range []struct {
		rule    string
		purged  Purged
		want    int64 // unexpired bytes planned
		reasons []BlockReason
	}{
		{"R7.3/per pass: 200 bytes", Purged{}, 200, nil},
		{"R7.3/an hour's cap nearly spent: the segment that reaches it is the last", Purged{Hour: 450, Day: 450}, 100, nil},
		{"R7.3/the hour's cap spent", Purged{Hour: 500, Day: 500}, 0, []BlockReason{BlockPurgeCap}},
		{"R7.3/the day's cap spent", Purged{Hour: 0, Day: 1000}, 0, []BlockReason{BlockPurgeCap}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s), Purged: map[string]Purged{dir: c.purged}})
			goals, got := planned(Policy{Profile: CloudProfile(), Gates: Gates{Purge: base}}, o, func(d Deletion) int64 { return d.UnexpiredBytes })
			if got != c.want || !slices.Equal(goals[0].Purge.Reasons, c.reasons) {
				t.Fatalf("unexpired %d reasons %v, want %d %v", got, goals[0].Purge.Reasons, c.want, c.reasons)
			}
		})
	}
}

// R7.3 floor: a purge never takes a partition's newest closed segments
// (floorSegments) nor the newest segments holding floorPercent of its
// bytes, open segment counted; eligible segments are not the floor's.
func TestR7_3PurgeFloor(t *testing.T) {
	C, E, O := agent.StateClosed, agent.StateEligible, agent.StateOpen
	cases := []struct {
		rule  string
		segs  []agent.Segment
		limit PurgeLimit
		want  int // floor index
	}{
		{"one closed segment kept", []agent.Segment{seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)},
			PurgeLimit{FloorSegments: 1}, 2},
		{"two kept", []agent.Segment{seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)},
			PurgeLimit{FloorSegments: 2}, 1},
		{"more than there are", []agent.Segment{seg(0, 1, C), seg(10, 2, O)}, PurgeLimit{FloorSegments: 3}, 0},
		{"10% of 10 x 100 bytes: the open segment is enough", segRun(10, 10), PurgeLimit{FloorSegments: 1, FloorPercent: 10}, 8},
		{"35% of 1000 bytes: 4 segments", segRun(10, 10), PurgeLimit{FloorSegments: 1, FloorPercent: 35}, 6},
		{"no floor", segRun(10, 10), PurgeLimit{}, 9},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			p := part("a", 0, 0, 100, c.segs...)
			if got := floorIndex(&p, c.limit); got != c.want {
				t.Fatalf("floor index %d, want %d", got, c.want)
			}
		})
	}
	// Through the plan: with a floor of one segment, a purge that needs
	// everything takes all but the newest closed segment; an eligible
	// newest segment goes all the same.
	s := snap(999, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, C), seg(20, 3, C), seg(30, 4, O)),
		part("b", 0, 0, 30, seg(0, 1, E), seg(10, 2, E), seg(20, 3, O)))
	o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
	target := 10.0 // purge down to 10%: everything that may go
	lowTarget, err := ProfileFor(Config{Profile: ProfileCustom, Bands: []BandConfig{{From: 0, Action: "none"}, {From: 50, Action: "purge", Target: &target}}})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Profile: lowTarget, Gates: Gates{Purge: PurgeConfig{FloorSegments: 1}}}
	if got := dels(PlanActions(o, Desired(p, o)).Deletions); !reflect.DeepEqual(got, []del{{"a", 0, 20, 2, 200, 200}, {"b", 0, 20, 2, 200, 0}}) {
		t.Errorf("R7.3/plan with a floor: %+v", got)
	}
}

// R7.3 ownership of usage, the worked example of docs/operating.md scaled
// from GiB to bytes: capacity 1000, purge band target 85% (850), allowance
// 5% (50). Unexpired data is purged only for the part of the excess that
// live partitions explain.
func TestR7_3OwnershipOfUsage(t *testing.T) {
	C, O := agent.StateClosed, agent.StateOpen
	mk := func(used, live int64) *agent.Snapshot {
		// live bytes in 10-byte segments of one partition, the newest open.
		var segs []agent.Segment
		n := live / 10
		for i := range n {
			st := C
			if i == n-1 {
				st = O
			}
			segs = append(segs, sized(i*10, int(i), st, 10))
		}
		s := snap(uint64(used), 1000, part("a", 0, 0, n*10, segs...))
		return s
	}
	p := Policy{Profile: CloudProfile(), Gates: Gates{Purge: PurgeConfig{OtherBytesPercent: 5}}}
	for _, c := range []struct {
		rule       string
		used, live int64
		purged     int64
		reasons    []BlockReason
	}{
		// 880 used, 760 live, 120 other (a 100 heap dump): 70 beyond the
		// allowance explain all 30 over the target: no purge.
		{"R7.3/a heap dump explains the excess: no purge", 880, 760, 0, []BlockReason{BlockUsageNotKafka}},
		// 880 used, 830 live, 50 other: all within the allowance.
		{"R7.3/Kafka's data explains it: purge 31", 880, 830, 40, nil},
		// 900 used (protect band, purging to 85%), 830 live, 70 other: 20
		// beyond the allowance; 51 to free, 31 of them Kafka's.
		{"R7.3/partly: purge to the target plus the other bytes' excess", 900, 830, 40, []BlockReason{BlockUsageNotKafka}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			s := mk(c.used, c.live)
			goals, got := planned(p, withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)}), func(d Deletion) int64 { return d.Bytes })
			if got != c.purged || !slices.Equal(goals[0].Purge.Reasons, c.reasons) {
				t.Fatalf("purged %d reasons %v, want %d %v", got, goals[0].Purge.Reasons, c.purged, c.reasons)
			}
		})
	}
}

// otherBytes: a log dir whose usage is its filesystem's counts what its
// filesystem's live partitions and pending deletes do not explain, every
// log dir on that filesystem together; a configured capacity counts the
// log dir's own bytes.
func TestOtherBytes(t *testing.T) {
	fs := agent.Filesystem{Known: true, Device: 7, TotalBytes: 1000, UsedBytes: 900}
	live := func(topic string, disk, pending int64) agent.Partition {
		return agent.Partition{Topic: topic, Kind: agent.KindLive, DiskBytes: disk, PendingDeleteBytes: pending}
	}
	s := &agent.Snapshot{LogDirs: []agent.LogDir{
		{Path: "/a", Filesystem: fs, Usage: agent.Usage{CapacityBytes: 1000, UsedBytes: 900, Basis: agent.CapacityFilesystem},
			Partitions: []*agent.Partition{new(live("x", 300, 20)), {Topic: "y", Kind: agent.KindFuture, DiskBytes: 50}}, DiskBytes: 350, PendingDeleteBytes: 20},
		{Path: "/b", Filesystem: fs, Usage: agent.Usage{CapacityBytes: 1000, UsedBytes: 900, Basis: agent.CapacityFilesystem},
			Partitions: []*agent.Partition{new(live("z", 200, 0))}, DiskBytes: 200},
		{Path: "/c", Filesystem: agent.Filesystem{Known: true, Device: 8, TotalBytes: 1000, UsedBytes: 600},
			Usage:      agent.Usage{CapacityBytes: 500, UsedBytes: 400, Basis: agent.CapacityConfigured},
			Partitions: []*agent.Partition{new(live("w", 350, 10))}, DiskBytes: 400, PendingDeleteBytes: 10},
	}}
	got := otherBytes(s)
	// /a and /b: 900 used - 480 live (280 + 200) - 20 pending = 400 (the
	// -future replica, other files, everything outside the log dirs).
	// /c: 400 under the log dir - 340 live - 10 pending = 50.
	if want := map[string]int64{"/a": 400, "/b": 400, "/c": 50}; !reflect.DeepEqual(got, want) {
		t.Fatalf("other bytes %v, want %v", got, want)
	}
}
