// Package scantest is a small log-dir scanner for the enforcer's
// integration tests: it publishes agent.Snapshots of a real broker's log
// dir (segments, checkpoints, usage) through the enforcer's SnapshotSource
// interface, until the agent's own scanner is wired in by the run command.
// Segment states: the last segment is open, the others closed unless the
// Classify hook says eligible.
package scantest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
	// Classify may mark segments eligible (segments exclude the open one).
	Classify func(topic string, segs []agent.Segment)
	// Now is the clock stamped on snapshots (time.Now when nil).
	Now func() time.Time
	// ScanEvery is the full rescan period (default 100ms); usage alone is
	// refreshed every UsageEvery (default 10ms) and published when it moved.
	ScanEvery  time.Duration
	UsageEvery time.Duration
	Configs    map[string]agent.TopicConfig
	// Topics, when set, limits the snapshot (and a configured capacity's
	// used bytes) to these topics: tests share one broker.
	Topics map[string]bool

	mu      sync.Mutex
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
				if m := partDir.FindStringSubmatch(e.Name()); m != nil && s.Topics[m[1]] {
					used += uint64(duBytes(filepath.Join(s.LogDir, e.Name())))
				}
			}
		}
		return agent.Usage{CapacityBytes: c, UsedBytes: used, AvailableBytes: c - min(c, used), Basis: agent.CapacityConfigured}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.LogDir, &st); err != nil {
		return agent.Usage{}
	}
	bs := uint64(st.Bsize)
	return agent.Usage{CapacityBytes: st.Blocks * bs, UsedBytes: (st.Blocks - st.Bfree) * bs, AvailableBytes: st.Bavail * bs, Basis: agent.CapacityFilesystem}
}

func duBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += diskBytes(fi)
		}
		return nil
	})
	return n
}

func diskBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

var partDir = regexp.MustCompile(`^(.+)-(\d+)$`)

func (s *Source) scan() *agent.Snapshot {
	ld := agent.LogDir{Path: s.LogDir, BrokerID: -1}
	lso := readCheckpoint(filepath.Join(s.LogDir, "log-start-offset-checkpoint"))
	hw := readCheckpoint(filepath.Join(s.LogDir, "replication-offset-checkpoint"))
	ld.BrokerID = metaNodeID(filepath.Join(s.LogDir, "meta.properties"))
	entries, err := os.ReadDir(s.LogDir)
	if err != nil {
		ld.Err = err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasSuffix(name, "-delete") {
			n := duBytes(filepath.Join(s.LogDir, name))
			ld.PendingDeleteBytes += n
			continue
		}
		m := partDir.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if s.Topics != nil && !s.Topics[m[1]] {
			continue
		}
		pn, _ := strconv.Atoi(m[2])
		p := agent.Partition{Topic: m[1], Partition: int32(pn), Dir: name, Kind: agent.KindLive, LogStartOffset: -1, HighWatermark: -1}
		if m[1] == "__cluster_metadata" {
			p.Kind = agent.KindMetadata
		}
		key := m[1] + " " + m[2]
		if v, ok := lso[key]; ok {
			p.LogStartOffset = v
		}
		if v, ok := hw[key]; ok {
			p.HighWatermark = v
		}
		s.scanPartition(&p, filepath.Join(s.LogDir, name))
		ld.PendingDeleteBytes += p.PendingDeleteBytes
		ld.Partitions = append(ld.Partitions, p)
	}
	ld.Usage = s.usage()
	return &agent.Snapshot{Time: s.now(), LogDirs: []agent.LogDir{ld}, Configs: s.Configs, Defaults: agent.DefaultTopicConfig()}
}

func (s *Source) scanPartition(p *agent.Partition, dir string) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	segs := map[int64]*agent.Segment{}
	var bases []int64
	for _, f := range files {
		fi, err := f.Info()
		if err != nil {
			continue // vanished
		}
		name := f.Name()
		db := diskBytes(fi)
		p.DiskBytes += db
		if strings.HasSuffix(name, ".deleted") {
			p.PendingDeleteBytes += db
			continue
		}
		dot := strings.IndexByte(name, '.')
		if dot != 20 {
			p.OtherBytes += db
			continue
		}
		base, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			p.OtherBytes += db
			continue
		}
		sg := segs[base]
		if sg == nil {
			sg = &agent.Segment{BaseOffset: base, State: agent.StateClosed}
			segs[base] = sg
		}
		sg.DiskBytes += db
		sg.ApparentBytes += fi.Size()
		if strings.HasSuffix(name, ".log") {
			sg.LogBytes = fi.Size()
			sg.LargestTimestamp = fi.ModTime()
			sg.TimestampSource = agent.TimestampFromMtime
			bases = append(bases, base)
		}
	}
	sortInt64(bases)
	for _, b := range bases {
		p.Segments = append(p.Segments, *segs[b])
	}
	if n := len(p.Segments); n > 0 {
		p.Segments[n-1].State = agent.StateOpen
		if s.Classify != nil {
			s.Classify(p.Topic, p.Segments[:n-1])
		}
	}
}

func sortInt64(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// readCheckpoint parses a Kafka offset checkpoint file: version, count,
// then "topic partition offset" lines.
func readCheckpoint(path string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		if i < 2 {
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		v, err := strconv.ParseInt(fs[2], 10, 64)
		if err == nil {
			out[fs[0]+" "+fs[1]] = v
		}
	}
	return out
}

func metaNodeID(path string) int32 {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && (k == "node.id" || k == "broker.id") {
			n, err := strconv.Atoi(v)
			if err == nil {
				return int32(n)
			}
		}
	}
	return -1
}
