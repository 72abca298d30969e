package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
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
		LogDirs: []LogDir{{Partitions: []Partition{
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
