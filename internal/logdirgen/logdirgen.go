// Package logdirgen writes realistic Apache Kafka broker log directories for
// tests, demos and benchmarks: meta.properties, partition directories with
// segments (.log of the right length, .index and .timeindex with real
// entries built the way the broker builds them, an active segment whose
// index files are preallocated and sparse), the checkpoint files at the log
// dir root, leader-epoch-checkpoint and partition.metadata, and optionally
// the special entries a live broker leaves around (.deleted files, a -delete
// directory, a -future directory, __cluster_metadata-0, .swap/.cleaned).
//
// Everything is derived from a Spec and is deterministic: the same Spec
// always produces the same tree (file contents and modification times).
package logdirgen

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults used when a Spec field is zero.
const (
	DefaultIndexIntervalBytes = 4096
	DefaultSegmentIndexBytes  = 10 << 20
	DefaultBatchBytes         = 1024
	DefaultRecordBytes        = 100
)

// Spec describes a log dir to generate.
type Spec struct {
	// Now is the reference clock: segment ages are relative to it.
	Now         time.Time
	NodeID      int32
	ClusterID   string // default "kdg-test-cluster"
	DirectoryID string // default derived from ClusterID and NodeID
	Topics      []Topic
	// Sparse makes .log files by truncation (holes, no data written) so a
	// big tree is cheap; only the active segment's batches after its last
	// offset index entry get real headers. Otherwise each batch header is
	// written for real and the rest of each batch is zeros.
	Sparse bool
	// Extras adds the special entries of a live broker: a .deleted segment
	// in the first partition, a <topic>-<p>.<id>-delete directory, a
	// -future directory, a .swap and a .cleaned file, __cluster_metadata-0
	// and cleaner-offset-checkpoint.
	Extras bool
	// IndexIntervalBytes is index.interval.bytes (default 4096).
	IndexIntervalBytes int64
	// SegmentIndexBytes is segment.index.bytes: the preallocated size of
	// the active segment's index files (default 10 MiB).
	SegmentIndexBytes int64
	// BatchBytes is the size of each record batch (default 1024).
	BatchBytes int64
}

// Topic is one topic: every partition gets the same segments.
type Topic struct {
	Name       string
	Partitions int32
	// FirstPartition numbers partitions from here (default 0).
	FirstPartition int32
	// Segments, oldest first; the last one is the active segment.
	Segments []Segment
	// LogStartOffset, when > 0, is written to log-start-offset-checkpoint
	// (as after DeleteRecords). Otherwise the log starts at the first
	// segment and, as Kafka does, the partition is left out of that file.
	LogStartOffset int64
	// HighWatermark, when > 0, is written to replication-offset-checkpoint;
	// otherwise the log end offset is.
	HighWatermark int64
	// NoCheckpoints leaves the partition out of every checkpoint file.
	NoCheckpoints bool
}

// Segment describes one segment.
type Segment struct {
	// Bytes is the .log size.
	Bytes int64
	// Records is the number of offsets (default Bytes/100, at least 1 per batch).
	Records int64
	// Age is now - the segment's largest record timestamp (for an empty
	// segment, now - its .log modification time).
	Age time.Duration
	// NoTimeIndex leaves the time index empty (records without
	// timestamps), so Kafka falls back to the .log modification time,
	// which is set to now - Age.
	NoTimeIndex bool
}

// Result tells what was generated.
type Result struct {
	Dir        string
	Partitions []PartitionResult
	Segments   int // segments in live partition directories
}

// PartitionResult describes one generated partition directory.
type PartitionResult struct {
	Topic          string
	Partition      int32
	Dir            string
	Segments       []SegmentResult
	LogEndOffset   int64
	LogStartOffset int64
	HighWatermark  int64
}

// SegmentResult describes one generated segment.
type SegmentResult struct {
	BaseOffset       int64
	Records          int64
	LogBytes         int64
	LargestTimestamp time.Time
	// TimeIndexed is the largest timestamp found in the time index file
	// (equal to LargestTimestamp for closed segments; for the active
	// segment Kafka has not yet appended its max, so it may lag).
	TimeIndexed time.Time
}

// FileName renders a 20-digit segment file name.
func FileName(baseOffset int64, suffix string) string {
	return fmt.Sprintf("%020d%s", baseOffset, suffix)
}

// withDefaults returns spec with every zero field at its default.
func (spec Spec) withDefaults() Spec {
	if spec.ClusterID == "" {
		spec.ClusterID = "kdg-test-cluster"
	}
	if spec.DirectoryID == "" {
		spec.DirectoryID = uuidB64("dir", spec.ClusterID, fmt.Sprint(spec.NodeID))
	}
	if spec.IndexIntervalBytes <= 0 {
		spec.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if spec.SegmentIndexBytes <= 0 {
		spec.SegmentIndexBytes = DefaultSegmentIndexBytes
	}
	if spec.BatchBytes <= 0 {
		spec.BatchBytes = DefaultBatchBytes
	}
	return spec
}

// checkpoint is the partition's line in the checkpoint files.
func (pr *PartitionResult) checkpoint() Checkpoint {
	return Checkpoint{Topic: pr.Topic, Partition: pr.Partition, LogStartOffset: pr.LogStartOffset,
		FirstSegment: pr.Segments[0].BaseOffset, HighWatermark: pr.HighWatermark,
		RecoveryPoint: pr.Segments[len(pr.Segments)-1].BaseOffset}
}

// Generate writes spec under dir (created if needed) and returns what it wrote.
func Generate(dir string, spec Spec) (*Result, error) {
	if spec.Now.IsZero() {
		return nil, errors.New("logdirgen: spec.Now is required")
	}
	spec = spec.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	g := &gen{spec: spec, buf: make([]byte, 0, 1<<16)}
	res := &Result{Dir: dir}
	meta := fmt.Sprintf("#\n#%s\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
		spec.Now.UTC().Format("Mon Jan 02 15:04:05 MST 2006"), spec.NodeID, spec.DirectoryID, spec.ClusterID)
	if err := writeFile(filepath.Join(dir, "meta.properties"), []byte(meta), spec.Now); err != nil {
		return nil, err
	}
	var cps []Checkpoint
	for _, t := range spec.Topics {
		if t.Name == "" || t.Partitions <= 0 || len(t.Segments) == 0 {
			return nil, fmt.Errorf("logdirgen: topic %q needs a name, partitions and segments", t.Name)
		}
		for p := t.FirstPartition; p < t.FirstPartition+t.Partitions; p++ {
			name := fmt.Sprintf("%s-%d", t.Name, p)
			pr, err := g.partition(filepath.Join(dir, name), t, p)
			if err != nil {
				return nil, err
			}
			pr.Dir = name
			res.Partitions = append(res.Partitions, *pr)
			res.Segments += len(pr.Segments)
			if !t.NoCheckpoints {
				cps = append(cps, pr.checkpoint())
			}
		}
	}
	if spec.Extras {
		if err := g.extras(dir, res); err != nil {
			return nil, err
		}
	}
	if err := writeCheckpoints(dir, cps, spec.Now); err != nil {
		return nil, err
	}
	return res, nil
}

type gen struct {
	spec Spec
	buf  []byte
}

func (g *gen) partition(pdir string, t Topic, p int32) (*PartitionResult, error) {
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition dir: %w", err)
	}
	pr := &PartitionResult{Topic: t.Name, Partition: p}
	var next int64
	// The first segment's records start one hour before its largest timestamp.
	prevTs := g.spec.Now.Add(-t.Segments[0].Age - time.Hour).UnixMilli()
	for i, s := range t.Segments {
		active := i == len(t.Segments)-1
		sr, err := g.segment(pdir, next, s, prevTs, active)
		if err != nil {
			return nil, err
		}
		pr.Segments = append(pr.Segments, *sr)
		next += sr.Records
		prevTs = sr.LargestTimestamp.UnixMilli()
	}
	pr.LogEndOffset = next
	pr.LogStartOffset = pr.Segments[0].BaseOffset
	if t.LogStartOffset > 0 {
		pr.LogStartOffset = t.LogStartOffset
	}
	pr.HighWatermark = next
	if t.HighWatermark > 0 {
		pr.HighWatermark = t.HighWatermark
	}
	last := pr.Segments[len(pr.Segments)-1].BaseOffset
	epochs := "0\n1\n0 0\n"
	files := map[string]string{
		"leader-epoch-checkpoint":   epochs,
		"partition.metadata":        fmt.Sprintf("version: 0\ntopic_id: %s\n", uuidB64("topic", t.Name)),
		FileName(last, ".snapshot"): "",
	}
	for name, body := range files {
		if err := writeFile(filepath.Join(pdir, name), []byte(body), g.spec.Now); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

// segment writes the files of one segment the way the broker would have:
// batches of BatchBytes, an offset index entry and a time index entry each
// time more than IndexIntervalBytes were appended since the last entry, and
// for a rolled segment the max timestamp appended to the time index.
func (g *gen) segment(pdir string, base int64, s Segment, prevTs int64, active bool) (*SegmentResult, error) {
	if s.Bytes < 0 {
		return nil, fmt.Errorf("logdirgen: negative segment size %d", s.Bytes)
	}
	maxTs := g.spec.Now.Add(-s.Age).UnixMilli()
	if prevTs > maxTs {
		prevTs = maxTs
	}
	nb := int64(0)
	if s.Bytes > 0 {
		nb = (s.Bytes + g.spec.BatchBytes - 1) / g.spec.BatchBytes
	}
	records := s.Records
	if records <= 0 {
		records = s.Bytes / DefaultRecordBytes
	}
	if records < nb {
		records = nb
	}
	sr := &SegmentResult{BaseOffset: base, Records: records, LogBytes: s.Bytes, LargestTimestamp: time.UnixMilli(maxTs)}
	x := newIndexer(g.spec.IndexIntervalBytes)
	var hdrs []batchHeader
	var pos int64
	for j := int64(0); j < nb; j++ {
		size := g.spec.BatchBytes
		if pos+size > s.Bytes {
			size = s.Bytes - pos
		}
		firstOff := records * j / nb
		lastOff := records*(j+1)/nb - 1
		ts := prevTs + (maxTs-prevTs)*(j+1)/nb
		if s.NoTimeIndex {
			ts = -1
		}
		x.batch(pos, size, lastOff, ts)
		if size >= batchHeaderBytes && (!g.spec.Sparse || active) {
			var h batchHeader
			h.pos = pos
			putBatchHeader(h.h[:], base+firstOff, size, lastOff-firstOff, ts)
			hdrs = append(hdrs, h)
		}
		pos += size
	}
	if !active {
		x.close()
	}
	if x.lastTimeEntry >= 0 {
		sr.TimeIndexed = time.UnixMilli(x.lastTimeEntry)
	}
	if g.spec.Sparse && x.lastEntryPos >= 0 {
		// A sparse active segment gets real batch headers only where a
		// reader starts walking: from its last offset index entry on.
		keep := hdrs[:0]
		for _, h := range hdrs {
			if h.pos >= x.lastEntryPos {
				keep = append(keep, h)
			}
		}
		hdrs = keep
	}
	mtime := time.UnixMilli(maxTs)
	if err := writeLog(filepath.Join(pdir, FileName(base, ".log")), hdrs, s.Bytes, mtime); err != nil {
		return nil, err
	}
	var offPre, timePre int64
	if active {
		offPre, timePre = preallocated(g.spec.SegmentIndexBytes, offsetEntryBytes), preallocated(g.spec.SegmentIndexBytes, timeEntryBytes)
	}
	if err := writeIndex(filepath.Join(pdir, FileName(base, ".index")), x.off, offPre, mtime); err != nil {
		return nil, err
	}
	if err := writeIndex(filepath.Join(pdir, FileName(base, ".timeindex")), x.time, timePre, mtime); err != nil {
		return nil, err
	}
	return sr, nil
}

// batchHeader is a record batch header to write at pos of a segment.
type batchHeader struct {
	pos int64
	h   [batchHeaderBytes]byte
}

// writeLog writes a sparse .log file of size bytes holding the batch
// headers, with its modification time.
func writeLog(logPath string, hdrs []batchHeader, size int64, mtime time.Time) error {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	for _, h := range hdrs {
		if _, err := f.WriteAt(h.h[:], h.pos); err != nil {
			f.Close()
			return fmt.Errorf("write segment: %w", err)
		}
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("size segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close segment: %w", err)
	}
	if err := os.Chtimes(logPath, mtime, mtime); err != nil {
		return fmt.Errorf("set segment mtime: %w", err)
	}
	return nil
}

// extras adds what a live broker leaves around besides live segments.
func (g *gen) extras(dir string, res *Result) error {
	now := g.spec.Now
	// A deleted segment waiting for file.delete.delay.ms, in the first partition.
	if len(res.Partitions) > 0 {
		pdir := filepath.Join(dir, res.Partitions[0].Dir)
		for _, suf := range []string{".log.deleted", ".index.deleted", ".timeindex.deleted"} {
			size := int64(0)
			if suf == ".log.deleted" {
				size = 8192
			}
			if err := sizedFile(filepath.Join(pdir, FileName(0, suf)), size, now); err != nil {
				return err
			}
		}
		if err := sizedFile(filepath.Join(pdir, FileName(0, ".log.swap")), 4096, now); err != nil {
			return err
		}
		if err := sizedFile(filepath.Join(pdir, FileName(0, ".log.cleaned")), 4096, now); err != nil {
			return err
		}
	}
	// A deleted topic's partition directory and a replica moving between log dirs.
	for _, d := range []struct{ name string }{
		{"deleted-topic-0." + hexID("deleted-topic") + "-delete"},
		{"moving-topic-0." + hexID("moving-topic") + "-future"},
	} {
		p := filepath.Join(dir, d.name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d.name, err)
		}
		if err := sizedFile(filepath.Join(p, FileName(0, ".log")), 16384, now); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(p, FileName(0, ".index")), nil, now); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(p, FileName(0, ".timeindex")), nil, now); err != nil {
			return err
		}
	}
	// The KRaft metadata log.
	md := filepath.Join(dir, "__cluster_metadata-0")
	if err := os.MkdirAll(md, 0o755); err != nil {
		return fmt.Errorf("create metadata dir: %w", err)
	}
	for name, size := range map[string]int64{
		FileName(0, ".log"): 4096, FileName(0, ".index"): 0, FileName(0, ".timeindex"): 0,
		"00000000000000000100-0000000001.checkpoint": 2048, "quorum-state": 120, "partition.metadata": 40,
		"leader-epoch-checkpoint": 8,
	} {
		if err := sizedFile(filepath.Join(md, name), size, now); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, "cleaner-offset-checkpoint"), checkpoint(nil), now)
}

// sizedFile writes size non-zero bytes so the file takes real blocks.
func sizedFile(path string, size int64, mtime time.Time) error {
	body := make([]byte, size)
	for i := range body {
		body[i] = 'k'
	}
	return writeFile(path, body, mtime)
}

func uuidB64(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return strings.TrimRight(base64.RawURLEncoding.EncodeToString(h[:16]), "=")
}

func hexID(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Uniform is a Spec of topics x partitions x segments, every closed segment
// segBytes long and one hour older than the next, the active segment half
// full: the shape the benchmark uses.
func Uniform(now time.Time, topics int, partitions int32, segments int, segBytes int64) Spec {
	spec := Spec{Now: now, NodeID: 1, Sparse: true}
	segs := make([]Segment, segments)
	for i := range segs {
		segs[i] = Segment{Bytes: segBytes, Age: time.Duration(segments-1-i) * time.Hour}
	}
	if segments > 0 {
		segs[segments-1].Bytes = segBytes / 2
	}
	for t := 0; t < topics; t++ {
		spec.Topics = append(spec.Topics, Topic{Name: fmt.Sprintf("topic.%04d", t), Partitions: partitions, Segments: segs})
	}
	return spec
}
