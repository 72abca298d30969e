package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Scanner reads broker log dirs from disk. It keeps no state about their
// content, only cumulative error counts (spec R6), so one Scanner may serve
// full scans and partition re-reads from several goroutines.
type Scanner struct {
	logger *slog.Logger
	bufs   sync.Pool

	mu     sync.Mutex
	errs   map[ErrorKind]uint64
	logged map[string]struct{}
}

// maxLoggedErrors bounds the set of paths whose error was already logged.
const maxLoggedErrors = 4096

// scratchSize is the per-call read buffer (index tails, batch headers).
const scratchSize = 16 << 10

// NewScanner returns a Scanner that logs each distinct bad input once.
func NewScanner(logger *slog.Logger) *Scanner {
	s := &Scanner{
		logger: logger.With("component", "scanner"),
		errs:   make(map[ErrorKind]uint64),
		logged: make(map[string]struct{}),
	}
	s.bufs.New = func() any { b := make([]byte, scratchSize); return &b }
	return s
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

// report counts a bad input and logs it the first time it is seen.
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
		s.logger.Warn("scan error", "kind", string(kind), "path", path, "err", err)
	}
}

// errKind maps an I/O error to its ErrorKind.
func errKind(err error) ErrorKind {
	switch {
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
func (s *Scanner) ScanLogDir(path string) LogDir {
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
	entries, err := readDir(root, ".")
	if err != nil {
		kind := errKind(err)
		if kind == ErrVanished {
			kind = ErrLogDirMissing
		}
		s.report(kind, path, err)
		ld.Err = fmt.Errorf("read log dir %s: %w", path, err)
		return ld
	}
	if data, err := root.ReadFile(metaProperties); err == nil {
		id, cluster, perr := parseMetaProperties(data)
		ld.BrokerID, ld.ClusterID = id, cluster
		if perr != nil {
			s.report(ErrCorruptIndex, filepath.Join(path, metaProperties), perr)
		}
	} else {
		s.report(errKind(err), filepath.Join(path, metaProperties), err)
	}
	if fi, err := root.Lstat("."); err == nil {
		ld.DiskBytes += diskBytes(fi)
		ld.OtherBytes += diskBytes(fi)
	}
	cp := s.readCheckpoints(root, path)
	bufp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bufp)
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(path, name)
		if !e.IsDir() {
			fi, err := root.Lstat(name)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) { // checkpoint files are replaced by rename all the time
					s.report(errKind(err), full, err)
				}
				continue
			}
			if fi.IsDir() {
				continue // raced with a rename; the next scan sees it
			}
			d := diskBytes(fi)
			ld.DiskBytes += d
			if strings.HasSuffix(name, ".deleted") {
				ld.PendingDeleteBytes += d
			} else {
				ld.OtherBytes += d
			}
			continue
		}
		topic, part, kind, ok := ParsePartitionDirName(name)
		if !ok {
			d := s.duRoot(root, name, full)
			ld.DiskBytes += d
			ld.OtherBytes += d
			if name != "lost+found" {
				s.report(ErrBadName, full, errors.New("not a partition directory name"))
			}
			continue
		}
		p, err := s.readPartition(root, name, full, topic, part, kind, &cp, *bufp)
		if err != nil {
			s.report(errKind(err), full, err)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		ld.DiskBytes += p.DiskBytes
		ld.PendingDeleteBytes += p.PendingDeleteBytes
		ld.Partitions = append(ld.Partitions, p)
	}
	sortPartitions(ld.Partitions)
	return ld
}

func sortPartitions(ps []Partition) {
	slices.SortFunc(ps, func(a, b Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if a.Partition != b.Partition {
			if a.Partition < b.Partition {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
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
// may cache them). The live watcher calls it on file events. A directory
// that is gone returns an error matching fs.ErrNotExist; other bad input is
// counted, logged once and skipped.
func (s *Scanner) ReadPartition(logDir, dir string, cp Checkpoints) (Partition, error) {
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
	bufp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bufp)
	p, err := s.readPartition(root, dir, full, topic, part, kind, &cp, *bufp)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.report(errKind(err), full, err)
	}
	return p, err
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

// segFile is one file of a partition directory, parsed and measured.
type segFile struct {
	base     int64
	kind     fileKind
	name     string
	disk     int64
	apparent int64
	mtime    int64 // unix ms
}

// readPartition reads the partition directory name under parent.
func (s *Scanner) readPartition(parent *os.Root, name, full, topic string, part int32, kind PartitionKind, cp *Checkpoints, buf []byte) (Partition, error) {
	p := Partition{Topic: topic, Partition: part, Dir: name, Kind: kind, LogStartOffset: -1, HighWatermark: -1, LogEndOffset: -1}
	root, err := parent.OpenRoot(name)
	if err != nil {
		return p, fmt.Errorf("open partition dir: %w", err)
	}
	defer root.Close()
	if fi, err := root.Lstat("."); err == nil {
		p.DiskBytes += diskBytes(fi) // the directory itself, as du counts it
		if kind == KindDeleted {
			p.PendingDeleteBytes += diskBytes(fi)
		} else {
			p.OtherBytes += diskBytes(fi)
		}
	}
	entries, err := readDir(root, ".")
	if err != nil {
		return p, fmt.Errorf("read partition dir: %w", err)
	}
	if kind == KindDeleted {
		// A deleted topic's directory: everything in it waits for deletion.
		for _, e := range entries {
			d := s.duRoot(root, e.Name(), filepath.Join(full, e.Name()))
			p.DiskBytes += d
			p.PendingDeleteBytes += d
		}
		return p, nil
	}
	files := make([]segFile, 0, len(entries))
	for _, e := range entries {
		fname := e.Name()
		if e.IsDir() {
			d := s.duRoot(root, fname, filepath.Join(full, fname))
			p.DiskBytes += d
			p.OtherBytes += d
			s.report(ErrBadName, filepath.Join(full, fname), errors.New("unexpected directory in a partition directory"))
			continue
		}
		base, fk, ok := parseSegmentFileName(fname)
		if !ok {
			s.report(ErrBadName, filepath.Join(full, fname), errors.New("not a segment file name"))
		}
		f := segFile{base: base, kind: fk, name: fname, disk: -1}
		if fk != fileTimeIndex { // time indexes are measured when opened
			fi, err := root.Lstat(fname)
			if err != nil {
				s.report(errKind(err), filepath.Join(full, fname), err)
				continue
			}
			f.disk, f.apparent, f.mtime = diskBytes(fi), fi.Size(), fi.ModTime().UnixMilli()
		}
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b segFile) int {
		if a.base != b.base {
			if a.base < b.base {
				return -1
			}
			return 1
		}
		return int(a.kind) - int(b.kind)
	})
	// Segments: one per base offset that has a .log file.
	nseg := 0
	for _, f := range files {
		if f.kind == fileLog {
			nseg++
		}
	}
	p.Segments = make([]Segment, 0, nseg)
	tp := TopicPartition{topic, part}
	if kind == KindLive {
		if v, ok := cp.LogStart[tp]; ok {
			p.LogStartOffset = v
		}
		if v, ok := cp.HighWatermark[tp]; ok {
			p.HighWatermark = v
		}
	}
	for i := 0; i < len(files); {
		j := i
		for j < len(files) && files[j].base == files[i].base {
			j++
		}
		group := files[i:j]
		i = j
		hasLog := false
		for _, f := range group {
			if f.kind == fileLog {
				hasLog = true
			}
		}
		if !hasLog || group[0].base < 0 {
			for _, f := range group {
				if f.disk < 0 {
					fi, err := root.Lstat(f.name)
					if err != nil {
						s.report(errKind(err), filepath.Join(full, f.name), err)
						continue
					}
					f.disk, f.apparent = diskBytes(fi), fi.Size()
				}
				p.DiskBytes += f.disk
				if f.kind == fileDeleted {
					p.PendingDeleteBytes += f.disk
				} else {
					p.OtherBytes += f.disk
				}
			}
			continue
		}
		active := nseg == len(p.Segments)+1
		seg := s.readSegment(root, full, group, active, &p, buf)
		p.DiskBytes += seg.DiskBytes
		p.Segments = append(p.Segments, seg)
	}
	return p, nil
}

// readSegment measures one segment's files and finds its largest
// timestamp (spec R1.3). For the active segment it also finds the log end
// offset and the expiry curve (R1.6).
func (s *Scanner) readSegment(root *os.Root, dir string, group []segFile, active bool, p *Partition, buf []byte) Segment {
	seg := Segment{BaseOffset: group[0].base, LargestTimestamp: time.Time{}}
	var logName, indexName, timeName string
	var logMtime int64
	for _, f := range group {
		switch f.kind {
		case fileLog:
			seg.LogBytes, logMtime, logName = f.apparent, f.mtime, f.name
		case fileIndex:
			indexName = f.name
		case fileTimeIndex:
			timeName = f.name
			continue // measured below
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
		seg.ApparentBytes += f.apparent
	}
	ts := int64(-1)
	var nTime int64
	var ti *os.File
	if timeName != "" {
		var err error
		ti, err = root.Open(timeName)
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, timeName), err)
		} else {
			defer ti.Close()
			fi, err := ti.Stat()
			if err != nil {
				s.report(errKind(err), filepath.Join(dir, timeName), err)
			} else {
				seg.DiskBytes += diskBytes(fi)
				seg.ApparentBytes += fi.Size()
				ts, nTime, err = lastTimestamp(ti, fi.Size(), buf)
				if err != nil {
					s.report(errKind(err), filepath.Join(dir, timeName), fmt.Errorf("read time index: %w", err))
				}
			}
		}
	}
	if active && logName != "" {
		s.readActive(root, dir, logName, indexName, seg.LogBytes, ti, nTime, &ts, p, buf)
	}
	if ts >= 0 {
		seg.LargestTimestamp, seg.TimestampSource = time.UnixMilli(ts), TimestampFromTimeIndex
	} else {
		seg.LargestTimestamp, seg.TimestampSource = time.UnixMilli(logMtime), TimestampFromMtime
	}
	return seg
}

// readActive reads what only the active segment needs: the batches
// appended since its last index entry (their max timestamp and the log end
// offset) and the expiry curve.
func (s *Scanner) readActive(root *os.Root, dir, logName, indexName string, logBytes int64, ti *os.File, nTime int64, ts *int64, p *Partition, buf []byte) {
	var nOff, pos int64
	var oi *os.File
	if indexName != "" {
		f, err := root.Open(indexName)
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, indexName), err)
		} else {
			defer f.Close()
			if fi, err := f.Stat(); err == nil {
				if fi.Size()%offsetEntrySize != 0 {
					s.report(ErrCorruptIndex, filepath.Join(dir, indexName), errors.New("offset index length is not a multiple of 8"))
				}
				if nOff, err = validEntries(f, fi.Size(), offsetEntrySize, buf); err == nil {
					pos, err = lastOffsetPosition(f, nOff, buf)
				}
				if err != nil {
					s.report(errKind(err), filepath.Join(dir, indexName), fmt.Errorf("read offset index: %w", err))
					nOff, pos = 0, 0
				} else {
					oi = f
				}
			}
		}
	}
	if pos > logBytes {
		s.report(ErrCorruptIndex, filepath.Join(dir, indexName), errors.New("offset index points past the end of the log"))
		pos = 0
	}
	if lf, err := root.Open(logName); err != nil {
		s.report(errKind(err), filepath.Join(dir, logName), err)
	} else {
		maxTs, next, err := batchTail(lf, pos, logBytes, buf)
		lf.Close()
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, logName), fmt.Errorf("read log tail: %w", err))
		}
		if maxTs > *ts {
			*ts = maxTs
		}
		p.LogEndOffset = next
		if next < 0 && logBytes == 0 {
			p.LogEndOffset = -1
		}
	}
	if ti != nil && oi != nil && nTime > 0 && nOff > 0 {
		pts, err := sampleExpiry(ti, nTime, oi, nOff, buf)
		if err != nil {
			s.report(errKind(err), filepath.Join(dir, indexName), fmt.Errorf("sample indexes: %w", err))
		}
		p.OpenExpiry = pts
	}
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
