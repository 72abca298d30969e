package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// ScannerConfig configures a Scanner.
type ScannerConfig struct {
	// Workers is how many partition directories a full scan reads at once
	// (default 4: the scan waits on system calls, not on the CPU).
	Workers int
}

// WithDefaults returns c with every unset field at its default.
func (c ScannerConfig) WithDefaults() ScannerConfig {
	if c.Workers == 0 {
		c.Workers = 4
	}
	return c
}

// Validate checks the values (after defaults).
func (c ScannerConfig) Validate() error {
	c = c.WithDefaults()
	if c.Workers < 0 || c.Workers > 256 {
		return fmt.Errorf("workers %d: want 1-256", c.Workers)
	}
	return nil
}

// Scanner reads broker log dirs from disk. It keeps no state about their
// content, only cumulative error counts (spec R6), so one Scanner may serve
// full scans and partition re-reads from several goroutines.
type Scanner struct {
	cfg    ScannerConfig
	logger *slog.Logger
	bufs   sync.Pool

	// afterList, when set (tests only), runs after a partition directory
	// was listed and before its files are read: files can vanish there.
	afterList func(dir string)
	// vanishAt, when set (tests only), is asked about each entry a
	// partition listing stat'ed: true makes it vanish there, as when the
	// broker renames it between getdents and stat.
	vanishAt func(dir, name string) bool

	mu     sync.Mutex
	errs   map[ErrorKind]uint64
	logged map[string]struct{}
}

// maxLoggedErrors bounds the set of paths whose error was already logged.
const maxLoggedErrors = 4096

// scratchSize is the per-call read buffer (index tails, batch headers).
const scratchSize = 16 << 10

// NewScanner returns a Scanner that logs each distinct bad input once.
func NewScanner(cfg ScannerConfig, logger *slog.Logger) (*Scanner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scanner: %w", err)
	}
	cfg = cfg.WithDefaults()
	s := &Scanner{
		cfg:    cfg,
		logger: logger.With("component", "scanner"),
		errs:   make(map[ErrorKind]uint64),
		logged: make(map[string]struct{}),
	}
	s.bufs.New = func() any { return &scratch{buf: make([]byte, scratchSize)} }
	return s, nil
}

// Errors returns a copy of the cumulative error counts by kind.
func (s *Scanner) Errors() map[ErrorKind]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[ErrorKind]uint64, len(s.errs))
	for k, v := range s.errs {
		out[k] = v
	}
	return out
}

// report counts a bad input and logs it the first time it is seen: at
// warn, except a vanished file, which is the broker's normal churn
// (retention renames segments .deleted while they are read): counted,
// never alerted on (docs/operating.md), logged at debug.
func (s *Scanner) report(kind ErrorKind, path string, err error) {
	s.mu.Lock()
	s.errs[kind]++
	key := string(kind) + "\x00" + path
	_, seen := s.logged[key]
	if !seen {
		if len(s.logged) >= maxLoggedErrors {
			clear(s.logged)
		}
		s.logged[key] = struct{}{}
	}
	s.mu.Unlock()
	if !seen {
		level := slog.LevelWarn
		if kind == ErrVanished {
			level = slog.LevelDebug
		}
		s.logger.Log(context.Background(), level, "scan error", "kind", string(kind), "path", path, "err", err)
	}
}

// remoteIndexCacheDir is where a tiered broker caches remote segments'
// indexes, at the log dir root (Kafka's RemoteIndexCache.DIR_NAME).
const remoteIndexCacheDir = "remote-log-index-cache"

// errNotDir: a name that looks like a partition directory is a file.
var errNotDir = errors.New("not a directory")

// errKind maps an I/O error to its ErrorKind.
func errKind(err error) ErrorKind {
	switch {
	case errors.Is(err, errNotDir):
		return ErrBadName
	case errors.Is(err, fs.ErrNotExist):
		return ErrVanished
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	case errors.Is(err, errCorrupt):
		return ErrCorruptIndex
	}
	return ErrIO
}

// ScanLogDir reads one log dir completely: meta.properties, the checkpoint
// files, every partition directory and every special entry of spec R1.4.
// It never fails: what it cannot read is counted, logged once, and left
// out; a missing or unreadable log dir yields a LogDir with Err set.
// Segments come back unclassified (State empty): see Classify and
// BuildSnapshot. Usage is not filled in: see DiskUsage.
//
// prev, when not nil, is an earlier scan of the same log dir: closed
// segments whose files kept their sizes take their largest timestamp from
// it instead of reading their time index again (Kafka never rewrites a
// closed segment's time index in place), so a periodic full scan costs
// little more than listing and stat'ing the files. A partition whose
// segments all read as before gets prev's segment slice back, with
// whatever classification it carries (Classify recomputes it).
func (s *Scanner) ScanLogDir(path string, prev *LogDir) LogDir {
	ld := LogDir{Path: path, BrokerID: -1}
	root, err := os.OpenRoot(path)
	if err != nil {
		kind := ErrLogDirMissing
		if errors.Is(err, fs.ErrPermission) {
			kind = ErrPermission
		}
		s.report(kind, path, err)
		ld.Err = fmt.Errorf("open log dir %s: %w", path, err)
		return ld
	}
	defer root.Close()
	names, err := readDirNames(root)
	if err != nil {
		kind := errKind(err)
		if kind == ErrVanished {
			kind = ErrLogDirMissing
		}
		s.report(kind, path, err)
		ld.Err = fmt.Errorf("read log dir %s: %w", path, err)
		return ld
	}
	ld.BrokerID, ld.ClusterID = s.readMeta(root, path)
	if fi, err := root.Lstat("."); err == nil {
		ld.DiskBytes += diskBytes(fi)
		ld.OtherBytes += diskBytes(fi)
	}
	cp := s.readCheckpoints(root, path)
	// The log dir's descriptor, to open partition directories relative
	// to (nil: through root).
	rootDir, err := root.Open(".")
	if err != nil {
		rootDir = nil
	} else {
		defer rootDir.Close()
	}
	jobs := make([]partitionJob, 0, len(names))
	for _, name := range names {
		if topic, part, kind, ok := ParsePartitionDirName(name); ok {
			jobs = append(jobs, partitionJob{name, topic, part, kind})
			continue
		}
		full := filepath.Join(path, name)
		fi, err := root.Lstat(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // checkpoint files are replaced by rename all the time
				s.report(errKind(err), full, err)
			}
			continue
		}
		if !fi.IsDir() {
			d := diskBytes(fi)
			ld.DiskBytes += d
			if strings.HasSuffix(name, ".deleted") {
				ld.PendingDeleteBytes += d
			} else {
				ld.OtherBytes += d
			}
			continue
		}
		d := s.duRoot(root, name, full)
		ld.DiskBytes += d
		ld.OtherBytes += d
		if name != "lost+found" && name != remoteIndexCacheDir {
			s.report(ErrBadName, full, errors.New("not a partition directory name"))
		}
	}
	ld.Partitions = PartitionsOf(s.readPartitions(root, rootDir, jobs, &cp, prev)...)
	for i := range ld.Partitions {
		ld.DiskBytes += ld.Partitions[i].DiskBytes
		ld.PendingDeleteBytes += ld.Partitions[i].PendingDeleteBytes
	}
	sortPartitions(ld.Partitions)
	return ld
}

// readMeta reads the log dir's meta.properties: the broker id (-1 when it
// gives none) and the cluster id.
func (s *Scanner) readMeta(root *os.Root, path string) (brokerID int32, clusterID string) {
	data, err := root.ReadFile(metaProperties)
	if err != nil {
		s.report(errKind(err), filepath.Join(path, metaProperties), err)
		return -1, ""
	}
	id, cluster, perr := parseMetaProperties(data)
	if perr != nil {
		s.report(ErrCorruptIndex, filepath.Join(path, metaProperties), perr)
	}
	return id, cluster
}

// partitionJob is a partition directory of a log dir to read.
type partitionJob struct {
	name, topic string
	part        int32
	kind        PartitionKind
}

// readPartitions reads the partition directories with Workers
// goroutines. A directory that could not be opened or listed is reported
// and left out rather than reported as an empty partition; the others
// come back in jobs' order.
func (s *Scanner) readPartitions(root *os.Root, rootDir *os.File, jobs []partitionJob, cp *Checkpoints, prev *LogDir) []Partition {
	path := root.Name()
	parts := make([]Partition, len(jobs))
	ok := make([]bool, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.cfg.Workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := s.bufs.Get().(*scratch)
			defer s.bufs.Put(sc)
			for i := range next {
				j := jobs[i]
				full := filepath.Join(path, j.name)
				pd := partitionDir{parent: root, parentDir: rootDir, name: j.name, full: full, topic: j.topic, part: j.part, kind: j.kind}
				p, err := s.readPartition(pd, cp, prevPartition(prev, j.topic, j.part, j.kind, j.name), sc)
				if err != nil {
					// Nothing was read (open or list failed): leave it out
					// rather than report an empty partition.
					s.report(errKind(err), full, err)
					continue
				}
				parts[i], ok[i] = p, true
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	n := 0
	for i := range parts {
		if ok[i] {
			parts[n] = parts[i]
			n++
		}
	}
	clear(parts[n:])
	return parts[:n:n]
}

func sortPartitions(ps []*Partition) {
	slices.SortFunc(ps, func(a, b *Partition) int { return partitionOrder(*a, *b) })
}

// partitionOrder orders partitions by topic, partition, kind, then
// directory name (two deleted copies of one partition).
func partitionOrder(a, b Partition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if a.Partition != b.Partition {
		if a.Partition < b.Partition {
			return -1
		}
		return 1
	}
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Dir, b.Dir)
}

// ReadCheckpoints reads log-start-offset-checkpoint and
// replication-offset-checkpoint at a log dir's root. Missing files give
// empty maps (a fresh broker has none).
func (s *Scanner) ReadCheckpoints(logDir string) Checkpoints {
	root, err := os.OpenRoot(logDir)
	if err != nil {
		s.report(ErrLogDirMissing, logDir, err)
		return Checkpoints{LogStart: map[TopicPartition]int64{}, HighWatermark: map[TopicPartition]int64{}}
	}
	defer root.Close()
	return s.readCheckpoints(root, logDir)
}

func (s *Scanner) readCheckpoints(root *os.Root, path string) Checkpoints {
	read := func(name string) map[TopicPartition]int64 {
		data, err := root.ReadFile(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.report(errKind(err), filepath.Join(path, name), err)
			}
			return map[TopicPartition]int64{}
		}
		m, err := parseCheckpoint(data)
		if err != nil {
			s.report(ErrCorruptIndex, filepath.Join(path, name), err)
		}
		return m
	}
	return Checkpoints{LogStart: read(logStartOffsetCheckpoint), HighWatermark: read(replicationCheckpoint)}
}

// ReadPartition re-reads one partition directory (dir is its name under
// logDir), with the log dir's checkpoints (see ReadCheckpoints; the caller
// may cache them) and, when not nil, its previous state (see ScanLogDir).
// The live watcher calls it on file events. A directory
// that is gone returns an error matching fs.ErrNotExist; other bad input is
// counted, logged once and skipped.
func (s *Scanner) ReadPartition(logDir, dir string, cp Checkpoints, prev *Partition) (Partition, error) {
	full := filepath.Join(logDir, dir)
	topic, part, kind, ok := ParsePartitionDirName(dir)
	if !ok {
		err := fmt.Errorf("read partition %s: not a partition directory name", full)
		s.report(ErrBadName, full, err)
		return Partition{}, err
	}
	root, err := os.OpenRoot(logDir)
	if err != nil {
		return Partition{}, fmt.Errorf("read partition %s: %w", full, err)
	}
	defer root.Close()
	sc := s.bufs.Get().(*scratch)
	defer s.bufs.Put(sc)
	p, err := s.readPartition(partitionDir{parent: root, name: dir, full: full, topic: topic, part: part, kind: kind}, &cp, prev, sc)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.report(errKind(err), full, err)
	}
	return p, err
}

// readDirNames lists root's entries without stat'ing them.
func readDirNames(root *os.Root) ([]string, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// readDir lists a directory under root ("." for root itself).
func readDir(root *os.Root, name string) ([]os.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// scratch is one worker's reusable memory.
type scratch struct {
	buf   []byte
	files []segFile
	segs  []Segment // a partition's segments as read, before they are kept
	// A partition listing's bad entries, and whether one vanished.
	bad      []badEntry
	vanished bool
}

// segFile is one file of a partition directory, parsed and measured.
type segFile struct {
	base     int64
	kind     fileKind
	name     string
	disk     int64
	apparent int64
	mtime    int64 // unix ms
	// pending: a time index listed but not stat'ed: readSegment opens
	// and measures it (see listPartition).
	pending bool
}

// FileName renders a segment file name: the base offset in 20 digits and
// the suffix (".log", ".index", ".timeindex", ...).
func FileName(baseOffset int64, suffix string) string {
	return fmt.Sprintf("%020d%s", baseOffset, suffix)
}

// partitionDir is a partition directory to read.
type partitionDir struct {
	parent *os.Root // the log dir
	// parentDir, when not nil, is the log dir open as a directory.
	parentDir *os.File
	name      string // the directory's name under parent
	full      string // its path, for errors
	topic     string
	part      int32
	kind      PartitionKind
}

// partDir is an open partition directory: a bare descriptor (f nil)
// where the scanner lists it and opens its files with system calls of
// its own (Linux amd64, arm64: see openPartitionDir), else an os.File.
// A bare descriptor saves what an os.File costs a directory: the fcntl
// of os.NewFile, its allocation and cleanup, the poller's bookkeeping
// around Stat and Close.
type partDir struct {
	f    *os.File // nil: fd alone
	fd   int
	path string // for errors
}

// fileDir is an open os.File as a partDir.
func fileDir(f *os.File) partDir { return partDir{f: f, fd: -1, path: f.Name()} }

// Fd returns the directory's descriptor.
func (d partDir) Fd() uintptr {
	if d.f != nil {
		return d.f.Fd()
	}
	return uintptr(d.fd)
}

// Name returns the directory's path, for errors.
func (d partDir) Name() string { return d.path }

// maxRelists bounds how often a partition directory is listed again when
// entries vanish during the listing.
const maxRelists = 3

// badEntry is a bad input found while listing, reported once the listing
// is final.
type badEntry struct {
	kind ErrorKind
	path string
	err  error
}

// readPartition reads one partition directory with the log dir's
// checkpoints and, when not nil, its previous state.
func (s *Scanner) readPartition(pd partitionDir, cp *Checkpoints, prev *Partition, sc *scratch) (Partition, error) {
	parent, name, full, topic, part, kind := pd.parent, pd.name, pd.full, pd.topic, pd.part, pd.kind
	buf := sc.buf
	p := Partition{Topic: topic, Partition: part, Dir: name, Kind: kind, LogStartOffset: -1, HighWatermark: -1, LogEndOffset: -1, ActiveWrittenBytes: -1}
	// One descriptor for the directory: ReadDir lstat's each entry
	// relative to it (a Root's files do), and segment files are opened
	// relative to it.
	dir, err := openPartitionDir(pd)
	if err != nil {
		return p, fmt.Errorf("open partition dir: %w", err)
	}
	defer dir.Close()
	if st, err := dir.stat(); err == nil {
		if !st.isDir {
			return p, fmt.Errorf("partition dir: %w", errNotDir)
		}
		p.DiskBytes += st.disk // the directory itself, as du counts it
		p.OtherBytes += st.disk
	}
	if kind == KindDeleted {
		// A deleted topic's directory: everything in it waits for deletion.
		p.PendingDeleteBytes += s.duDir(parent, name, ".", full) - p.DiskBytes
		p.DiskBytes = p.OtherBytes + p.PendingDeleteBytes
		return p, nil
	}
	files := sc.files[:0]
	defer func() { sc.files = files[:0] }()
	files, subdirs, nseg, err := s.listPartition(dir, full, sc, files, prev)
	if err != nil {
		return p, fmt.Errorf("read partition dir: %w", err)
	}
	if s.afterList != nil {
		s.afterList(full)
	}
	for _, sub := range subdirs {
		d := s.duDir(parent, name, sub, filepath.Join(full, sub))
		p.DiskBytes += d
		p.OtherBytes += d
		s.report(ErrBadName, filepath.Join(full, sub), errors.New("unexpected directory in a partition directory"))
	}
	// Read into scratch space: the result is copied out only when it
	// differs from prev's (a periodic rescan then allocates no segments).
	p.Segments = sc.segs[:0]
	p.LogStartOffset, p.HighWatermark = cp.Offsets(&p)
	for group := range byBaseOffset(files) {
		if !hasLog(group) || group[0].base < 0 {
			p.addLooseFiles(group)
			continue
		}
		active := nseg == len(p.Segments)+1
		var ps *Segment
		if active {
			ps = prevActive(prev, group[0].base)
		} else {
			ps = prevSegment(prev, group[0].base)
		}
		seg, ok := s.readSegment(segmentFiles{dir: dir, path: full, files: group, active: active, prev: ps, prevPart: prev}, &p, buf)
		if !ok {
			nseg--
			continue
		}
		p.DiskBytes += seg.DiskBytes
		p.Segments = append(p.Segments, seg)
	}
	sc.segs = p.Segments[:0]
	p.Segments = keepSegments(prev, p.Segments)
	return p, nil
}

// keepSegments returns the segments read (in scratch space) as the
// partition keeps them: prev's slice when nothing read differs, so that a
// running agent holds one copy of each segment across re-reads and
// rescans, else a copy.
func keepSegments(prev *Partition, read []Segment) []Segment {
	if prev != nil && sameSegmentFacts(prev.Segments, read) {
		return prev.Segments
	}
	return append(make([]Segment, 0, len(read)), read...)
}

// listPartition lists a partition directory: its files, appended to
// files and sorted (sortSegmentFiles), how many segments they make, and
// its subdirectories. Bad entries are reported once the listing is final.
//
// A time index the scan has no earlier value for (prev has no segment at
// its base offset) is read whatever its size, so the listing does not
// stat it: readSegment opens it and fstat's the open file, one path
// lookup instead of two (spec R1.3 needs its last entry; the listing's
// fstatat would only repeat the open's lookup). Such entries come back
// pending, except time indexes of no segment, stat'ed here.
func (s *Scanner) listPartition(dir partDir, full string, sc *scratch, files []segFile, prev *Partition) ([]segFile, []string, int, error) {
	var subdirs []string
	var err error
	var nseg int
	// lazy is asked first about every entry; when it says true, fn is
	// called next for the same entry with st.pending set.
	var lazyBase int64
	lazy := func(fname string, regular bool) bool {
		if !regular || len(fname) != baseOffsetDigits+len(".timeindex") {
			return false
		}
		base, fk, ok := parseSegmentFileName(fname)
		if !ok || fk != fileTimeIndex || prevHas(prev, base) {
			return false
		}
		lazyBase = base
		return true
	}
	// An entry that vanished between getdents and stat (the broker renamed
	// it .deleted or removed it: retention, the log cleaner) makes the
	// listing inconsistent: its bytes are missing and its new name may be
	// too, so usage would dip. List again, a few times, before reporting.
	for attempt := 0; ; attempt++ {
		files, subdirs, sc.bad, sc.vanished = files[:0], subdirs[:0], sc.bad[:0], false
		err = listDir(dir, sc.buf, lazy, func(fname string, st entryStat, err error) {
			if st.pending {
				files = append(files, segFile{base: lazyBase, kind: fileTimeIndex, pending: true})
				return
			}
			if s.entryFailed(sc, full, fname, err) {
				return
			}
			if st.isDir {
				subdirs = append(subdirs, strings.Clone(fname))
				return
			}
			base, fk, ok := parseSegmentFileName(fname)
			if !ok {
				sc.bad = append(sc.bad, badEntry{ErrBadName, filepath.Join(full, fname), errors.New("not a segment file name")})
			}
			f := segFile{base: base, kind: fk, disk: st.disk, apparent: st.apparent, mtime: st.mtimeMs}
			if fk == fileLog || fk == fileIndex || fk == fileTimeIndex {
				f.name = "" // rebuilt from the base offset when the file is opened
			} else {
				f.name = strings.Clone(fname)
			}
			files = append(files, f)
		})
		if err == nil {
			nseg = sortSegmentFiles(files)
			if !sc.vanished {
				files, subdirs = s.statLooseTimeIndexes(dir, full, sc, files, subdirs)
			}
		}
		if err != nil || !sc.vanished || attempt == maxRelists {
			break
		}
		if err = dir.rewind(); err != nil {
			break
		}
	}
	for _, b := range sc.bad {
		s.report(b.kind, b.path, b.err)
	}
	clear(sc.bad)
	return files, subdirs, nseg, err
}

// entryFailed records a listed entry's stat error (or the test hook's
// vanishing) as a bad entry, noting a vanished one (the directory is
// listed again), and reports whether there was one.
func (s *Scanner) entryFailed(sc *scratch, full, name string, err error) bool {
	if err == nil && s.vanishAt != nil && s.vanishAt(full, name) {
		err = &os.PathError{Op: "fstatat", Path: name, Err: fs.ErrNotExist}
	}
	if err == nil {
		return false
	}
	sc.vanished = sc.vanished || errors.Is(err, fs.ErrNotExist)
	sc.bad = append(sc.bad, badEntry{errKind(err), filepath.Join(full, name), err})
	return true
}

// statLooseTimeIndexes stats the pending time indexes of sorted files
// that belong to no segment (no .log at their base offset): nothing
// reads them, so the listing measures them as it does every other entry.
func (s *Scanner) statLooseTimeIndexes(dir partDir, full string, sc *scratch, files []segFile, subdirs []string) ([]segFile, []string) {
	n := 0
	for group := range byBaseOffset(files) {
		log := hasLog(group)
		for _, f := range group {
			if f.pending && !log {
				name := FileName(f.base, ".timeindex")
				st, err := statSegmentFile(dir, f.base, ".timeindex")
				if s.entryFailed(sc, full, name, err) {
					continue
				}
				if st.isDir {
					subdirs = append(subdirs, name)
					continue
				}
				f.pending, f.disk, f.apparent, f.mtime = false, st.disk, st.apparent, st.mtimeMs
			}
			files[n] = f
			n++
		}
	}
	return files[:n], subdirs
}

// prevHas reports whether an earlier read of the partition has a segment
// at base.
func prevHas(prev *Partition, base int64) bool {
	if prev == nil {
		return false
	}
	_, found := slices.BinarySearchFunc(prev.Segments, base, func(s Segment, b int64) int {
		switch {
		case s.BaseOffset < b:
			return -1
		case s.BaseOffset > b:
			return 1
		}
		return 0
	})
	return found
}

// sortSegmentFiles sorts files by base offset, then kind, and counts the
// segments: one per base offset that has a .log file.
func sortSegmentFiles(files []segFile) (segments int) {
	if len(files) <= smallSort {
		// A partition directory holds a few dozen files in getdents'
		// hash order: an insertion sort with the comparison inlined
		// costs a third of pdqsort's calls to a comparison function.
		for i := 1; i < len(files); i++ {
			f, j := files[i], i
			for ; j > 0 && segFileLess(&f, &files[j-1]); j-- {
				files[j] = files[j-1]
			}
			files[j] = f
		}
	} else {
		slices.SortFunc(files, func(a, b segFile) int {
			switch {
			case segFileLess(&a, &b):
				return -1
			case segFileLess(&b, &a):
				return 1
			}
			return 0
		})
	}
	for _, f := range files {
		if f.kind == fileLog {
			segments++
		}
	}
	return segments
}

// smallSort: up to this many files, sortSegmentFiles sorts by insertion.
const smallSort = 64

// segFileLess orders segment files by base offset, then kind.
func segFileLess(a, b *segFile) bool {
	return a.base < b.base || (a.base == b.base && a.kind < b.kind)
}

// byBaseOffset yields the runs of sorted files that share a base offset.
func byBaseOffset(files []segFile) iter.Seq[[]segFile] {
	return func(yield func([]segFile) bool) {
		for i := 0; i < len(files); {
			j := i
			for j < len(files) && files[j].base == files[i].base {
				j++
			}
			if !yield(files[i:j]) {
				return
			}
			i = j
		}
	}
}

// hasLog reports whether a base offset's files include its .log.
func hasLog(group []segFile) bool {
	for _, f := range group {
		if f.kind == fileLog {
			return true
		}
	}
	return false
}

// addLooseFiles counts files that belong to no segment: other bytes, or
// pending deletion for .deleted files.
func (p *Partition) addLooseFiles(group []segFile) {
	for _, f := range group {
		p.DiskBytes += f.disk
		if f.kind == fileDeleted {
			p.PendingDeleteBytes += f.disk
		} else {
			p.OtherBytes += f.disk
		}
	}
}

// sameSegmentFacts reports whether two reads of a partition found the same
// segments (what the scanner reads; not the classification). A field the
// scanner fills, added to Segment, must be compared here
// (TestSameSegmentFactsCoversSegment checks).
func sameSegmentFacts(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.BaseOffset != y.BaseOffset || x.LogBytes != y.LogBytes || x.DiskBytes != y.DiskBytes ||
			x.IndexApparentBytes != y.IndexApparentBytes || x.LargestTimestampMs != y.LargestTimestampMs ||
			x.TimestampSource != y.TimestampSource {
			return false
		}
	}
	return true
}

// segmentFiles is one segment to read: its files in a partition directory.
type segmentFiles struct {
	dir    partDir   // the partition directory
	path   string    // its path, for errors
	files  []segFile // the segment's files (one base offset)
	active bool
	// prev is the same segment in an earlier scan, prevPart that scan's
	// partition (nil: none).
	prev     *Segment
	prevPart *Partition
}

// readSegment measures one segment's files and finds its largest
// timestamp (spec R1.3). For the active segment it also finds the log end
// offset and the expiry curve (R1.6). Bytes of files that belong to no
// segment go to p. ok is false when the segment's files vanished after the
// directory was listed: Kafka renames all of a segment's files when it
// deletes it.
func (s *Scanner) readSegment(sf segmentFiles, p *Partition, buf []byte) (seg Segment, ok bool) {
	d, dir, group, active, prev, prevPart := sf.dir, sf.path, sf.files, sf.active, sf.prev, sf.prevPart
	seg = Segment{BaseOffset: group[0].base}
	var t timeIndexState
	if !s.openPendingTimeIndex(sf, &t) {
		return seg, false
	}
	defer t.close()
	var logName, indexName, timeName string
	var logMtime, timeSize, indexSize, indexBytes int64
	for _, f := range group {
		if f.pending {
			continue // could not be measured (reported)
		}
		switch f.kind {
		case fileLog:
			seg.LogBytes, logMtime, logName = f.apparent, f.mtime, ".log"
		case fileIndex:
			indexName, indexSize = ".index", f.apparent
		case fileTimeIndex:
			timeName, timeSize = ".timeindex", f.apparent
		case fileDeleted:
			p.PendingDeleteBytes += f.disk
			p.DiskBytes += f.disk
			continue
		case fileCleaned, fileSwap, fileUnknown, fileMeta:
			p.OtherBytes += f.disk
			p.DiskBytes += f.disk
			continue
		}
		seg.DiskBytes += f.disk
		if f.kind != fileLog {
			indexBytes += f.apparent
		}
	}
	seg.IndexApparentBytes = uint32(min(max(indexBytes, 0), math.MaxUint32))
	t.ts = -1
	if prev != nil && prev.LogBytes == seg.LogBytes && prev.IndexApparentBytes == seg.IndexApparentBytes && prev.DiskBytes == seg.DiskBytes && prev.TimestampSource != 0 {
		// Unchanged segment: a closed segment's time index is as it was;
		// an active segment that did not grow got no record and no index
		// entry (Kafka appends both together).
		seg.LargestTimestampMs, seg.TimestampSource = prev.LargestTimestampMs, prev.TimestampSource
		if active {
			p.LogEndOffset, p.OpenExpiry, p.ActiveWrittenBytes = prevPart.LogEndOffset, prevPart.OpenExpiry, prevPart.ActiveWrittenBytes
		}
		return seg, true
	}
	if timeName != "" {
		// The active segment's time index entries read here stay in the
		// first half of buf for readActive (its offset index goes to the
		// second half): its expiry curve samples both.
		tbuf := buf
		if active {
			tbuf = buf[:len(buf)/2]
		}
		if !s.readTimeIndex(sf, timeSize, &t, tbuf) {
			return seg, false
		}
	}
	ts := t.ts
	if active && logName != "" {
		var ti indexFile
		if t.f != nil {
			ti = t.f
		}
		ts = s.readActive(activeSegment{dir: d, path: dir, base: seg.BaseOffset, logName: logName, indexName: indexName,
			indexSize: indexSize, logBytes: seg.LogBytes, timeIndex: ti, timeEntries: t.n, timeWindow: t.w, timestamp: ts}, p, buf)
	}
	if ts >= 0 {
		seg.LargestTimestampMs, seg.TimestampSource = ts, TimestampFromTimeIndex
	} else {
		seg.LargestTimestampMs, seg.TimestampSource = logMtime, TimestampFromMtime
	}
	return seg, true
}

// timeIndexState is a segment's time index as readSegment reads it.
type timeIndexState struct {
	f       segReader // the open file (nil: none)
	openErr error     // why a time index that was measured could not be opened
	ts, n   int64     // its last timestamp (-1: none) and valid entries
	w       indexWindow
}

func (t *timeIndexState) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// openPendingTimeIndex opens and measures the segment's pending time
// index, if it has one (see listPartition), and fills in its sizes: t.f
// is the open file, t.openErr why a time index that could be measured
// could not be opened (reported by readTimeIndex like any unreadable
// time index). It returns false when the file vanished since the
// listing, like a segment file readSegment cannot open: Kafka renames all
// of a segment's files when it deletes it.
func (s *Scanner) openPendingTimeIndex(sf segmentFiles, t *timeIndexState) bool {
	for i := range sf.files {
		f := &sf.files[i]
		if !f.pending {
			continue
		}
		name := func() string { return filepath.Join(sf.path, FileName(f.base, ".timeindex")) }
		r, st, err := openStatSegmentFile(sf.dir, f.base, ".timeindex")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Listed but not readable (permission, ...): measure it as
			// the listing would have.
			openErr := err
			if st, err = statSegmentFile(sf.dir, f.base, ".timeindex"); err == nil {
				t.openErr = openErr
			}
		}
		if err != nil {
			s.report(errKind(err), name(), err)
			if errors.Is(err, fs.ErrNotExist) {
				return false
			}
			continue // left pending: not counted
		}
		if st.isDir { // replaced by a directory since getdents typed it
			if r != nil {
				r.Close()
			}
			s.report(ErrBadName, name(), errors.New("unexpected directory in a partition directory"))
			continue
		}
		f.pending, f.disk, f.apparent, f.mtime = false, st.disk, st.apparent, st.mtimeMs
		t.f = r
	}
	return true
}

// readTimeIndex opens the segment's time index of the given size unless
// it is open already, and reads its last timestamp and valid entries into
// t. It returns false when the file vanished since the listing.
func (s *Scanner) readTimeIndex(sf segmentFiles, size int64, t *timeIndexState, buf []byte) bool {
	base := sf.files[0].base
	err := t.openErr
	if t.f == nil && err == nil {
		t.f, err = openSegmentFile(sf.dir, base, ".timeindex")
	}
	if err != nil {
		t.f = nil
		s.report(errKind(err), filepath.Join(sf.path, FileName(base, ".timeindex")), err)
		return !errors.Is(err, fs.ErrNotExist)
	}
	t.ts, t.n, t.w, err = lastTimestampWindow(t.f, size, buf)
	if shrunk(err) {
		t.ts, t.n, t.w, err = -1, 0, indexWindow{}, nil // still moving: the next read sees it settled
	}
	if err != nil {
		s.report(errKind(err), filepath.Join(sf.path, FileName(base, ".timeindex")), fmt.Errorf("read time index: %w", err))
	}
	return true
}

// prevPartition finds a partition in an earlier scan (partitions are sorted).
func prevPartition(prev *LogDir, topic string, part int32, kind PartitionKind, dir string) *Partition {
	if prev == nil {
		return nil
	}
	ps := prev.Partitions
	i, found := slices.BinarySearchFunc(ps, Partition{Topic: topic, Partition: part, Kind: kind, Dir: dir},
		func(a *Partition, b Partition) int { return partitionOrder(*a, b) })
	if !found {
		return nil
	}
	return ps[i]
}

// prevActive returns the earlier scan's active segment when it has the
// same base offset.
func prevActive(prev *Partition, base int64) *Segment {
	if prev == nil || len(prev.Segments) == 0 || prev.Segments[len(prev.Segments)-1].BaseOffset != base {
		return nil
	}
	return &prev.Segments[len(prev.Segments)-1]
}

// prevSegment finds a closed segment of an earlier scan by base offset;
// the earlier active segment does not count (it was still growing).
func prevSegment(prev *Partition, base int64) *Segment {
	if prev == nil || len(prev.Segments) < 2 {
		return nil
	}
	closed := prev.Segments[:len(prev.Segments)-1]
	i, found := slices.BinarySearchFunc(closed, base, func(s Segment, b int64) int {
		switch {
		case s.BaseOffset < b:
			return -1
		case s.BaseOffset > b:
			return 1
		}
		return 0
	})
	if !found {
		return nil
	}
	return &closed[i]
}

// shrunk reports whether err says a file ended before the size the
// listing saw. For the active segment's index files that is the broker's
// roll racing the scan: on roll Kafka trims the index files of the segment
// that stops being active to their valid entries
// (LogSegment.onBecomeInactiveSegment), so an index listed at its
// preallocated size can be shorter when it is read. Not an I/O error:
// validEntries already re-reads an index at its current size, so what is
// left here is a file still moving; the next read sees it settled.
func shrunk(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// activeSegment is what readActive needs of the active segment.
type activeSegment struct {
	dir                 partDir // the partition directory
	path                string  // its path, for errors
	base                int64
	logName, indexName  string // file suffixes; "" when the file is missing
	indexSize, logBytes int64
	// timeIndex is the open time index (nil: none) and timeEntries its
	// valid entries, timeWindow those of them still in the first half of
	// readActive's buf; timestamp is its last one (-1: none).
	timeIndex   indexFile
	timeEntries int64
	timeWindow  indexWindow
	timestamp   int64
}

// readActive reads what only the active segment needs: the batches
// appended since its last index entry (their max timestamp and the log end
// offset) and the expiry curve. It sets p's log end offset, expiry curve
// and, when the .log file is longer than its record batches (a
// preallocated segment, preallocate=true: Kafka creates it segment.bytes
// long and counts only what was written), ActiveWrittenBytes; it returns
// the segment's largest timestamp (-1: none).
func (s *Scanner) readActive(a activeSegment, p *Partition, buf []byte) int64 {
	d, dir, base, logName, indexName, indexSize, logBytes := a.dir, a.path, a.base, a.logName, a.indexName, a.indexSize, a.logBytes
	ti, nTime, ts := a.timeIndex, a.timeEntries, a.timestamp
	var nOff, pos int64
	var oi indexFile
	var ow indexWindow
	obuf := buf[len(buf)/2:] // the first half may hold a.timeWindow
	if indexName != "" {
		f, err := openSegmentFile(d, base, indexName)
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, FileName(base, indexName)), err)
		} else {
			defer f.Close()
			{
				if indexSize%offsetEntrySize != 0 {
					s.report(ErrCorruptIndex, filepath.Join(dir, FileName(base, indexName)), errors.New("offset index length is not a multiple of 8"))
				}
				nOff, ow, err = validEntriesWindow(f, indexSize, offsetEntrySize, obuf, false)
				if err == nil {
					pos, err = lastOffsetPositionWindow(f, nOff, ow, obuf)
				}
				if shrunk(err) {
					nOff, pos = 0, 0 // still moving: walk the log from its start
				} else if err != nil {
					s.report(errKind(err), filepath.Join(dir, FileName(base, indexName)), fmt.Errorf("read offset index: %w", err))
					nOff, pos = 0, 0
				} else {
					oi = f
				}
			}
		}
	}
	// Before the log walk, which reads into all of buf: the expiry curve
	// samples the index entries still there.
	if ti != nil && oi != nil && nTime > 0 && nOff > 0 {
		pts, err := sampleExpiryWindows(indexRead{ti, nTime, a.timeWindow}, indexRead{oi, nOff, ow}, buf)
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, FileName(base, indexName)), fmt.Errorf("sample indexes: %w", err))
		}
		p.OpenExpiry = pts
	}
	if lf, err := openSegmentFile(d, base, logName); err != nil {
		s.report(errKind(err), filepath.Join(dir, FileName(base, logName)), err)
	} else {
		if pos > logBytes {
			// The broker appends to the log, then indexes what it appended:
			// an index read after the log's size was taken can point past
			// that size. Only past the log's current size is it corrupt.
			if size, err := lf.Seek(0, io.SeekEnd); err == nil && pos <= size {
				logBytes = size
			} else {
				s.report(ErrCorruptIndex, filepath.Join(dir, FileName(base, indexName)), errors.New("offset index points past the end of the log"))
				pos = 0
			}
		}
		t, err := walkBatches(lf, pos, logBytes, buf)
		maxTs, next := t.maxTs, t.next
		lf.Close()
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, FileName(base, logName)), fmt.Errorf("read log tail: %w", err))
		}
		if t.zeros && t.end < logBytes {
			p.ActiveWrittenBytes = t.end
		}
		ts = max(ts, maxTs)
		p.LogEndOffset = next
		if next < 0 && logBytes == 0 {
			p.LogEndOffset = -1
		}
	}
	return ts
}

// duDir sums the disk bytes of sub, a directory inside the partition
// directory name under parent.
func (s *Scanner) duDir(parent *os.Root, name, sub, full string) int64 {
	root, err := parent.OpenRoot(name)
	if err != nil {
		s.report(errKind(err), full, err)
		return 0
	}
	defer root.Close()
	return s.duRoot(root, sub, full)
}

// duRoot sums the disk bytes of name under root, recursively (for
// directories the scanner does not otherwise understand).
func (s *Scanner) duRoot(root *os.Root, name, full string) int64 {
	fi, err := root.Lstat(name)
	if err != nil {
		s.report(errKind(err), full, err)
		return 0
	}
	total := diskBytes(fi)
	if !fi.IsDir() {
		return total
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		s.report(errKind(err), full, err)
		return total
	}
	defer sub.Close()
	entries, err := readDir(sub, ".")
	if err != nil {
		s.report(errKind(err), full, err)
		return total
	}
	for _, e := range entries {
		total += s.duRoot(sub, e.Name(), filepath.Join(full, e.Name()))
	}
	return total
}
