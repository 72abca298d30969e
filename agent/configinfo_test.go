package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestConfigSetInfo(t *testing.T) {
	at := testNow.Add(-time.Minute)
	own := DefaultTopicConfig()
	own.RetentionMs = -1
	cs := ConfigSet{
		Defaults: DefaultTopicConfig(),
		Topics:   map[string]TopicConfig{"audit": own, "filed": own, "stale": own},
		Fetched:  map[string]time.Time{"audit": at, "stale": at.Add(-time.Hour)},
		Errors:   map[string]error{"stale": errors.New("timeout"), "new": ErrTopicUnknown},
	}
	tests := []struct {
		topic  string
		origin ConfigOrigin
		fresh  bool
		cfg    TopicConfig
	}{
		{"audit", ConfigFromCluster, true, own},
		{"filed", ConfigFromFile, false, own},
		{"stale", ConfigFromCluster, false, own}, // its last lookup failed
		{"new", ConfigAssumed, false, DefaultTopicConfig()},
		{"never", ConfigAssumed, false, DefaultTopicConfig()},
	}
	for _, tt := range tests {
		i := cs.Info(tt.topic)
		if i.Origin != tt.origin || i.Config != tt.cfg || i.FreshSince(at.Add(-time.Second)) != tt.fresh {
			t.Errorf("%s: %+v (fresh %v), want origin %s fresh %v", tt.topic, i, i.FreshSince(at.Add(-time.Second)), tt.origin, tt.fresh)
		}
	}
	// R7.2 boundary: fetched exactly at the bound is fresh, 1 ms before is not.
	if i := cs.Info("audit"); !i.FreshSince(at) || i.FreshSince(at.Add(time.Millisecond)) {
		t.Errorf("boundary: %+v", i)
	}
	if !errors.Is(cs.Info("new").Err, ErrTopicUnknown) {
		t.Errorf("new: %+v", cs.Info("new"))
	}
	snap := BuildSnapshot(testNow, nil, cs, Health{})
	if got := snap.ConfigInfo("stale"); got.Origin != ConfigFromCluster || got.Err == nil || !got.Fetched.Equal(at.Add(-time.Hour)) {
		t.Errorf("snapshot: %+v", got)
	}
}

func TestSnapshotConfigStatus(t *testing.T) {
	at := testNow.Add(-time.Minute)
	live := func(topic string, p int32) Partition { return Partition{Topic: topic, Partition: p, Kind: KindLive} }
	snap := BuildSnapshot(testNow, []LogDir{
		{Path: "/a", Partitions: []*Partition{new(live("audit", 0)), new(live("audit", 1)), new(live("filed", 0)), new(live("new", 0)),
			{Topic: "gone", Kind: KindDeleted}, new(live("stale", 0))}},
		{Path: "/b", Partitions: []*Partition{new(live("audit", 2))}},
		{Path: "/c"},
	}, ConfigSet{
		Defaults: DefaultTopicConfig(),
		Topics:   map[string]TopicConfig{"audit": DefaultTopicConfig(), "filed": DefaultTopicConfig(), "stale": DefaultTopicConfig()},
		Fetched:  map[string]time.Time{"audit": at, "stale": at.Add(-time.Hour)},
		Errors:   map[string]error{"stale": errors.New("timeout")},
	}, Health{})
	got := snap.ConfigStatus()
	want := []LogDirConfigs{
		{LogDir: "/a", Topics: 4, OldestFetch: at.Add(-time.Hour), Without: map[string]int{ConfigMissingError: 1, ConfigMissingOffline: 1, ConfigMissingNone: 1}},
		{LogDir: "/b", Topics: 1, OldestFetch: at, Without: map[string]int{}},
		{LogDir: "/c", Without: map[string]int{}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestMergeConfigs(t *testing.T) {
	t0, t1 := testNow.Add(-time.Hour), testNow
	c := func(ms int64) TopicConfig { tc := DefaultTopicConfig(); tc.RetentionMs = ms; return tc }
	prev := ConfigSet{
		Defaults: DefaultTopicConfig(), Time: t0,
		Topics:  map[string]TopicConfig{"a": c(1), "b": c(2), "gone": c(3), "filed": c(4)},
		Fetched: map[string]time.Time{"a": t0, "b": t0, "gone": t0},
		Errors:  map[string]error{"gone": errors.New("old")},
	}
	brokerDefaults := c(99)
	got := ConfigSet{Topics: map[string]TopicConfig{"a": c(10)}, Fetched: map[string]time.Time{"a": t1},
		Errors: map[string]error{"b": errors.New("denied")}, Defaults: brokerDefaults, DefaultsFetched: t1}

	t.Run("R7.2/partial: new topics only", func(t *testing.T) {
		next := mergeConfigs(prev, configFetch{topics: []string{"a", "b", "c"}, got: got, err: errors.New("1 failed")}, t1)
		if next.Topics["a"] != c(10) || !next.Fetched["a"].Equal(t1) || next.Errors["a"] != nil {
			t.Errorf("a: %+v", next.Info("a"))
		}
		if next.Topics["b"] != c(2) || !next.Fetched["b"].Equal(t0) || next.Errors["b"] == nil || next.Errors["b"].Error() != "denied" {
			t.Errorf("b (failed: keeps its old config and fetch time): %+v", next.Info("b"))
		}
		if _, ok := next.Topics["c"]; ok || next.Errors["c"] == nil || next.Errors["c"].Error() != "1 failed" {
			t.Errorf("c (not answered: the fetch's error): %+v", next.Info("c"))
		}
		if next.Topics["gone"] != c(3) || next.Topics["filed"] != c(4) {
			t.Error("topics not asked about changed in a partial merge")
		}
		if next.Defaults != brokerDefaults || !next.DefaultsFetched.Equal(t1) || !next.Time.Equal(t1) {
			t.Errorf("defaults %+v at %v, time %v", next.Defaults, next.DefaultsFetched, next.Time)
		}
		if prev.Topics["a"] != c(1) || len(prev.Errors) != 1 {
			t.Error("merge modified the previous set")
		}
	})
	t.Run("full: topics gone from disk are dropped, file entries kept", func(t *testing.T) {
		next := mergeConfigs(prev, configFetch{topics: []string{"a", "b", "filed"}, all: true, got: got}, t1)
		if _, ok := next.Topics["gone"]; ok || next.Errors["gone"] != nil {
			t.Errorf("gone: %+v", next.Info("gone"))
		}
		if next.Info("filed").Origin != ConfigFromFile || next.Errors["filed"] == nil {
			t.Errorf("filed: %+v", next.Info("filed"))
		}
	})
	t.Run("nothing succeeded: time and defaults stay", func(t *testing.T) {
		fail := errors.New("unreachable")
		next := mergeConfigs(prev, configFetch{topics: []string{"a"}, all: true, err: fail}, t1)
		if !next.Time.Equal(t0) || next.Defaults != prev.Defaults || !errors.Is(next.DefaultsErr, fail) {
			t.Errorf("time %v, defaults %+v, err %v", next.Time, next.Defaults, next.DefaultsErr)
		}
		if next.Topics["a"] != c(1) || !errors.Is(next.Errors["a"], fail) {
			t.Errorf("a: %+v", next.Info("a"))
		}
	})
}

// scriptedFetcher answers per topic: a config, or the error in fail.
type scriptedFetcher struct {
	mu    sync.Mutex
	fail  map[string]error
	asked [][]string
}

func (f *scriptedFetcher) FetchConfigs(_ context.Context, topics []string) (ConfigSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, slices.Clone(topics))
	now := time.Now()
	cs := ConfigSet{Topics: map[string]TopicConfig{}, Fetched: map[string]time.Time{}, Errors: map[string]error{},
		Defaults: DefaultTopicConfig(), DefaultsFetched: now}
	var err error
	for _, t := range topics {
		if e := f.fail[t]; e != nil {
			cs.Errors[t], err = e, e
			continue
		}
		cs.Topics[t], cs.Fetched[t] = DefaultTopicConfig(), now
	}
	return cs, err
}

func (f *scriptedFetcher) calls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

func (f *scriptedFetcher) setFail(topic string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, topic)
	} else {
		f.fail[topic] = err
	}
}

// liveTopics is a topic list a test changes.
type liveTopics struct {
	mu sync.Mutex
	ts []string
}

func (l *liveTopics) get() []string { l.mu.Lock(); defer l.mu.Unlock(); return slices.Clone(l.ts) }

func (l *liveTopics) add(t string) { l.mu.Lock(); defer l.mu.Unlock(); l.ts = append(l.ts, t) }

func runRefresher(t *testing.T, cfg ConfigRefresherConfig, f ConfigFetcher, topics func() []string) *ConfigRefresher {
	t.Helper()
	r, err := NewConfigRefresher(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), f, topics, ConfigSet{Defaults: DefaultTopicConfig()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// R7.2: a topic seen on disk without a config is fetched at once after a
// Notify, alone, not after the refresh interval.
func TestConfigRefresherFetchesNewTopicsAtOnce(t *testing.T) {
	f := &scriptedFetcher{fail: map[string]error{}}
	topics := &liveTopics{ts: []string{"old"}}
	r := runRefresher(t, ConfigRefresherConfig{Interval: time.Hour, Debounce: 20 * time.Millisecond}, f, topics.get)
	eventually(t, 5*time.Second, func() error {
		if r.Current().Info("old").Origin != ConfigFromCluster {
			return errors.New("first full fetch not done")
		}
		return nil
	})
	topics.add("new-1")
	topics.add("new-2")
	start := time.Now()
	r.Notify()
	r.Notify() // coalesces
	eventually(t, 5*time.Second, func() error {
		for _, tp := range []string{"new-1", "new-2"} {
			if !r.Current().Info(tp).FreshSince(start) {
				return fmt.Errorf("%s: %+v", tp, r.Current().Info(tp))
			}
		}
		return nil
	})
	t.Logf("new topics' configs present %s after Notify", time.Since(start).Round(time.Millisecond))
	calls := f.calls()
	if len(calls) != 2 || !slices.Equal(calls[1], []string{"new-1", "new-2"}) {
		t.Errorf("fetches %v: want the full fetch, then the two new topics only", calls)
	}
	// Nothing missing: a Notify fetches nothing.
	r.Notify()
	time.Sleep(100 * time.Millisecond)
	if n := len(f.calls()); n != 2 {
		t.Errorf("%d fetches after a Notify with nothing missing", n)
	}
}

// R7.2: one topic's failing lookup does not void the others; it is
// retried with backoff and recovers; meanwhile it keeps its old config
// with its old fetch time and the error.
func TestConfigRefresherPerTopicFailure(t *testing.T) {
	f := &scriptedFetcher{fail: map[string]error{}}
	topics := &liveTopics{ts: []string{"good", "bad"}}
	r := runRefresher(t, ConfigRefresherConfig{Interval: 80 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, Debounce: 10 * time.Millisecond}, f, topics.get)
	var first time.Time
	eventually(t, 5*time.Second, func() error {
		i := r.Current().Info("bad")
		if i.Origin != ConfigFromCluster {
			return errors.New("not fetched yet")
		}
		first = i.Fetched
		return nil
	})
	f.setFail("bad", errors.New("TOPIC_AUTHORIZATION_FAILED"))
	eventually(t, 5*time.Second, func() error {
		bad, good := r.Current().Info("bad"), r.Current().Info("good")
		if bad.Err == nil {
			return errors.New("the failure is not recorded yet")
		}
		if !bad.Fetched.Equal(first) || bad.FreshSince(first) {
			return fmt.Errorf("bad: %+v", bad)
		}
		if !good.Fetched.After(first) || good.Err != nil {
			return fmt.Errorf("good was not refreshed beside the failing topic: %+v", good)
		}
		return nil
	})
	f.setFail("bad", nil)
	eventually(t, 5*time.Second, func() error {
		if i := r.Current().Info("bad"); i.Err != nil || !i.Fetched.After(first) {
			return fmt.Errorf("bad did not recover: %+v", i)
		}
		return nil
	})
}

// The live agent signals TopicsChanged when a partition directory appears,
// and publishes new configs within a usage interval without any file
// event.
func TestAgentTopicsChangedAndNewConfigs(t *testing.T) {
	dir := genLogDir(t)
	src := &switchConfigs{}
	src.set(ConfigSet{Defaults: DefaultTopicConfig(), Time: time.Unix(1, 0)})
	a, err := New(Config{LogDirs: []string{dir}, UsageInterval: 20 * time.Millisecond, ReclassifyInterval: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)), src)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 5*time.Second, a, func(s *Snapshot) error { return nil })
	select {
	case <-a.TopicsChanged(): // the first scan
	case <-time.After(5 * time.Second):
		t.Fatal("no TopicsChanged after the first scan")
	}
	if err := os.Mkdir(filepath.Join(dir, "fresh.topic-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.TopicsChanged():
	case <-time.After(5 * time.Second):
		t.Fatal("no TopicsChanged after a new partition directory")
	}
	if _, ok := livePartition(a.Snapshot(), "fresh.topic-0"); !ok {
		t.Fatal("signalled before the snapshot holds the new partition")
	}
	own := DefaultTopicConfig()
	own.RetentionMs = -1
	at := time.Now()
	src.set(ConfigSet{Defaults: DefaultTopicConfig(), Topics: map[string]TopicConfig{"fresh.topic": own},
		Fetched: map[string]time.Time{"fresh.topic": at}, Time: at})
	waitFor(t, 5*time.Second, a, func(s *Snapshot) error {
		if i := s.ConfigInfo("fresh.topic"); !i.FreshSince(at) || i.Config != own {
			return fmt.Errorf("snapshot config %+v", i)
		}
		return nil
	})
}

type switchConfigs struct {
	mu sync.Mutex
	cs ConfigSet
}

func (s *switchConfigs) set(cs ConfigSet) { s.mu.Lock(); defer s.mu.Unlock(); s.cs = cs }

func (s *switchConfigs) Current() ConfigSet { s.mu.Lock(); defer s.mu.Unlock(); return s.cs }
