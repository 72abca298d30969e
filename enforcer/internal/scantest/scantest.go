// Package scantest publishes agent.Snapshots of a real broker's log dir for
// the enforcer's integration tests, through the enforcer's SnapshotSource
// interface. It scans and classifies with the agent's own Scanner and
// Classify, and adds the seams those tests need: a topic filter (tests
// share one broker), a capacity that a test moves to cross bands without
// filling a disk, a clock, and an optional override of segment states.
package scantest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Source scans one log dir periodically.
type Source struct {
	LogDir string
	// Capacity, when set, gives a configured capacity (usage = bytes under
	// the log dir / capacity); otherwise statfs.
	Capacity func() uint64
	// Classify, when set, overrides the states the agent's classification
	// gave (segs exclude the open one).
	Classify func(topic string, segs []agent.Segment)
	// Now is the clock stamped on snapshots (time.Now when nil).
	Now func() time.Time
	// ScanEvery is the full rescan period (default 100ms); usage alone is
	// refreshed every UsageEvery (default 10ms) and published when it moved.
	ScanEvery  time.Duration
	UsageEvery time.Duration
	// Configs are the topics' configs (defaults for a topic without an
	// entry). They stand in for configs read from the cluster at each
	// scan: every live topic of the snapshot has one, fetched at the
	// snapshot's time (spec R7.2's gate lets them drive deletion).
	Configs map[string]agent.TopicConfig
	// Topics, when set, limits the snapshot (and a configured capacity's
	// used bytes) to these topics: tests share one broker.
	Topics map[string]bool
	// Remote, when set, gives tiered partitions' remote offsets (as the
	// agent's TieredRefresher does): their segments' upload state.
	Remote func() map[agent.TopicPartition]agent.RemoteOffsets

	mu      sync.Mutex
	scanner *agent.Scanner
	prev    *agent.LogDir // the last unfiltered scan, reused by the next
	snap    *agent.Snapshot
	updated chan struct{}
	once    sync.Once
}

func (s *Source) init() { s.once.Do(func() { s.updated = make(chan struct{}, 1) }) }

// Snapshot returns the latest snapshot (nil before the first scan).
func (s *Source) Snapshot() *agent.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

// Updated is signalled (coalescing, capacity 1) after each publication.
func (s *Source) Updated() <-chan struct{} {
	s.init()
	return s.updated
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Source) publish(snap *agent.Snapshot) {
	s.init()
	s.mu.Lock()
	s.snap = snap
	s.mu.Unlock()
	select {
	case s.updated <- struct{}{}:
	default:
	}
}

// ScanOnce scans and publishes now.
func (s *Source) ScanOnce() *agent.Snapshot {
	snap := s.scan()
	s.publish(snap)
	return snap
}

// Run scans until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	scanEvery, usageEvery := s.ScanEvery, s.UsageEvery
	if scanEvery == 0 {
		scanEvery = 100 * time.Millisecond
	}
	if usageEvery == 0 {
		usageEvery = 10 * time.Millisecond
	}
	t := time.NewTicker(usageEvery)
	defer t.Stop()
	last := s.ScanOnce()
	lastFull := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if time.Since(lastFull) >= scanEvery {
			last = s.ScanOnce()
			lastFull = time.Now()
			continue
		}
		u := s.usage()
		if diff := u.Ratio() - last.LogDirs[0].Usage.Ratio(); diff > 0.002 || diff < -0.002 {
			cp := *last
			cp.Time = s.now()
			cp.LogDirs = []agent.LogDir{last.LogDirs[0]}
			cp.LogDirs[0].Usage = u
			last = &cp
			s.publish(last)
		}
	}
}

func (s *Source) usage() agent.Usage {
	if s.Capacity != nil {
		c := s.Capacity()
		var used uint64
		if s.Topics == nil {
			used = uint64(duBytes(s.LogDir))
		} else if entries, err := os.ReadDir(s.LogDir); err == nil {
			for _, e := range entries {
				if topic, _, kind, ok := agent.ParsePartitionDirName(e.Name()); ok && kind == agent.KindLive && s.Topics[topic] {
					used += uint64(duBytes(filepath.Join(s.LogDir, e.Name())))
				}
			}
		}
		u, _ := agent.DiskUsage(s.LogDir, c, int64(used))
		return u
	}
	u, _ := agent.DiskUsage(s.LogDir, 0, 0)
	return u
}

func duBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func (s *Source) scan() *agent.Snapshot {
	s.mu.Lock()
	if s.scanner == nil {
		sc, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
		if err != nil {
			panic(err) // the zero config is valid
		}
		s.scanner = sc
	}
	sc, prev := s.scanner, s.prev
	s.mu.Unlock()
	ld := sc.ScanLogDir(s.LogDir, prev)
	s.mu.Lock()
	s.prev = &ld
	s.mu.Unlock()

	configs := agent.ConfigSet{Topics: s.Configs, Defaults: agent.DefaultTopicConfig()}
	now := s.now()
	out := ld
	out.Partitions = nil
	if s.Topics != nil {
		// The filtered view counts only its own partitions' bytes: other
		// tests' deletions on the shared broker are not this test's.
		out.PendingDeleteBytes, out.DiskBytes, out.OtherBytes = 0, 0, 0
	}
	var remote map[agent.TopicPartition]agent.RemoteOffsets
	if s.Remote != nil {
		remote = s.Remote()
	}
	for _, p := range ld.Partitions {
		p := *p // the scan result is shared with the next scan
		if s.Topics != nil && !s.Topics[p.Topic] {
			continue
		}
		if r, ok := remote[agent.TopicPartition{Topic: p.Topic, Partition: p.Partition}]; ok {
			p.Remote = &r
		}
		if s.Topics != nil {
			out.PendingDeleteBytes += p.PendingDeleteBytes
			out.DiskBytes += p.DiskBytes
		}
		p = agent.Classify(p, configs.For(p.Topic), now)
		if n := len(p.Segments); n > 0 && s.Classify != nil {
			p.Segments = slices.Clone(p.Segments) // the scan result is shared with the next scan
			s.Classify(p.Topic, p.Segments[:n-1])
		}
		out.Partitions = append(out.Partitions, &p)
	}
	out.Usage = s.usage()
	fetched := map[string]agent.TopicConfig{}
	at := map[string]time.Time{}
	for _, p := range out.Partitions {
		fetched[p.Topic], at[p.Topic] = configs.For(p.Topic), now
	}
	return &agent.Snapshot{Time: now, LogDirs: []agent.LogDir{out}, Configs: fetched, Defaults: configs.Defaults,
		ConfigsTime: now, ConfigFetched: at}
}
