package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Config configures the live agent. Zero durations take the defaults
// documented on each field.
type Config struct {
	// LogDirs are the broker's log.dirs. An entry may be a glob pattern
	// (a broker pod's volumes under the kubelet's pod directory): its
	// matches that hold a meta.properties are the log dirs, re-expanded
	// every PollInterval.
	LogDirs []string `yaml:"logDirs"`
	// CapacityBytes, when > 0, is a fixed capacity (a PVC size or quota):
	// usage is then the bytes under each log dir over it (spec R2.1).
	CapacityBytes uint64 `yaml:"capacityBytes"`
	// Debounce: how long structural events (segment roll, deletion, new
	// partition) gather before their partitions are re-read. Default 50ms.
	Debounce time.Duration `yaml:"debounce"`
	// GrowthInterval: how often partitions whose active segment was written
	// are re-read. Writes are the flood; they cost a map insert. Default 1s.
	GrowthInterval time.Duration `yaml:"growthInterval"`
	// UsageInterval: how often filesystem usage (statfs) is refreshed.
	// Default 250ms: the enforcer reacts within about this long.
	UsageInterval time.Duration `yaml:"usageInterval"`
	// ReclassifyInterval: how often every segment is reclassified as time
	// passes (no I/O). Default 10s.
	ReclassifyInterval time.Duration `yaml:"reclassifyInterval"`
	// ResyncInterval: how often a full scan repairs anything missed.
	// Default 5m.
	ResyncInterval time.Duration `yaml:"resyncInterval"`
	// PollInterval: how often directories that could not be watched (or a
	// missing log dir) are re-read. Default 2s.
	PollInterval time.Duration `yaml:"pollInterval"`
}

// Config defaults.
const (
	DefaultDebounce           = 50 * time.Millisecond
	DefaultGrowthInterval     = time.Second
	DefaultUsageInterval      = 250 * time.Millisecond
	DefaultReclassifyInterval = 10 * time.Second
	DefaultResyncInterval     = 5 * time.Minute
	DefaultPollInterval       = 2 * time.Second
)

// durations lists the duration fields with their YAML keys and defaults.
func (c *Config) durations() []struct {
	name string
	d    *time.Duration
	def  time.Duration
} {
	return []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"debounce", &c.Debounce, DefaultDebounce},
		{"growthInterval", &c.GrowthInterval, DefaultGrowthInterval},
		{"usageInterval", &c.UsageInterval, DefaultUsageInterval},
		{"reclassifyInterval", &c.ReclassifyInterval, DefaultReclassifyInterval},
		{"resyncInterval", &c.ResyncInterval, DefaultResyncInterval},
		{"pollInterval", &c.PollInterval, DefaultPollInterval},
	}
}

// WithDefaults returns c with every unset duration at its default and the
// log dirs cleaned.
func (c Config) WithDefaults() Config {
	c.LogDirs = slices.Clone(c.LogDirs)
	for i, d := range c.LogDirs {
		if d != "" {
			c.LogDirs[i] = filepath.Clean(d)
		}
	}
	for _, f := range c.durations() {
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	return c
}

// Validate checks the configuration (after defaults); errors name the
// YAML key.
func (c Config) Validate() error {
	if len(c.LogDirs) == 0 {
		return errors.New("logDirs: at least one log dir is required")
	}
	seen := map[string]bool{}
	for i, d := range c.LogDirs {
		if d == "" {
			return fmt.Errorf("logDirs[%d]: empty path", i)
		}
		clean := filepath.Clean(d)
		if isPattern(clean) {
			if _, err := filepath.Match(clean, ""); err != nil {
				return fmt.Errorf("logDirs[%d]: bad glob pattern %q: %w", i, d, err)
			}
		}
		if seen[clean] {
			return fmt.Errorf("logDirs[%d]: %s listed twice", i, d)
		}
		seen[clean] = true
	}
	for _, f := range c.durations() {
		if *f.d < 0 {
			return fmt.Errorf("%s: %s is negative; want a duration > 0 (default %s)", f.name, *f.d, f.def)
		}
	}
	return nil
}

// TopicConfigSource gives the topic configs in force. Implementations
// return a ConfigSet whose map they never modify afterwards.
type TopicConfigSource interface {
	Current() ConfigSet
}

// Agent keeps a live model of the broker's log dirs: it watches them with
// inotify (polling where it cannot), re-reads what changed, and publishes
// immutable Snapshots.
type Agent struct {
	cfg     Config
	logger  *slog.Logger
	scanner *Scanner
	configs TopicConfigSource
	now     func() time.Time

	// seams for tests
	newWatcher func() (fileWatcher, error)
	usage      func(path string, capacity uint64, dirBytes int64) (Usage, error)
	fsStat     func(path string) (Filesystem, error)
	// release collects the garbage of a large full scan and returns it to
	// the operating system (releaseAfterScan); debug.FreeOSMemory.
	release   func()
	releaseAt int // releaseScanAt
	// releasing: a release is running (at most one at a time).
	releasing atomic.Bool

	snap      atomic.Pointer[Snapshot]
	updated   chan struct{}
	topicsSig chan struct{}
}

// New returns an Agent; Run starts it.
func New(cfg Config, logger *slog.Logger, configs TopicConfigSource) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	logger = logger.With("component", "agent")
	scanner, err := NewScanner(ScannerConfig{}, logger)
	if err != nil {
		return nil, err
	}
	return &Agent{
		cfg:        cfg,
		logger:     logger,
		scanner:    scanner,
		configs:    configs,
		now:        time.Now,
		newWatcher: newFSWatcher,
		usage:      DiskUsage,
		fsStat:     ReadFilesystem,
		release:    debug.FreeOSMemory,
		releaseAt:  releaseScanAt,
		updated:    make(chan struct{}, 1),
		topicsSig:  make(chan struct{}, 1),
	}, nil
}

// UseClock makes the agent read the time from now instead of time.Now:
// snapshot times and every classification (tests that move the wall
// clock, spec R7.5). Call it before Run.
func (a *Agent) UseClock(now func() time.Time) { a.now = now }

// Snapshot returns the latest published snapshot, nil before the first
// full scan.
func (a *Agent) Snapshot() *Snapshot { return a.snap.Load() }

// Updated signals that a new snapshot was published. Signals coalesce: the
// channel has room for one, and a reader that wakes up reads Snapshot for
// the latest state.
func (a *Agent) Updated() <-chan struct{} { return a.updated }

// TopicsChanged signals that a snapshot was published whose set of
// partition directories may differ from the previous one's (a topic or
// partition appeared or went, or a full scan ran). It coalesces like
// Updated; a ConfigRefresher's Notify is its reader.
func (a *Agent) TopicsChanged() <-chan struct{} { return a.topicsSig }

// Run watches and scans until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	l := &loop{a: a, rescans: map[string]uint64{}, ownErrs: map[ErrorKind]uint64{}, seed: maphash.MakeSeed()}
	defer l.close()
	return l.run(ctx)
}

// loop is the state owned by Run's goroutine.
type loop struct {
	a    *Agent
	w    fileWatcher  // nil: no inotify at all, everything is polled
	seed maphash.Seed // of checkpointDigest
	dirs []*dirState

	rescans     map[string]uint64
	rereads     uint64
	ownErrs     map[ErrorKind]uint64
	lastFull    time.Time
	lastFullDur time.Duration
	limitLogged bool
	// limitHit: a watch was refused for the watch limit since the start
	// of this poll or scan; the directories after it are not tried again
	// until the next one (each try is a failing inotify_add_watch).
	limitHit bool
	// pollEnd, pollDur: when the last poll ended and how long it took.
	pollEnd      time.Time
	pollDur      time.Duration
	configsAt    time.Time
	remoteAt     time.Time
	debounceSet  bool
	lastRateTick time.Time
	// generation is the last published Snapshot.Generation; contentChanged
	// says a log dir's own facts (its error, a full scan) changed since.
	generation     uint64
	contentChanged bool
}

// dirState is one log dir as the loop knows it.
type dirState struct {
	path                  string
	pattern               string // the glob it matched; "" for a configured path
	base                  LogDir // the last full scan, without partitions
	rootDisk, rootPending int64
	cp                    Checkpoints // compact (Checkpoints.compact)
	usage                 Usage
	fs                    Filesystem
	missing               bool
	watched               bool  // the root has an inotify watch
	wd                    int32 // its descriptor
	parts                 map[string]*partState
	order                 []*partState // the partitions, in snapshot order
	dirty                 map[string]struct{}
	grown                 map[string]struct{}
	cpDirty               bool
	cpDigest              cpDigest // of the checkpoint files d.cp was read from

	// published is the Partitions slice of the last snapshot; changed says
	// a partition changed since (publish then builds a new slice of
	// pointers, else the new snapshot shares it). partDisk, partPending are the partitions'
	// DiskBytes and PendingDeleteBytes summed; unwatched counts partitions
	// without a watch. All kept as partitions change, so that nothing on a
	// timer walks every partition unless something changed.
	published          []*Partition
	changed            bool
	partDisk, partPend int64
	unwatched          int
	// moving: the partitions written to since their write rate last fell
	// to 0 (reclassifyAll updates their rates). due: the partitions by
	// their next retention boundary (timeStableUntil). classifiedMs is the
	// latest classification (kept as partitions are classified; a visit of
	// every partition makes it exact).
	moving       map[*partState]struct{}
	due          dueHeap
	classifiedMs int64
	// futures counts the -future partition directories (Holds has
	// nothing to do without one or an offline log dir).
	futures int
	// polled is what the last poll of each unwatched partition saw (kept
	// here, not in partState: most partitions are watched, and partState
	// is one per partition directory).
	polled map[*partState]pollKey
}

// partState is one partition directory. part is the partition as read and
// classified: the only copy of its segments the loop keeps, shared with the
// published snapshots (Classify copies a segment slice only when a
// classification changes; the scanner hands back the previous slice when
// nothing in it changed).
type partState struct {
	// part is the Partition the published snapshots hold once publish
	// has run (their Partitions slices point to it), so the loop and the
	// snapshots share one copy; store points it at a new Partition on a
	// change. What it points to is never modified.
	part    *Partition
	watched bool
	wd      int32 // the watch's descriptor, when watched

	// The bytes appended since the start and the write rate are
	// part.AppendedBytes and part.WriteRateBytesPerSecond (set and tick
	// store them there): not kept twice, a partState is 64 bytes, not 80.
	activeBase   int64
	activeBytes  int64
	rateAppended uint64

	// classifiedMs is when part was classified; until stableUntilMs the
	// passing of time does not change its classification (timeStableUntil).
	// dueAt is its place in dirState.due, plus one (0: not there).
	classifiedMs, stableUntilMs int64
	dueAt                       int32
}

// pollKey is what a poll of an unwatched partition directory compares:
// the directory's modification time (entries created, renamed, removed:
// a roll, a deletion, a compaction swap) and the active .log file's size
// and modification time (appends). Two stat calls instead of a re-read.
type pollKey struct {
	dirMtime, logMtime int64 // Unix ns
	logSize            int64
}

func (l *loop) close() {
	if l.w != nil {
		l.w.Close()
	}
}

func (l *loop) run(ctx context.Context) error {
	a := l.a
	l.startWatcher()
	l.expand()
	// Watch first, then scan: a file created in between is seen by both,
	// never by neither.
	l.fullScan("start")

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	tick := func(d time.Duration) *time.Ticker { return time.NewTicker(d) }
	growth, usage, reclass, resync, poll := tick(a.cfg.GrowthInterval), tick(a.cfg.UsageInterval),
		tick(a.cfg.ReclassifyInterval), tick(a.cfg.ResyncInterval), tick(a.cfg.PollInterval)
	defer growth.Stop()
	defer usage.Stop()
	defer reclass.Stop()
	defer resync.Stop()
	defer poll.Stop()

	var events <-chan eventT
	var errs <-chan error
	if l.w != nil {
		events, errs = l.w.Events(), l.w.Errors()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if l.handle(ev) && !l.debounceSet {
				debounce.Reset(a.cfg.Debounce)
				l.debounceSet = true
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			l.watcherError(err)
		case <-debounce.C:
			l.debounceSet = false
			l.flush(false)
		case <-growth.C:
			l.flush(true)
		case <-usage.C:
			// New topic configs reach the snapshot within a usage interval.
			if l.refreshUsage() || l.configsChanged() {
				l.publish()
			}
		case <-reclass.C:
			l.reclassifyAll()
			l.publish()
		case <-resync.C:
			l.fullScan("periodic")
		case <-poll.C:
			l.pollPaced()
		}
	}
}

// startWatcher starts the inotify watcher; without one every directory
// is polled.
func (l *loop) startWatcher() {
	a := l.a
	w, err := a.newWatcher()
	if err != nil {
		a.logger.Warn("inotify unavailable, polling every directory", "err", err, "poll_interval", a.cfg.PollInterval)
		l.ownErrs[ErrIO]++
		return
	}
	l.w = w
}

// watcherError handles an error of the watcher: a queue overflow rescans
// everything, anything else is counted and logged.
func (l *loop) watcherError(err error) {
	if errors.Is(err, errOverflow) {
		l.a.logger.Warn("inotify queue overflow, rescanning")
		l.fullScan("overflow")
		return
	}
	l.ownErrs[ErrIO]++
	l.a.logger.Warn("inotify error", "err", err)
}

// pollPaced polls the unwatched directories, at most a tenth of the
// loop's time: with tens of thousands of directories left without a
// watch, a poll can take longer than its interval.
func (l *loop) pollPaced() {
	if time.Since(l.pollEnd) >= 9*l.pollDur {
		start := time.Now()
		l.poll()
		l.pollEnd, l.pollDur = time.Now(), time.Since(start)
	}
}

// handle files one event; it reports whether something structural needs a
// debounced re-read. It does no I/O.
func (l *loop) handle(ev eventT) bool {
	dir, name := filepath.Dir(ev.Name), filepath.Base(ev.Name)
	for _, d := range l.dirs {
		switch {
		case ev.Name == d.path:
			if ev.Has(opRemove) || ev.Has(opRename) {
				l.lost(d, fmt.Errorf("log dir %s removed or unmounted", d.path))
				l.publish()
			}
			return false
		case dir == d.path:
			if name == logStartOffsetCheckpoint || name == replicationCheckpoint {
				if ev.Has(opCreate) || ev.Has(opWrite) || ev.Has(opRename) {
					d.cpDirty = true
					return true
				}
				return false
			}
			if _, _, _, ok := ParsePartitionDirName(name); ok {
				d.dirty[name] = struct{}{}
				return true
			}
			return false
		case filepath.Dir(dir) == d.path:
			pname := filepath.Base(dir)
			if ev.Op == opWrite || ev.Op == opChmod {
				// The active segment's appends: note the partition, no more.
				if ev.Op == opWrite && strings.HasSuffix(name, ".log") {
					d.grown[pname] = struct{}{}
				}
				return false
			}
			d.dirty[pname] = struct{}{}
			return true
		}
	}
	return false
}

// flush re-reads dirty partitions (and, with growth, grown ones) and
// publishes.
func (l *loop) flush(growth bool) {
	changed := false
	for _, d := range l.dirs {
		if d.missing {
			continue
		}
		if d.cpDirty {
			d.cpDirty = false
			digest := l.checkpointDigest(d.path)
			if digest != (cpDigest{}) && digest == d.cpDigest {
				continue // rewritten with the same lines, as Kafka does every few seconds
			}
			d.cp, d.cpDigest = l.a.scanner.ReadCheckpoints(d.path).compact(), digest
			for _, ps := range d.parts {
				p := *ps.part
				p.LogStartOffset, p.HighWatermark = d.cp.Offsets(&p)
				if p.LogStartOffset == ps.part.LogStartOffset && p.HighWatermark == ps.part.HighWatermark {
					continue // Kafka rewrites the files whole: most lines did not change
				}
				l.store(d, ps, l.classify(d, ps, p))
			}
			changed = true
		}
		if growth {
			for name := range d.grown {
				d.dirty[name] = struct{}{}
			}
			clear(d.grown)
		}
		for name := range d.dirty {
			l.reread(d, name)
			changed = true
		}
		clear(d.dirty)
	}
	if changed {
		l.refreshUsage()
		l.publish()
	}
}

// cpDigest identifies the contents of a log dir's two checkpoint files.
type cpDigest [2]uint64

// checkpointDigest hashes the checkpoint files' contents (a missing file
// hashes as empty); zero when one could not be read otherwise. Kafka
// rewrites replication-offset-checkpoint whole every 5 s
// (replica.high.watermark.checkpoint.interval.ms), changed or not: a
// rewrite with the same lines is not parsed again.
func (l *loop) checkpointDigest(logDir string) cpDigest {
	var d cpDigest
	for i, name := range []string{logStartOffsetCheckpoint, replicationCheckpoint} {
		b, err := os.ReadFile(filepath.Join(logDir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return cpDigest{}
		}
		d[i] = maphash.Bytes(l.seed, b)
	}
	return d
}

// reread re-reads one partition directory, adding or dropping it.
func (l *loop) reread(d *dirState, name string) {
	l.rereads++
	ps := d.parts[name]
	var prev *Partition
	if ps != nil {
		prev = ps.part
	}
	p, err := l.a.scanner.ReadPartition(d.path, name, d.cp, prev)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && ps != nil {
			l.drop(d, name, ps)
		}
		return
	}
	if ps == nil {
		ps = l.add(d, name)
		// A directory's first files may land before its watch: read again.
		if p2, err := l.a.scanner.ReadPartition(d.path, name, d.cp, nil); err == nil {
			p = p2
		}
	}
	l.set(d, ps, p)
}

// add starts tracking a new partition directory and watches it.
func (l *loop) add(d *dirState, name string) *partState {
	ps := &partState{activeBase: -1, part: &Partition{}}
	d.parts[name] = ps
	d.order = nil
	d.changed = true
	d.unwatched++
	l.watchPartition(d, name, ps)
	return ps
}

// drop forgets a partition directory that is gone.
func (l *loop) drop(d *dirState, name string, ps *partState) {
	if !ps.watched {
		d.unwatched--
	}
	l.unwatch(ps)
	d.partDisk -= ps.part.DiskBytes
	d.partPend -= ps.part.PendingDeleteBytes
	d.futures -= futureCount(ps.part)
	delete(d.parts, name)
	delete(d.moving, ps)
	delete(d.polled, ps)
	d.due.remove(ps)
	d.order = nil
	d.changed = true
}

// store replaces a partition's state with p, keeping the log dir's sums,
// and notes whether the published snapshot needs a new Partitions slice.
// It allocates only for a change: a store of the same values (every
// partition at a periodic full scan, at new topic configs) costs nothing
// on the heap.
func (l *loop) store(d *dirState, ps *partState, p Partition) {
	if samePartition(ps.part, &p) {
		return // the published copy stays shared
	}
	d.changed = true
	d.futures += futureCount(&p) - futureCount(ps.part)
	d.partDisk += p.DiskBytes - ps.part.DiskBytes
	d.partPend += p.PendingDeleteBytes - ps.part.PendingDeleteBytes
	// A copy, not &p: p's address taken here would move every p to the
	// heap, changed or not.
	np := new(Partition)
	*np = p
	ps.part = np
}

// samePartition reports whether a and b hold the same values; slices are
// compared by identity (Classify and the scanner make a new slice when a
// value in it changes). A field added to Partition must be added here
// (TestSamePartitionCoversPartition checks).
func samePartition(a, b *Partition) bool {
	sameSegs := len(a.Segments) == len(b.Segments) && (len(a.Segments) == 0 || &a.Segments[0] == &b.Segments[0])
	sameExpiry := len(a.OpenExpiry) == len(b.OpenExpiry) && (len(a.OpenExpiry) == 0 || &a.OpenExpiry[0] == &b.OpenExpiry[0])
	sameRemote := a.Remote == b.Remote || (a.Remote != nil && b.Remote != nil && *a.Remote == *b.Remote)
	return sameSegs && sameExpiry && sameRemote &&
		a.Topic == b.Topic && a.Partition == b.Partition && a.Dir == b.Dir && a.Kind == b.Kind &&
		a.LogStartOffset == b.LogStartOffset && a.HighWatermark == b.HighWatermark && a.LogEndOffset == b.LogEndOffset &&
		a.ActiveWrittenBytes == b.ActiveWrittenBytes && a.PendingDeleteBytes == b.PendingDeleteBytes &&
		a.OtherBytes == b.OtherBytes && a.DiskBytes == b.DiskBytes && a.AppendedBytes == b.AppendedBytes &&
		a.WriteRateBytesPerSecond == b.WriteRateBytesPerSecond && a.Tiered == b.Tiered && a.Held == b.Held
}

// set stores a freshly read partition: appended bytes, classification.
func (l *loop) set(d *dirState, ps *partState, p Partition) {
	appended := ps.part.AppendedBytes
	if n := len(p.Segments); n > 0 {
		active := p.Segments[n-1]
		if ps.activeBase >= 0 {
			// Bytes now in segments at or after the previously active one,
			// minus what that one held: appended since the last read.
			var now int64
			for _, s := range p.Segments {
				if s.BaseOffset >= ps.activeBase {
					now += s.LogBytes
				}
			}
			if now > ps.activeBytes {
				appended += uint64(now - ps.activeBytes)
				d.moving[ps] = struct{}{}
			}
		}
		ps.activeBase, ps.activeBytes = active.BaseOffset, active.LogBytes
	}
	p.AppendedBytes, p.WriteRateBytesPerSecond = appended, ps.part.WriteRateBytesPerSecond
	l.store(d, ps, l.classify(d, ps, p))
}

// classify classifies p, the new state of ps, and notes in ps until when
// the passing of time cannot change the result.
func (l *loop) classify(d *dirState, ps *partState, p Partition) Partition {
	cs, now := l.a.configs.Current(), l.a.now()
	// A segment slice other than the one ps holds is fresh from the
	// scanner, in no snapshot yet: classified in place, not copied (at the
	// start scan that copy was a third of the peak).
	owned := len(p.Segments) > 0 && !sameSlice(p.Segments, ps.part.Segments)
	p = cs.classify(p, now, owned)
	ps.classifiedMs, ps.stableUntilMs = now.UnixMilli(), timeStableUntil(&p, cs.For(p.Topic), now.UnixMilli())
	d.classifiedMs = max(d.classifiedMs, ps.classifiedMs)
	d.due.update(ps)
	return p
}

// timeStableUntil returns the first instant (Unix ms) at which the passing
// of time can change p's classification with cfg at nowMs, or MaxInt64.
// Every time rule of Classify is now - t > r for a timestamp t of the
// partition (a segment's largest timestamp, a point of the open segment's
// expiry curve) and r the retention.ms in force (retention.ms, or
// local.retention.ms for a tiered topic): it changes at t + r + 1. A time
// rule added to Classify must be added here; the periodic full scan
// reclassifies everything in any case.
func timeStableUntil(p *Partition, cfg TopicConfig, nowMs int64) int64 {
	until := int64(math.MaxInt64)
	for _, r := range [2]int64{cfg.RetentionMs, cfg.LocalRetentionMs} {
		if r < 0 {
			continue
		}
		at := func(t int64) {
			if c := t + r + 1; c > nowMs && c < until {
				until = c
			}
		}
		for i := range p.Segments {
			at(p.Segments[i].LargestTimestampMs)
		}
		for _, pt := range p.OpenExpiry {
			at(pt.TimestampMs)
		}
	}
	return until
}

func (l *loop) reclassifyDir(d *dirState) {
	for _, ps := range d.parts {
		l.store(d, ps, l.classify(d, ps, *ps.part))
	}
}

// reclassifyAll reclassifies every partition whose classification the
// passing of time may have changed, and updates write rates. It visits
// the partitions written to lately (d.moving) and those whose retention
// boundary passed (d.due); every partition of a log dir only when the
// clock went back: an idle broker costs nothing proportional to its
// partitions, and a boundary passing costs only its partitions.
func (l *loop) reclassifyAll() {
	now := l.a.now()
	nowMs := now.UnixMilli()
	dt := now.Sub(l.lastRateTick).Seconds()
	for _, d := range l.dirs {
		if nowMs < d.classifiedMs {
			d.classifiedMs = math.MinInt64
			for _, ps := range d.parts {
				l.tick(d, ps, now, dt)
				d.classifiedMs = max(d.classifiedMs, ps.classifiedMs)
			}
			continue
		}
		for ps := range d.moving {
			l.tick(d, ps, now, dt)
		}
		// Not moving (a moving one was ticked above, its boundary moved
		// past now): its rate stays 0, its classification is due.
		for _, ps := range d.due.popDue(nowMs) {
			l.tick(d, ps, now, dt)
			d.due.update(ps)
		}
	}
	l.lastRateTick = now
}

// tick updates a partition's write rate and, when a retention boundary of
// its own passed, its classification.
func (l *loop) tick(d *dirState, ps *partState, now time.Time, dt float64) {
	appended, rate := ps.part.AppendedBytes, ps.part.WriteRateBytesPerSecond
	if !l.lastRateTick.IsZero() && dt > 0 {
		inst := float64(appended-ps.rateAppended) / dt
		if rate == 0 {
			rate = inst
		} else {
			rate = 0.5*rate + 0.5*inst
		}
	}
	ps.rateAppended = appended
	if rate == 0 {
		delete(d.moving, ps) // quiet: nothing to update until it is written to
	}
	p := *ps.part
	p.WriteRateBytesPerSecond = rate
	if nowMs := now.UnixMilli(); nowMs >= ps.classifiedMs && nowMs < ps.stableUntilMs {
		l.store(d, ps, p) // no retention boundary passed (and the clock did not go back)
		return
	}
	l.store(d, ps, l.classify(d, ps, p))
}

// fullScan reads every log dir from scratch, watching before reading.
func (l *loop) fullScan(trigger string) {
	start := time.Now()
	l.limitHit = false
	l.rescans[trigger]++
	for _, d := range l.dirs {
		l.scanDir(d)
	}
	l.refreshUsage()
	l.lastFull, l.lastFullDur = time.Now(), time.Since(start)
	l.publish()
	l.releaseAfterScan()
}

// releaseScanAt is the number of segments from which a full scan is
// followed by a collection (releaseAfterScan). Below it the model is a
// few MB (about 100 bytes a segment) and the runtime's minimum heap goal
// of 4 MB, not the model, sizes the heap.
const releaseScanAt = 50_000

// releaseAfterScan collects the garbage a full scan left and returns the
// freed memory to the operating system, in the background, when the
// model holds releaseScanAt segments or more. Go's collector lets the
// heap grow to twice what its last collection found live: a collection
// during the scan found the scan's own garbage-to-be live (the scanner's
// partitions, its buffers), and without this the heap would grow to
// twice that before the next one (at 1M segments 258 MB of heap goal for
// 107 MB of model, an RSS of 266 MB while the broker appends). Collected
// after the scan, the goal is twice the model. One collection a full
// scan: at start and every ResyncInterval.
func (l *loop) releaseAfterScan() {
	segs := 0
	for _, d := range l.dirs {
		for _, ps := range d.parts {
			segs += len(ps.part.Segments)
		}
	}
	a := l.a
	if segs < a.releaseAt || !a.releasing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer a.releasing.Store(false)
		a.release()
	}()
}

func (l *loop) scanDir(d *dirState) {
	a := l.a
	if l.w != nil && !d.watched {
		if wd, err := l.w.Add(d.path, ""); err == nil {
			d.watched, d.wd = true, wd
		} else if !errors.Is(err, fs.ErrNotExist) {
			l.watchFailed(d.path, err)
		}
	}
	// The previous partitions let the scan skip unchanged closed segments:
	// the published slice when it is current (the scanner only reads it),
	// else a sorted copy.
	prev := LogDir{Path: d.path, Partitions: d.published}
	if d.changed || d.order == nil || len(d.published) != len(d.parts) {
		prev.Partitions = make([]*Partition, 0, len(d.parts))
		for _, ps := range d.parts {
			prev.Partitions = append(prev.Partitions, ps.part)
		}
		sortPartitions(prev.Partitions)
	}
	ld := a.scanner.ScanLogDir(d.path, &prev)
	if ld.Err != nil {
		l.lost(d, ld.Err)
		return
	}
	if d.missing {
		a.logger.Info("log dir back", "log_dir", d.path)
	}
	d.missing = false
	d.cp, d.cpDigest = a.scanner.ReadCheckpoints(d.path).compact(), l.checkpointDigest(d.path)
	d.base = ld
	l.contentChanged = true
	d.rootDisk, d.rootPending = ld.DiskBytes, ld.PendingDeleteBytes
	seen := make(map[string]bool, len(ld.Partitions))
	for _, p := range ld.Partitions {
		d.rootDisk -= p.DiskBytes
		d.rootPending -= p.PendingDeleteBytes
		seen[p.Dir] = true
		ps := d.parts[p.Dir]
		if ps == nil {
			ps = l.add(d, p.Dir)
		}
		l.set(d, ps, *p)
		// Classification copied the segments if it set anything: let the
		// scan's copy go now, not after the whole log dir (the start
		// scan's peak). The scan's partitions are its own.
		*p = Partition{}
	}
	for name, ps := range d.parts {
		if !seen[name] {
			l.drop(d, name, ps)
		}
	}
	d.base.Partitions = nil
	d.order = nil
	clear(d.dirty)
	clear(d.grown)
}

// lost marks a log dir unreadable; what was known is kept and served.
func (l *loop) lost(d *dirState, err error) {
	if !d.missing {
		l.a.logger.Error("log dir unreadable, serving last known state", "log_dir", d.path, "err", err)
		l.ownErrs[ErrLogDirMissing]++
	}
	d.missing = true
	d.base.Err = err
	l.contentChanged = true
	if d.watched && l.w != nil {
		l.w.Remove(d.wd)
	}
	d.watched = false
	for _, ps := range d.parts {
		if ps.watched {
			d.unwatched++
		}
		ps.watched = false
	}
}

func (l *loop) watchPartition(d *dirState, name string, ps *partState) {
	if l.w == nil || ps.watched || l.limitHit {
		return
	}
	wd, err := l.w.Add(d.path, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.watchFailed(filepath.Join(d.path, name), err)
		}
		return
	}
	ps.watched, ps.wd = true, wd
	d.unwatched--
	delete(d.polled, ps)
}

// unwatch removes a partition's watch; the caller counts it unwatched, or
// drops the partition.
func (l *loop) unwatch(ps *partState) {
	if ps.watched && l.w != nil {
		l.w.Remove(ps.wd) // the kernel drops the watch of a removed dir itself
	}
	ps.watched = false
}

func (l *loop) watchFailed(path string, err error) {
	if isWatchLimit(err) {
		l.limitHit = true
		if !l.limitLogged {
			l.a.logger.Warn("inotify watch limit reached, polling the directories left over",
				"path", path, "poll_interval", l.a.cfg.PollInterval,
				"hint", "raise fs.inotify.max_user_watches")
			l.limitLogged = true
		}
		return
	}
	l.ownErrs[ErrIO]++
	l.a.logger.Warn("cannot watch directory, polling it", "path", path, "err", err)
}

// poll re-reads what inotify does not cover: unwatched log dirs (listing
// them for new partitions), unwatched partitions, missing log dirs.
func (l *loop) poll() {
	l.limitHit = false
	changed := l.expand()
	for _, d := range l.dirs {
		if d.missing {
			if fi, err := os.Stat(d.path); err == nil && fi.IsDir() {
				l.rescans["log_dir_recovered"]++
				l.scanDir(d)
				changed = true
			}
			continue
		}
		if !d.watched {
			l.rescans["poll"]++
			l.scanDir(d)
			changed = true
			continue
		}
		if d.unwatched == 0 {
			continue
		}
		for name, ps := range d.parts {
			if ps.watched {
				continue
			}
			l.watchPartition(d, name, ps) // watches may have been freed
			key := pollStat(filepath.Join(d.path, name), *ps.part)
			if !ps.watched && key == d.polled[ps] && key.dirMtime != 0 {
				continue // nothing changed since the last poll
			}
			l.reread(d, name)
			if ps := d.parts[name]; ps != nil && !ps.watched {
				d.polled[ps] = key
			} else {
				delete(d.polled, ps)
			}
			changed = true
		}
	}
	if changed {
		l.refreshUsage()
		l.publish()
	}
}

// pollStat reads a partition directory's pollKey; p is the partition as
// last read (its last segment is the active one). Zero fields where a stat
// fails: a zero dirMtime always re-reads.
func pollStat(dir string, p Partition) pollKey {
	var k pollKey
	if fi, err := os.Stat(dir); err == nil {
		k.dirMtime = fi.ModTime().UnixNano()
	}
	if n := len(p.Segments); n > 0 {
		if fi, err := os.Stat(filepath.Join(dir, FileName(p.Segments[n-1].BaseOffset, ".log"))); err == nil {
			k.logMtime, k.logSize = fi.ModTime().UnixNano(), fi.Size()
		}
	}
	return k
}

// isPattern reports whether a logDirs entry is a glob pattern.
func isPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

// expand resolves the configured log dirs: plain paths as they are,
// patterns to their matches holding a meta.properties. New log dirs are
// scanned; a pattern's log dir that no longer matches (its pod is gone) is
// dropped. It reports whether the set changed.
func (l *loop) expand() bool {
	want := map[string]string{}
	var order []string
	for _, entry := range l.a.cfg.LogDirs {
		if !isPattern(entry) {
			if _, ok := want[entry]; !ok {
				want[entry] = ""
				order = append(order, entry)
			}
			continue
		}
		matches, _ := filepath.Glob(entry) // the pattern was checked by Validate
		for _, m := range matches {
			if _, ok := want[m]; ok {
				continue
			}
			if fi, err := os.Stat(filepath.Join(m, metaProperties)); err == nil && fi.Mode().IsRegular() {
				want[m] = entry
				order = append(order, m)
			}
		}
	}
	changed := false
	kept := l.dirs[:0]
	have := map[string]bool{}
	for _, d := range l.dirs {
		if _, ok := want[d.path]; !ok && d.pattern != "" {
			l.a.logger.Info("log dir no longer matches its pattern, dropped", "log_dir", d.path, "pattern", d.pattern)
			if d.watched && l.w != nil {
				l.w.Remove(d.wd)
			}
			for _, ps := range d.parts {
				l.unwatch(ps)
			}
			changed = true
			continue
		}
		kept = append(kept, d)
		have[d.path] = true
	}
	l.dirs = kept
	for _, p := range order {
		if have[p] {
			continue
		}
		d := &dirState{path: p, pattern: want[p], parts: map[string]*partState{}, dirty: map[string]struct{}{}, grown: map[string]struct{}{},
			moving: map[*partState]struct{}{}, polled: map[*partState]pollKey{}}
		l.dirs = append(l.dirs, d)
		if d.pattern != "" {
			l.a.logger.Info("log dir found", "log_dir", p, "pattern", d.pattern)
			if l.lastFull.IsZero() {
				continue // the start scan reads it
			}
			l.scanDir(d)
		}
		changed = true
	}
	return changed
}

// refreshUsage reads each log dir's usage; it reports whether any changed.
func (l *loop) refreshUsage() bool {
	changed := false
	for _, d := range l.dirs {
		if d.missing && l.a.cfg.CapacityBytes == 0 {
			continue
		}
		u, err := l.a.usage(d.path, l.a.cfg.CapacityBytes, d.diskBytes())
		if err != nil {
			l.lost(d, fmt.Errorf("disk usage: %w", err))
			changed = true
			continue
		}
		if u != d.usage {
			d.usage = u
			changed = true
		}
		// The filesystem itself (device, statfs), also with a configured
		// capacity: Filesystems() accounts for its used bytes.
		if fs, err := l.a.fsStat(d.path); err == nil && fs != d.fs {
			d.fs = fs
			changed = true
		}
	}
	return changed
}

func (d *dirState) diskBytes() int64 { return d.rootDisk + d.partDisk }

// configsChanged reports whether the topic configs changed since the last
// publish.
func (l *loop) configsChanged() bool { return !l.a.configs.Current().Time.Equal(l.configsAt) }

// publish assembles and stores a new immutable snapshot.
func (l *loop) publish() {
	a := l.a
	cs := a.configs.Current()
	content := l.contentChanged
	l.contentChanged = false
	if !cs.Time.Equal(l.configsAt) || !cs.RemoteTime.Equal(l.remoteAt) {
		// New topic configs or remote offsets: every classification may change.
		content = true
		l.configsAt, l.remoteAt = cs.Time, cs.RemoteTime
		for _, d := range l.dirs {
			l.reclassifyDir(d)
		}
	}
	s := &Snapshot{Time: a.now(), Configs: cs.Topics, Defaults: cs.Defaults, ConfigsTime: cs.Time,
		ConfigFetched: cs.Fetched, ConfigErrors: cs.Errors}
	structural := false
	for _, d := range l.dirs {
		ld, reordered, changed := publishedLogDir(d)
		structural = structural || reordered
		content = content || changed
		s.LogDirs = append(s.LogDirs, ld)
	}
	if l.mayHold(cs) {
		cs.Holds(s.LogDirs, s.Time)
	}
	for i, d := range l.dirs {
		// A hold goes into a copy of the partitions (Holds).
		content = content || !sameSlice(s.LogDirs[i].Partitions, d.published)
	}
	if content || structural {
		l.generation++
	}
	s.Generation = l.generation
	s.Health = l.health()
	a.snap.Store(s)
	select {
	case a.updated <- struct{}{}:
	default:
	}
	if structural {
		select {
		case a.topicsSig <- struct{}{}:
		default:
		}
	}
}

// publishedLogDir is d as the snapshot shows it: its last full scan with
// today's usage and partitions. reordered: its partitions were sorted
// anew (a partition came or went); changed: they were copied anew.
func publishedLogDir(d *dirState) (ld LogDir, reordered, changed bool) {
	ld = d.base
	ld.Path, ld.Pattern = d.path, d.pattern
	if !d.missing {
		ld.Err = nil
	}
	ld.Usage = d.usage
	ld.Filesystem = d.fs
	ld.DiskBytes, ld.PendingDeleteBytes = d.rootDisk+d.partDisk, d.rootPending+d.partPend
	if d.order == nil {
		reordered = true
		d.order = make([]*partState, 0, len(d.parts))
		for _, ps := range d.parts {
			d.order = append(d.order, ps)
		}
		slices.SortFunc(d.order, func(x, y *partState) int {
			return partitionOrder(*x.part, *y.part)
		})
	}
	if d.changed || d.published == nil {
		// Published snapshots are never modified: a change gets a new
		// slice of pointers; every partition that did not change is the
		// same Partition in both (store replaces a changed one, it never
		// writes into it), so a publish copies 8 bytes a partition, not
		// the partitions.
		changed = true
		d.published = make([]*Partition, len(d.order))
		for i, ps := range d.order {
			d.published[i] = ps.part
		}
		d.changed = false
	}
	ld.Partitions = d.published
	return ld, reordered, changed
}

// health is the loop's own health for a snapshot: scans, errors, rescans
// and how many directories are polled.
func (l *loop) health() Health {
	h := Health{
		LastFullScan:         l.lastFull,
		LastFullScanDuration: l.lastFullDur,
		ScanErrors:           l.a.scanner.Errors(),
		Rescans:              make(map[string]uint64, len(l.rescans)),
		PartitionRereads:     l.rereads,
		WatchMode:            "inotify",
	}
	for k, v := range l.ownErrs {
		h.ScanErrors[k] += v
	}
	for k, v := range l.rescans {
		h.Rescans[k] = v
	}
	for _, d := range l.dirs {
		if !d.watched && !d.missing {
			h.PolledDirs++
		}
		h.PolledDirs += d.unwatched
	}
	if l.w == nil || h.PolledDirs > 0 {
		h.WatchMode = "polling"
	}
	return h
}

// sameSlice reports whether a and b are the same slice (not only equal).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// futureCount is 1 for a -future partition directory, else 0.
func futureCount(p *Partition) int {
	if p.Kind == KindFuture {
		return 1
	}
	return 0
}

// mayHold reports whether ConfigSet.Holds can hold anything: a log dir is
// offline, or one holds a -future partition. Holds walks every partition
// to find out, at every publish.
func (l *loop) mayHold(cs ConfigSet) bool {
	if len(cs.OfflineLogDirs) > 0 {
		return true
	}
	for _, d := range l.dirs {
		if d.futures > 0 {
			return true
		}
	}
	return false
}
