package logdirgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Log writes one partition directory incrementally, as a broker's log
// does: Append adds record batches to the active segment with their index
// entries and rolls at segment.bytes, Roll closes the active segment as
// Kafka does, DeleteOldest renames the oldest segments' files to .deleted
// and RemoveFiles removes them later, and Checkpoint is the partition's
// line for WriteCheckpoints. A Log is not safe for concurrent use.
type Log struct {
	dir          string
	topic        string
	partition    int32
	spec         Spec
	segmentBytes int64
	segs         []SegmentResult // oldest first; the last is the active segment
	x            indexer         // the active segment's index state
	nOff, nTime  int64           // entries in the active segment's index files
	logStart     int64
	next         int64 // log end offset
	buf          []byte
}

// segmentSuffixes are the files Kafka renames to .deleted with a segment.
var segmentSuffixes = []string{".log", ".index", ".timeindex", ".txnindex", ".snapshot"}

// OpenLog opens the partition directory p that Generate wrote under logDir
// with spec, to be appended to with segment.bytes = segmentBytes. It reads
// the active segment's index files back, as a broker does on start.
func OpenLog(logDir string, spec Spec, p PartitionResult, segmentBytes int64) (*Log, error) {
	spec = spec.withDefaults()
	if len(p.Segments) == 0 || p.Dir == "" {
		return nil, fmt.Errorf("logdirgen: partition %s-%d has no directory or segments", p.Topic, p.Partition)
	}
	if segmentBytes <= 0 {
		return nil, fmt.Errorf("logdirgen: segment.bytes %d must be positive", segmentBytes)
	}
	l := &Log{dir: filepath.Join(logDir, p.Dir), topic: p.Topic, partition: p.Partition, spec: spec,
		segmentBytes: segmentBytes, segs: slices.Clone(p.Segments), logStart: p.LogStartOffset, next: p.LogEndOffset,
		x: newIndexer(spec.IndexIntervalBytes)}
	act := l.active()
	off, err := readEntries(filepath.Join(l.dir, FileName(act.BaseOffset, ".index")), offsetEntryBytes)
	if err != nil {
		return nil, err
	}
	tim, err := readEntries(filepath.Join(l.dir, FileName(act.BaseOffset, ".timeindex")), timeEntryBytes)
	if err != nil {
		return nil, err
	}
	l.nOff, l.nTime = int64(len(off)/offsetEntryBytes), int64(len(tim)/timeEntryBytes)
	l.x.bytesSince = act.LogBytes
	if len(off) > 0 {
		l.x.lastEntryPos = int64(binary.BigEndian.Uint32(off[len(off)-4:]))
		l.x.bytesSince = act.LogBytes - l.x.lastEntryPos
	}
	if len(tim) > 0 {
		l.x.lastTimeEntry = int64(binary.BigEndian.Uint64(tim[len(tim)-timeEntryBytes:]))
	}
	if act.LogBytes > 0 {
		l.x.maxTs, l.x.offOfMax = act.LargestTimestamp.UnixMilli(), act.Records-1
	}
	return l, nil
}

// readEntries returns the valid entries at the start of an index file: up
// to the first all-zero entry of a preallocated file.
func readEntries(path string, size int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	n := 0
	for n+size <= len(b) && slices.ContainsFunc(b[n:n+size], func(c byte) bool { return c != 0 }) {
		n += size
	}
	return b[:n], nil
}

func (l *Log) active() *SegmentResult { return &l.segs[len(l.segs)-1] }

// Topic and Partition name the log.
func (l *Log) Topic() string    { return l.topic }
func (l *Log) Partition() int32 { return l.partition }

// BatchBytes is the size of each record batch Append writes.
func (l *Log) BatchBytes() int64 { return l.spec.BatchBytes }

// Segments returns the segments, oldest first; the last is the active one.
func (l *Log) Segments() []SegmentResult { return slices.Clone(l.segs) }

// LogStartOffset is the first offset a consumer can read.
func (l *Log) LogStartOffset() int64 { return l.logStart }

// LogEndOffset is the offset the next record gets.
func (l *Log) LogEndOffset() int64 { return l.next }

// AdvanceLogStart moves the log start offset up to offset (never down), as
// DeleteRecords does; the segments wholly below it stay until deleted.
func (l *Log) AdvanceLogStart(offset int64) { l.logStart = max(l.logStart, offset) }

// Checkpoint is the log's line in the checkpoint files: everything appended
// is replicated (the high watermark is the log end offset) and the
// recovery point is the active segment's base offset.
func (l *Log) Checkpoint() Checkpoint {
	return Checkpoint{Topic: l.topic, Partition: l.partition, LogStartOffset: l.logStart,
		FirstSegment: l.segs[0].BaseOffset, HighWatermark: l.next, RecoveryPoint: l.active().BaseOffset}
}

// Append appends batches record batches of BatchBytes, every record
// stamped ts, to the active segment, with the index entries Kafka writes,
// rolling first whenever the next batch would take a non-empty segment past
// segment.bytes.
func (l *Log) Append(batches int64, ts time.Time) error {
	size := l.spec.BatchBytes
	records := max(size/DefaultRecordBytes, 1)
	tsMs := ts.UnixMilli()
	for batches > 0 {
		act := l.active()
		if act.LogBytes > 0 && act.LogBytes+size > l.segmentBytes {
			if err := l.Roll(ts); err != nil {
				return err
			}
			act = l.active()
		}
		n := min(batches, max((l.segmentBytes-act.LogBytes)/size, 1))
		l.buf = slices.Grow(l.buf[:0], int(n*size))[:n*size]
		clear(l.buf)
		for i := range n {
			pos, first := act.LogBytes+i*size, l.next+i*records
			l.x.batch(pos, size, first+records-1-act.BaseOffset, tsMs)
			putBatchHeader(l.buf[i*size:], first, size, records-1, tsMs)
		}
		logPath := filepath.Join(l.dir, FileName(act.BaseOffset, ".log"))
		if err := writeAt(logPath, act.LogBytes, l.buf); err != nil {
			return err
		}
		// Written at ts: the modification time is the clock the records
		// were stamped with (it matters while the time index is empty).
		if err := os.Chtimes(logPath, ts, ts); err != nil {
			return fmt.Errorf("set segment mtime: %w", err)
		}
		if err := l.flushIndexes(); err != nil {
			return err
		}
		if act.LogBytes == 0 || tsMs > act.LargestTimestamp.UnixMilli() {
			act.LargestTimestamp = time.UnixMilli(tsMs)
		}
		act.LogBytes += n * size
		act.Records += n * records
		l.next += n * records
		batches -= n
	}
	return nil
}

// flushIndexes writes the active segment's pending index entries.
func (l *Log) flushIndexes() error {
	act := l.active()
	if len(l.x.off) > 0 {
		if err := writeAt(filepath.Join(l.dir, FileName(act.BaseOffset, ".index")), l.nOff*offsetEntryBytes, l.x.off); err != nil {
			return err
		}
		l.nOff += int64(len(l.x.off) / offsetEntryBytes)
		l.x.off = l.x.off[:0]
	}
	if len(l.x.time) > 0 {
		if err := writeAt(filepath.Join(l.dir, FileName(act.BaseOffset, ".timeindex")), l.nTime*timeEntryBytes, l.x.time); err != nil {
			return err
		}
		l.nTime += int64(len(l.x.time) / timeEntryBytes)
		l.x.time = l.x.time[:0]
		act.TimeIndexed = time.UnixMilli(l.x.lastTimeEntry)
	}
	return nil
}

// Roll closes the active segment as Kafka does (its largest timestamp
// appended to the time index, both index files trimmed to their entries)
// and opens a new one at the log end offset: an empty .log, preallocated
// index files and a producer snapshot. An empty active segment is not
// rolled.
func (l *Log) Roll(now time.Time) error {
	act := l.active()
	if act.LogBytes == 0 {
		return nil
	}
	l.x.close()
	if err := l.flushIndexes(); err != nil {
		return err
	}
	for _, f := range []struct {
		suffix string
		size   int64
	}{{".index", l.nOff * offsetEntryBytes}, {".timeindex", l.nTime * timeEntryBytes}} {
		if err := os.Truncate(filepath.Join(l.dir, FileName(act.BaseOffset, f.suffix)), f.size); err != nil {
			return fmt.Errorf("trim index: %w", err)
		}
	}
	base := l.next
	if err := writeFile(filepath.Join(l.dir, FileName(base, ".log")), nil, now); err != nil {
		return err
	}
	for _, f := range []struct {
		suffix string
		entry  int64
	}{{".index", offsetEntryBytes}, {".timeindex", timeEntryBytes}} {
		path := filepath.Join(l.dir, FileName(base, f.suffix))
		if err := writeIndex(path, nil, preallocated(l.spec.SegmentIndexBytes, f.entry), time.Time{}); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(l.dir, FileName(base, ".snapshot")), nil, time.Time{}); err != nil {
		return err
	}
	// Until it holds records, a segment's largest timestamp is its .log
	// file's modification time.
	l.segs = append(l.segs, SegmentResult{BaseOffset: base, LargestTimestamp: time.UnixMilli(now.UnixMilli())})
	l.x, l.nOff, l.nTime = newIndexer(l.spec.IndexIntervalBytes), 0, 0
	return nil
}

// DeleteOldest deletes the n oldest segments as Kafka's retention does:
// their files are renamed to .deleted (RemoveFiles removes them after
// file.delete.delay.ms) and the log start offset moves up to the first
// segment kept. When n covers the active segment, it is rolled first (an
// empty active segment is kept). It returns the renamed files' paths.
func (l *Log) DeleteOldest(n int, now time.Time) ([]string, error) {
	if n >= len(l.segs) {
		if err := l.Roll(now); err != nil {
			return nil, err
		}
		n = min(n, len(l.segs)-1)
	}
	if n <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("read partition dir: %w", err)
	}
	gone := map[string]bool{}
	for _, s := range l.segs[:n] {
		for _, suf := range segmentSuffixes {
			gone[FileName(s.BaseOffset, suf)] = true
		}
	}
	var renamed []string
	for _, e := range entries {
		if !gone[e.Name()] {
			continue
		}
		from := filepath.Join(l.dir, e.Name())
		if err := os.Rename(from, from+".deleted"); err != nil {
			return renamed, fmt.Errorf("rename segment file: %w", err)
		}
		renamed = append(renamed, from+".deleted")
	}
	l.segs = slices.Delete(l.segs, 0, n)
	l.logStart = max(l.logStart, l.segs[0].BaseOffset)
	return renamed, nil
}

// RemoveFiles removes files (the .deleted files of DeleteOldest once
// file.delete.delay.ms has passed); files already gone are not an error.
func RemoveFiles(paths []string) error {
	var errs []error
	for _, p := range paths {
		if !strings.HasSuffix(p, ".deleted") {
			errs = append(errs, fmt.Errorf("remove %s: not a .deleted file", p))
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeAt(path string, off int64, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	if _, err := f.WriteAt(data, off); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}
