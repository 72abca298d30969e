package logdirgen

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file is the package's one rendering of Kafka's on-disk format:
// record batch headers, offset and time index entries (and when Kafka
// writes them), preallocated index files, and offset checkpoint files.
// Generate (a whole log dir at once) and Log (appends, rolls, deletions)
// both write through it.

// Entry sizes of the index files.
const (
	offsetEntryBytes = 8  // 4-byte relative offset, 4-byte position
	timeEntryBytes   = 12 // 8-byte timestamp, 4-byte relative offset
	batchHeaderBytes = 61 // record batch v2 header
)

// putBatchHeader writes a record batch v2 header (61 bytes).
func putBatchHeader(h []byte, baseOffset, size, lastOffsetDelta, maxTs int64) {
	be := binary.BigEndian
	be.PutUint64(h[0:], uint64(baseOffset))
	be.PutUint32(h[8:], uint32(size-12))
	be.PutUint32(h[12:], 0) // partition leader epoch
	h[16] = 2               // magic
	be.PutUint32(h[17:], 0) // crc (not computed)
	be.PutUint16(h[21:], 0) // attributes
	be.PutUint32(h[23:], uint32(lastOffsetDelta))
	be.PutUint64(h[27:], uint64(maxTs)) // base timestamp (same, simplified)
	be.PutUint64(h[35:], uint64(maxTs)) // max timestamp
	be.PutUint64(h[43:], ^uint64(0))    // producer id -1
	be.PutUint16(h[51:], 0xffff)        // producer epoch -1
	be.PutUint32(h[53:], 0xffffffff)    // base sequence -1
	be.PutUint32(h[57:], uint32(lastOffsetDelta+1))
}

// indexer decides the index entries of one segment as Kafka's
// LogSegment.append does: before appending a batch, when more than
// index.interval.bytes went by since the last entry, an offset index entry
// for the batch (its last offset, its position) and, when the largest
// timestamp so far grew past the last time index entry, a time index entry
// (that timestamp, the offset of its record). On roll (close) the
// segment's largest timestamp becomes a last time index entry. Entries
// not yet written to the files wait in off and time.
type indexer struct {
	interval      int64
	bytesSince    int64
	maxTs         int64 // largest timestamp so far, -1 before any
	offOfMax      int64 // relative offset of maxTs
	lastTimeEntry int64 // timestamp of the last time index entry, -1 none
	lastEntryPos  int64 // position of the last offset index entry, -1 none
	off, time     []byte
}

func newIndexer(interval int64) indexer {
	return indexer{interval: interval, maxTs: -1, lastTimeEntry: -1, lastEntryPos: -1}
}

// batch records a batch of size bytes at position pos whose last record has
// relative offset lastRel and whose max timestamp is ts (-1: none).
func (x *indexer) batch(pos, size, lastRel, ts int64) {
	if ts > x.maxTs {
		x.maxTs, x.offOfMax = ts, lastRel
	}
	if x.bytesSince > x.interval {
		x.off = binary.BigEndian.AppendUint32(x.off, uint32(lastRel))
		x.off = binary.BigEndian.AppendUint32(x.off, uint32(pos))
		x.lastEntryPos = pos
		x.timeEntry()
		x.bytesSince = 0
	}
	x.bytesSince += size
}

// close adds the entry a roll appends: the segment's largest timestamp.
func (x *indexer) close() { x.timeEntry() }

func (x *indexer) timeEntry() {
	if x.maxTs > x.lastTimeEntry {
		x.time = binary.BigEndian.AppendUint64(x.time, uint64(x.maxTs))
		x.time = binary.BigEndian.AppendUint32(x.time, uint32(x.offOfMax))
		x.lastTimeEntry = x.maxTs
	}
}

// preallocated is the size Kafka gives an active segment's index file:
// segment.index.bytes rounded down to whole entries.
func preallocated(segmentIndexBytes, entry int64) int64 { return segmentIndexBytes / entry * entry }

// writeIndex writes entries and, for an active segment, extends the file to
// prealloc bytes with a hole, as Kafka preallocates index files.
func writeIndex(path string, entries []byte, prealloc int64, mtime time.Time) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	if _, err := f.Write(entries); err != nil {
		f.Close()
		return fmt.Errorf("write index: %w", err)
	}
	if prealloc > int64(len(entries)) {
		if err := f.Truncate(prealloc); err != nil {
			f.Close()
			return fmt.Errorf("preallocate index: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close index: %w", err)
	}
	if mtime.IsZero() {
		return nil
	}
	return os.Chtimes(path, mtime, mtime)
}

// Checkpoint is one partition's line in the offset checkpoint files at the
// log dir root.
type Checkpoint struct {
	Topic     string
	Partition int32
	// LogStartOffset goes to log-start-offset-checkpoint, and, as Kafka
	// does, only when above FirstSegment (the first segment's base offset).
	LogStartOffset int64
	FirstSegment   int64
	// HighWatermark goes to replication-offset-checkpoint.
	HighWatermark int64
	// RecoveryPoint goes to recovery-point-offset-checkpoint.
	RecoveryPoint int64
}

// Checkpoint file names at the log dir root.
const (
	LogStartCheckpointFile      = "log-start-offset-checkpoint"
	HighWatermarkCheckpointFile = "replication-offset-checkpoint"
	RecoveryPointCheckpointFile = "recovery-point-offset-checkpoint"
)

// WriteCheckpoints writes the three offset checkpoint files of a log dir
// for cps, each through a temporary file renamed into place, as the broker
// writes them.
func WriteCheckpoints(logDir string, cps []Checkpoint) error {
	return writeCheckpoints(logDir, cps, time.Time{})
}

// writeCheckpoints is WriteCheckpoints with the files' modification time
// set to mtime (unless zero).
func writeCheckpoints(logDir string, cps []Checkpoint, mtime time.Time) error {
	var lso, hw, rp []checkpointEntry
	for _, c := range cps {
		if c.LogStartOffset > c.FirstSegment {
			lso = append(lso, checkpointEntry{c.Topic, c.Partition, c.LogStartOffset})
		}
		hw = append(hw, checkpointEntry{c.Topic, c.Partition, c.HighWatermark})
		rp = append(rp, checkpointEntry{c.Topic, c.Partition, c.RecoveryPoint})
	}
	for _, f := range []struct {
		name string
		e    []checkpointEntry
	}{{LogStartCheckpointFile, lso}, {HighWatermarkCheckpointFile, hw}, {RecoveryPointCheckpointFile, rp}} {
		path := filepath.Join(logDir, f.name)
		if err := writeFile(path+".tmp", checkpoint(f.e), mtime); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}

type checkpointEntry struct {
	topic     string
	partition int32
	offset    int64
}

// checkpoint renders Kafka's offset checkpoint format: a version line (0),
// a count line, then "topic partition offset" lines.
func checkpoint(es []checkpointEntry) []byte {
	slices.SortFunc(es, func(a, b checkpointEntry) int {
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.partition) - int(b.partition)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(es))
	for _, e := range es {
		fmt.Fprintf(&b, "%s %d %d\n", e.topic, e.partition, e.offset)
	}
	return []byte(b.String())
}

func writeFile(path string, body []byte, mtime time.Time) error {
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if mtime.IsZero() {
		return nil
	}
	return os.Chtimes(path, mtime, mtime)
}
