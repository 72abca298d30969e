package agent

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// sumSeg is a classified segment with distinct .log and disk sizes.
func sumSeg(st State, logBytes, diskBytes, expired int64, age time.Duration) Segment {
	return Segment{State: st, LogBytes: logBytes, DiskBytes: diskBytes, ExpiredBytes: expired, LargestTimestampMs: testNow.Add(-age).UnixMilli()}
}

func TestPartitionSummary(t *testing.T) {
	h := time.Hour
	p := Partition{Topic: "t", Kind: KindLive, PendingDeleteBytes: 7, AppendedBytes: 11, Segments: []Segment{
		sumSeg(StateEligible, 100, 108, 100, 50*h),
		sumSeg(StateEligible, 100, 110, 100, 40*h),
		sumSeg(StateClosed, 100, 104, 0, 30*h),
		sumSeg(StateOpen, 60, 4160, 20, h),
	}}
	want := Summary{
		Partitions:     1,
		Segments:       ByState{Open: 1, Closed: 1, Eligible: 2},
		Bytes:          ByState{Open: 4160, Closed: 104, Eligible: 218},
		Expired:        ByReason{OpenSegment: 20, AwaitingDeletion: 218, PendingDelete: 7},
		OldestEligible: testNow.Add(-50 * h).Local(), // as time.UnixMilli gives it
		AppendedBytes:  11,
	}
	if got := p.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("R1.6/live partition:\n got %+v\nwant %+v", got, want)
	}
	// The figures of a -future directory are its own; its topic gets only
	// its pending-delete bytes (see TestTopicSummaries).
	f := p
	f.Kind = KindFuture
	want.Partitions = 0
	if got := f.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("future partition:\n got %+v\nwant %+v", got, want)
	}
	for _, st := range States() {
		if got := want.Bytes.Of(st); got == 0 {
			t.Errorf("Bytes.Of(%s) = 0", st)
		}
	}
	if want.Bytes.Total() != 4160+104+218 || want.Expired.Total() != 20+218+7 || want.Expired.Of(RetainedPendingDeletion) != 7 {
		t.Errorf("totals: %+v", want)
	}
}

func TestTopicSummaries(t *testing.T) {
	h := time.Hour
	live := func(topic string, part int32, segs ...Segment) Partition {
		return Partition{Topic: topic, Partition: part, Kind: KindLive, Segments: segs}
	}
	a0 := live("a", 0, sumSeg(StateEligible, 100, 104, 100, 9*h), sumSeg(StateOpen, 10, 20, 0, h))
	a0.PendingDeleteBytes = 3
	a1 := live("a", 1, sumSeg(StateEligible, 100, 108, 100, 10*h), sumSeg(StateOpen, 10, 30, 5, h))
	a1future := live("a", 1, sumSeg(StateClosed, 100, 100, 0, 10*h))
	a1future.Kind, a1future.PendingDeleteBytes = KindFuture, 1
	b0 := live("b", 0, sumSeg(StateOpen, 10, 40, 0, h))
	gone := Partition{Topic: "gone", Partition: 2, Kind: KindDeleted, PendingDeleteBytes: 4096}
	meta := live("__cluster_metadata", 0, sumSeg(StateOpen, 10, 4096, 0, h))
	meta.Kind = KindMetadata
	sorted := []*Partition{&meta, &a0, &a1, &a1future, &b0, &gone}
	sortPartitions(sorted)

	wantTopics := []TopicSummary{
		{Topic: "a", Partition: AllPartitions, Summary: Summary{Partitions: 2,
			Segments: ByState{Open: 2, Eligible: 2}, Bytes: ByState{Open: 50, Eligible: 212},
			Expired: ByReason{OpenSegment: 5, AwaitingDeletion: 212, PendingDelete: 4}, OldestEligible: testNow.Add(-10 * h).Local()}},
		{Topic: "b", Partition: AllPartitions, Summary: Summary{Partitions: 1, Segments: ByState{Open: 1}, Bytes: ByState{Open: 40}}},
		{Topic: "gone", Partition: AllPartitions, Summary: Summary{Expired: ByReason{PendingDelete: 4096}}},
	}
	wantParts := []TopicSummary{
		{Topic: "a", Partition: 0, Summary: Summary{Partitions: 1, Segments: ByState{Open: 1, Eligible: 1}, Bytes: ByState{Open: 20, Eligible: 104},
			Expired: ByReason{AwaitingDeletion: 104, PendingDelete: 3}, OldestEligible: testNow.Add(-9 * h).Local()}},
		{Topic: "a", Partition: 1, Summary: Summary{Partitions: 1, Segments: ByState{Open: 1, Eligible: 1}, Bytes: ByState{Open: 30, Eligible: 108},
			Expired: ByReason{OpenSegment: 5, AwaitingDeletion: 108, PendingDelete: 1}, OldestEligible: testNow.Add(-10 * h).Local()}},
		{Topic: "b", Partition: 0, Summary: Summary{Partitions: 1, Segments: ByState{Open: 1}, Bytes: ByState{Open: 40}}},
		{Topic: "gone", Partition: 2, Summary: Summary{Expired: ByReason{PendingDelete: 4096}}},
	}
	for _, c := range []struct {
		name  string
		parts []*Partition
	}{
		{"sorted as scans and snapshots are", sorted},
		{"unsorted", []*Partition{&b0, &gone, &a1, &meta, &a0, &a1future}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ld := LogDir{Path: "/d", Partitions: c.parts}
			if got := ld.TopicSummaries(); !reflect.DeepEqual(got, wantTopics) {
				t.Errorf("R1.4/R1.6 topics:\n got %+v\nwant %+v", got, wantTopics)
			}
			if got := ld.PartitionSummaries(); !reflect.DeepEqual(got, wantParts) {
				t.Errorf("partitions:\n got %+v\nwant %+v", got, wantParts)
			}
		})
	}
	t.Run("allocation: one slice", func(t *testing.T) {
		ld := LogDir{Partitions: sorted}
		if n := testing.AllocsPerRun(10, func() { ld.TopicSummaries() }); n > 3 {
			t.Errorf("%v allocations", n)
		}
	})
}

func TestSnapshotQueries(t *testing.T) {
	own := DefaultTopicConfig()
	own.RetentionMs = 1000
	def := DefaultTopicConfig()
	def.RetentionBytes = 5
	s := &Snapshot{
		Configs:  map[string]TopicConfig{"own": own},
		Defaults: def,
		LogDirs: []LogDir{
			{Path: "/unknown", BrokerID: -1, Partitions: []*Partition{{Topic: "z", Kind: KindLive}, {Topic: "moving", Kind: KindFuture}}},
			{Path: "/b", BrokerID: 3, Partitions: []*Partition{{Topic: "a", Kind: KindLive}, {Topic: "z", Kind: KindLive, Partition: 1},
				{Topic: "gone", Kind: KindDeleted}, {Topic: "__cluster_metadata", Kind: KindMetadata}}},
			{Path: "/c", BrokerID: 4},
		},
	}
	if got := s.TopicConfig("own"); got != own {
		t.Errorf("own config: %+v", got)
	}
	if got := s.TopicConfig("other"); got != def {
		t.Errorf("R1.3/a topic without an entry uses the defaults: %+v", got)
	}
	// Kafka creates these compacted: the same fallback that classified
	// their partitions (ConfigSet.For).
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		want := def
		want.CleanupPolicy = CleanupPolicy{Compact: true}
		if got := s.TopicConfig(topic); got != want || got != (ConfigSet{Topics: s.Configs, Defaults: s.Defaults}).For(topic) {
			t.Errorf("R1.7/%s without an entry: %+v", topic, got)
		}
	}
	if got := s.BrokerID(); got != 3 {
		t.Errorf("R1.5/broker id %d, want 3 (the first known)", got)
	}
	if got := (&Snapshot{LogDirs: []LogDir{{BrokerID: -1}}}).BrokerID(); got != -1 {
		t.Errorf("broker id %d, want -1 (unknown)", got)
	}
	if got := s.LiveTopics(); !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("live topics %v", got)
	}
}

func TestInternalTopics(t *testing.T) {
	kafka := KafkaInternalTopics()
	if !slices.IsSorted(kafka) || len(kafka) != 4 {
		t.Errorf("KafkaInternalTopics %v", kafka)
	}
	for _, n := range kafka {
		if !IsKafkaInternalTopic(n) || !HasInternalPrefix(n) {
			t.Errorf("%s: not internal", n)
		}
	}
	for _, n := range []string{"__kafka_disk_guard_protection", "orders", "_schemas", "__consumer_offsets2"} {
		if IsKafkaInternalTopic(n) {
			t.Errorf("%s: Kafka's own?", n)
		}
	}
	if !HasInternalPrefix("__kafka_disk_guard_protection") || HasInternalPrefix("_schemas") || HasInternalPrefix("orders") {
		t.Error("the __ convention")
	}
}

// R1.7: a tiered partition's segments by tier, in disk bytes like every
// Summary figure, added up with the rest; a topic sums its partitions'.
func TestTieredSummary(t *testing.T) {
	h := time.Hour
	tier := func(s Segment, tr Tier, r Reason) Segment {
		s.Tier, s.Reason = tr, r
		return s
	}
	known := Partition{Topic: "t", Partition: 0, Kind: KindLive, Tiered: true, Remote: &RemoteOffsets{HighestUploaded: 199}, Segments: []Segment{
		tier(sumSeg(StateEligible, 100, 108, 100, 50*h), TierUploaded, ReasonLocalRetentionTime),
		tier(sumSeg(StateEligible, 100, 110, 100, 40*h), TierUploaded, ReasonLogStartOffset),
		tier(sumSeg(StateClosed, 100, 104, 0, 30*h), TierUploaded, ReasonNone),
		tier(sumSeg(StateClosed, 100, 120, 0, 20*h), TierLocalOnly, ReasonNone),
		tier(sumSeg(StateOpen, 60, 4160, 0, h), TierLocalOnly, ReasonNone),
	}}
	unknown := Partition{Topic: "t", Partition: 1, Kind: KindLive, Tiered: true, Remote: &RemoteOffsets{Err: "NOT_LEADER_OR_FOLLOWER"}, Segments: []Segment{
		tier(sumSeg(StateClosed, 100, 100, 0, 30*h), TierUnknown, ReasonNone),
		tier(sumSeg(StateOpen, 10, 20, 0, h), TierUnknown, ReasonNone),
	}}
	fetching := Partition{Topic: "t", Partition: 2, Kind: KindLive, Tiered: true} // not fetched yet, no segment
	local := Partition{Topic: "u", Kind: KindLive, Segments: []Segment{sumSeg(StateEligible, 100, 104, 100, 50*h), sumSeg(StateOpen, 1, 8, 0, h)}}

	want := TieredSummary{Partitions: 1, Segments: ByTier{LocalOnly: 2, Uploaded: 3}, Bytes: ByTier{LocalOnly: 4280, Uploaded: 322},
		EligibleLocally: 108}
	got := known.Summary()
	if !reflect.DeepEqual(got.Tiered, want) {
		t.Errorf("R1.7/known offsets:\n got %+v\nwant %+v", got.Tiered, want)
	}
	if got.Tiered.Segments.Total() != got.Segments.Total() || got.Tiered.Bytes.Total() != got.Bytes.Total() || got.Tiered.EligibleLocally > got.Bytes.Eligible {
		t.Errorf("R1.7/tiers are the same segments again: %+v", got)
	}
	if got := local.Summary().Tiered; got != (TieredSummary{}) {
		t.Errorf("a local topic has no tiered figures: %+v", got)
	}
	ld := LogDir{Partitions: []*Partition{&known, &unknown, &fetching, &local}}
	topics := ld.TopicSummaries()
	wantTopic := TieredSummary{Partitions: 3, Segments: ByTier{LocalOnly: 2, Uploaded: 3, Unknown: 2}, Bytes: ByTier{LocalOnly: 4280, Uploaded: 322, Unknown: 120},
		EligibleLocally: 108, OffsetsUnknown: 2}
	if len(topics) != 2 || !reflect.DeepEqual(topics[0].Tiered, wantTopic) || topics[1].Tiered != (TieredSummary{}) {
		t.Errorf("R1.7/topic:\n got %+v\nwant %+v", topics, wantTopic)
	}
	var sum Summary
	for _, p := range ld.PartitionSummaries() {
		sum.Add(p.Summary)
	}
	if !reflect.DeepEqual(sum.Tiered, wantTopic) {
		t.Errorf("R1.7/Add:\n got %+v\nwant %+v", sum.Tiered, wantTopic)
	}
	for _, tr := range Tiers() {
		if wantTopic.Bytes.Of(tr) == 0 {
			t.Errorf("Bytes.Of(%s) = 0", tr)
		}
	}
	if wantTopic.Bytes.Of(TierNone) != 0 {
		t.Error("Bytes.Of(TierNone)")
	}
}
