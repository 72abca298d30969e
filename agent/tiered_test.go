package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type fakeRemote struct {
	err  error
	resp map[TopicPartition]RemoteOffsets
}

func (f *fakeRemote) FetchRemoteOffsets(_ context.Context, _ []TopicPartition) (map[TopicPartition]RemoteOffsets, error) {
	return f.resp, f.err
}

// R1.7/R6: a tiered partition whose offsets cannot be read is published
// with its error (nothing in it is eligible) and logged once.
func TestTieredRefresherBadInput(t *testing.T) {
	a, b := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	f := &fakeRemote{resp: map[TopicPartition]RemoteOffsets{a: {HighestUploaded: 9, LocalLogStart: 5}, b: {Err: "NOT_LEADER_OR_FOLLOWER"}}}
	logger, logs := testLogger(t)
	r, err := NewTieredRefresher(TieredRefresherConfig{}, logger, f, func() []TopicPartition { return []TopicPartition{a, b} })
	if err != nil {
		t.Fatal(err)
	}
	if m, at := r.Current(); m != nil || !at.IsZero() {
		t.Fatalf("before the first fetch: %v %v", m, at)
	}
	for range 2 {
		if err := r.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	m, at := r.Current()
	if at.IsZero() || m[a].HighestUploaded != 9 {
		t.Errorf("offsets %v at %v", m, at)
	}
	if ro := m[b]; ro.Known() {
		t.Errorf("R6: unreadable partition published as known: %+v", ro)
	}
	if n := strings.Count(logs.String(), "tiered partition offsets unreadable"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs)
	}
	// The whole request fails: every partition is unknown, none stale.
	f.err = errors.New("broker unreachable")
	if err := r.Refresh(t.Context()); err == nil {
		t.Fatal("want an error")
	}
	m, _ = r.Current()
	for _, tp := range []TopicPartition{a, b} {
		if p := m[tp]; (&p).Known() {
			t.Errorf("R6: %v kept stale offsets after a failed fetch: %+v", tp, p)
		}
	}
	f.err = nil
	f.resp[b] = RemoteOffsets{HighestUploaded: 3}
	if err := r.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "readable again") {
		t.Errorf("recovery not logged:\n%s", logs)
	}
}

func TestTieredPartitions(t *testing.T) {
	tc := DefaultTopicConfig()
	tc.RemoteStorage = true
	s := &Snapshot{Defaults: DefaultTopicConfig(), Configs: map[string]TopicConfig{"tiered": tc},
		LogDirs: []LogDir{{Partitions: []*Partition{
			{Topic: "local", Partition: 0, Kind: KindLive},
			{Topic: "tiered", Partition: 0, Kind: KindLive},
			{Topic: "tiered", Partition: 1, Kind: KindFuture},
		}}}}
	got := s.TieredPartitions()
	if len(got) != 1 || got[0] != (TopicPartition{"tiered", 0}) {
		t.Errorf("got %v", got)
	}
	if got := (*Snapshot)(nil).TieredPartitions(); got != nil {
		t.Errorf("nil snapshot: %v", got)
	}
}

// R1.7: a follower deletes by its own upload boundary, refreshed by its
// follower task every 30 s: for a partition the local broker does not
// lead, the boundary the leader reported at least FollowerSettle ago is
// published; for one it leads, the latest.
func TestTieredRefresherFollowerBoundary(t *testing.T) {
	led, followed := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	f := &fakeRemote{}
	answer := func(hi int64) {
		f.resp = map[TopicPartition]RemoteOffsets{
			led:      {HighestUploaded: hi, Leader: 1, LeaderKnown: true},
			followed: {HighestUploaded: hi, Leader: 2, LeaderKnown: true},
		}
	}
	logger, _ := testLogger(t)
	r, err := NewTieredRefresher(TieredRefresherConfig{}, logger, f, func() []TopicPartition { return []TopicPartition{led, followed} })
	if err != nil {
		t.Fatal(err)
	}
	r.WithLocalBroker(func() int32 { return 1 })
	now := testNow
	r.now = func() time.Time { return now }
	steps := []struct {
		after         time.Duration
		hi            int64
		led, followed int64
	}{
		{0, 10, 10, -1},                // nothing settled yet
		{20 * time.Second, 20, 20, -1}, // 20 s: still not
		{15 * time.Second, 30, 30, 10}, // 35 s: the first boundary has settled
		{30 * time.Second, 40, 40, 30}, // 65 s: 30 (reported at 35 s) has
		{time.Second, 50, 50, 30},      // 66 s
	}
	for i, s := range steps {
		now = now.Add(s.after)
		answer(s.hi)
		if err := r.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		m, _ := r.Current()
		if m[led].HighestUploaded != s.led || m[followed].HighestUploaded != s.followed || m[followed].LeaderHighestUploaded != s.hi {
			t.Errorf("R1.7 step %d: led %d, followed %d (leader's %d), want %d, %d", i, m[led].HighestUploaded,
				m[followed].HighestUploaded, m[followed].LeaderHighestUploaded, s.led, s.followed)
		}
	}
	// Unknown local broker: the leader's boundary, as before.
	r.WithLocalBroker(func() int32 { return -1 })
	answer(60)
	if err := r.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m, _ := r.Current(); m[followed].HighestUploaded != 60 {
		t.Errorf("R1.7 unknown local broker: %d, want the leader's 60", m[followed].HighestUploaded)
	}
}
