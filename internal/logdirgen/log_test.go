package logdirgen

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// openEmpty generates a log dir with one partition whose only segment is
// an empty active one, and opens it.
func openEmpty(t *testing.T, dir string, segmentBytes int64) *Log {
	t.Helper()
	spec := Spec{Now: testNow, NodeID: 1, SegmentIndexBytes: 1 << 20,
		Topics: []Topic{{Name: "t", Partitions: 1, Segments: []Segment{{Bytes: 0, Age: 3 * time.Hour}}}}}
	res, err := Generate(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir, spec, res.Partitions[0], segmentBytes)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLogWritesWhatGenerateWrites: appending batch by batch with the
// timestamps Generate gives them, then rolling, writes the same .log,
// .index and .timeindex bytes as Generate: one writer of the format.
func TestLogWritesWhatGenerateWrites(t *testing.T) {
	const first, second = 23, 9 // batches of 1 KiB, 10 records each
	segs := []Segment{
		{Bytes: first << 10, Records: first * 10, Age: 2 * time.Hour},
		{Bytes: second << 10, Records: second * 10, Age: time.Hour},
	}
	want := t.TempDir()
	spec := Spec{Now: testNow, NodeID: 1, SegmentIndexBytes: 1 << 20, Topics: []Topic{{Name: "t", Partitions: 1, Segments: segs}}}
	if _, err := Generate(want, spec); err != nil {
		t.Fatal(err)
	}

	got := t.TempDir()
	l := openEmpty(t, got, first<<10) // the batch after the first segment rolls
	prev := testNow.Add(-segs[0].Age - time.Hour).UnixMilli()
	for _, s := range segs {
		maxTs := testNow.Add(-s.Age).UnixMilli()
		n := s.Bytes >> 10
		for j := range n {
			if err := l.Append(1, time.UnixMilli(prev+(maxTs-prev)*(j+1)/n)); err != nil {
				t.Fatal(err)
			}
		}
		prev = maxTs
	}
	if got, want := l.LogEndOffset(), int64((first+second)*10); got != want {
		t.Fatalf("log end offset %d, want %d", got, want)
	}
	for _, name := range []string{
		FileName(0, ".log"), FileName(0, ".index"), FileName(0, ".timeindex"),
		FileName(first*10, ".log"), FileName(first*10, ".index"), FileName(first*10, ".timeindex"),
	} {
		w, err := os.ReadFile(filepath.Join(want, "t-0", name))
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join(got, "t-0", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, g) {
			t.Errorf("%s: Log wrote %d bytes that differ from Generate's %d", name, len(g), len(w))
		}
	}
}

// TestLogReadByAgent: after appends, rolls and a deletion, the agent's
// scanner reads the partition as the Log describes it: segments, largest
// timestamps, log end offset and the checkpointed offsets.
func TestLogReadByAgent(t *testing.T) {
	dir := t.TempDir()
	l := openEmpty(t, dir, 8<<10)
	now := testNow
	for range 30 {
		now = now.Add(time.Second)
		if err := l.Append(3, now); err != nil {
			t.Fatal(err)
		}
	}
	renamed, err := l.DeleteOldest(2, now)
	if err != nil {
		t.Fatal(err)
	}
	l.AdvanceLogStart(l.Segments()[0].BaseOffset + 5)
	if err := WriteCheckpoints(dir, []Checkpoint{l.Checkpoint()}); err != nil {
		t.Fatal(err)
	}
	sc, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ld := sc.ScanLogDir(dir, nil)
	if errs := sc.Errors(); len(errs) > 0 {
		t.Fatalf("scan errors: %v", errs)
	}
	if len(ld.Partitions) != 1 {
		t.Fatalf("partitions %+v", ld.Partitions)
	}
	p := ld.Partitions[0]
	segs := l.Segments()
	if len(p.Segments) != len(segs) {
		t.Fatalf("agent sees %d segments, the log has %d", len(p.Segments), len(segs))
	}
	for i, s := range segs {
		as := p.Segments[i]
		if as.BaseOffset != s.BaseOffset || as.LogBytes != s.LogBytes || !as.LargestTimestamp().Equal(s.LargestTimestamp) {
			t.Errorf("segment %d: agent %d/%d/%v, log %d/%d/%v", i, as.BaseOffset, as.LogBytes, as.LargestTimestamp(),
				s.BaseOffset, s.LogBytes, s.LargestTimestamp)
		}
	}
	if p.LogEndOffset != l.LogEndOffset() || p.HighWatermark != l.LogEndOffset() || p.LogStartOffset != l.LogStartOffset() {
		t.Errorf("offsets: agent start %d end %d hw %d; log start %d end %d", p.LogStartOffset, p.LogEndOffset, p.HighWatermark,
			l.LogStartOffset(), l.LogEndOffset())
	}
	if len(renamed) != 2*4 || p.PendingDeleteBytes < 2*8<<10 { // the .log files, and their indexes' blocks
		t.Errorf("renamed %v, pending delete %d bytes", renamed, p.PendingDeleteBytes)
	}
}

// TestLogRoll: a roll appends the largest timestamp to the time index,
// trims both index files to their entries and opens a segment with
// preallocated index files; an empty active segment is not rolled.
func TestLogRoll(t *testing.T) {
	dir := t.TempDir()
	l := openEmpty(t, dir, 1<<30)
	ts := testNow.Add(-time.Minute)
	if err := l.Append(2, ts); err != nil { // no index entry yet: 2 KiB < index.interval.bytes
		t.Fatal(err)
	}
	if err := l.Roll(testNow); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(testNow); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != 20 || segs[1].LogBytes != 0 {
		t.Fatalf("segments after roll: %+v", segs)
	}
	pdir := filepath.Join(dir, "t-0")
	ti, _ := os.ReadFile(filepath.Join(pdir, FileName(0, ".timeindex")))
	if len(ti) != timeEntryBytes || !bytes.Equal(ti[:8], be64(ts.UnixMilli())) {
		t.Errorf("closed time index %x, want one entry for %d", ti, ts.UnixMilli())
	}
	for name, size := range map[string]int64{
		FileName(0, ".index"): 0, FileName(20, ".index"): 1 << 20, FileName(20, ".timeindex"): (1 << 20) / 12 * 12,
		FileName(20, ".log"): 0, FileName(20, ".snapshot"): 0,
	} {
		st, err := os.Stat(filepath.Join(pdir, name))
		if err != nil || st.Size() != size {
			t.Errorf("%s: %v, size want %d", name, err, size)
		}
	}
}

// TestLogDeleteOldest: the oldest segments' files are renamed .deleted and
// the log start offset moves to the first segment kept; deleting every
// segment rolls the active one first; RemoveFiles removes the renamed
// files and nothing else.
func TestLogDeleteOldest(t *testing.T) {
	dir := t.TempDir()
	l := openEmpty(t, dir, 4<<10)
	if err := l.Append(10, testNow); err != nil { // segments of 4, 4, and 2 batches
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	renamed, err := l.DeleteOldest(1, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 40 {
		t.Errorf("log start %d, want 40", l.LogStartOffset())
	}
	for _, p := range renamed {
		if !strings.HasPrefix(filepath.Base(p), FileName(0, ".")) || !strings.HasSuffix(p, ".deleted") {
			t.Errorf("renamed %s", p)
		}
	}
	all, err := l.DeleteOldest(5, testNow.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) != 1 || segs[0].BaseOffset != 100 || segs[0].LogBytes != 0 || l.LogStartOffset() != 100 {
		t.Errorf("after deleting all: %+v, log start %d", segs, l.LogStartOffset())
	}
	if err := RemoveFiles(append(renamed, all...)); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(filepath.Join(dir, "t-0"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, d.Name())
		}
		return err
	})
	for _, n := range left {
		if strings.HasSuffix(n, ".deleted") || (strings.HasPrefix(n, "000") && !strings.HasPrefix(n, FileName(100, ""))) {
			t.Errorf("left behind: %s (all: %v)", n, left)
		}
	}
	if err := RemoveFiles([]string{filepath.Join(dir, "meta.properties")}); err == nil {
		t.Error("RemoveFiles removed a file that is not .deleted")
	}
}

// TestWriteCheckpoints: the log start offset is written only above the
// first segment's base offset, as Kafka does; the agent reads all three.
func TestWriteCheckpoints(t *testing.T) {
	dir := t.TempDir()
	cps := []Checkpoint{
		{Topic: "b", Partition: 1, LogStartOffset: 10, FirstSegment: 10, HighWatermark: 50, RecoveryPoint: 40},
		{Topic: "a.x-y", Partition: 0, LogStartOffset: 7, FirstSegment: 0, HighWatermark: 9, RecoveryPoint: 0},
	}
	if err := WriteCheckpoints(dir, cps); err != nil {
		t.Fatal(err)
	}
	lso, _ := os.ReadFile(filepath.Join(dir, LogStartCheckpointFile))
	hw, _ := os.ReadFile(filepath.Join(dir, HighWatermarkCheckpointFile))
	if string(lso) != "0\n1\na.x-y 0 7\n" || string(hw) != "0\n2\na.x-y 0 9\nb 1 50\n" {
		t.Errorf("checkpoints %q, %q", lso, hw)
	}
	sc, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cp := sc.ReadCheckpoints(dir)
	if cp.LogStart[agent.TopicPartition{Topic: "a.x-y", Partition: 0}] != 7 || cp.HighWatermark[agent.TopicPartition{Topic: "b", Partition: 1}] != 50 {
		t.Errorf("agent read %+v", cp)
	}
	if _, err := os.Stat(filepath.Join(dir, LogStartCheckpointFile+".tmp")); err == nil {
		t.Error("temporary file left behind")
	}
}

func be64(v int64) []byte {
	var b [8]byte
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
	return b[:]
}
