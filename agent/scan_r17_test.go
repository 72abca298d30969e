package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// R1.7: with preallocate=true Kafka creates the active .log file
// segment.bytes long; the scanner finds where the batches end and the
// classification counts those written bytes for size retention.
func TestScanPreallocatedActiveSegment(t *testing.T) {
	dir, res := generate(t, badInputSpec())
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	active := findSegmentFile(t, dir, "a-0", ".log", true)
	fi, err := os.Stat(active)
	if err != nil {
		t.Fatal(err)
	}
	written := fi.Size()
	if err := os.Truncate(active, 1<<20); err != nil { // preallocated to segment.bytes: zeros after the batches
		t.Fatal(err)
	}
	ld := s.ScanLogDir(dir, nil)
	if errs := s.Errors(); len(errs) != 0 {
		t.Fatalf("R6: errors %v\n%s", errs, logs)
	}
	p := findPartition(t, ld, "a-0")
	if p.ActiveWrittenBytes != written {
		t.Errorf("R1.7: active written bytes %d, want %d", p.ActiveWrittenBytes, written)
	}
	if want := res.Partitions[0].LogEndOffset; p.LogEndOffset != want {
		t.Errorf("log end offset %d, want %d", p.LogEndOffset, want)
	}
	if q := findPartition(t, ld, "b-0"); q.ActiveWrittenBytes != -1 {
		t.Errorf("a file without a zero tail: written bytes %d, want -1", q.ActiveWrittenBytes)
	}
	// Size retention: 32 KiB + 32 KiB + 8 KiB written. retention.bytes 40 KiB
	// lets the first segment go (72-32 = 40 >= 40); counted at its file
	// length (1 MiB) the active segment alone would exceed it and both
	// closed segments would go.
	c := cfg(-1, 40<<10, "delete")
	c.Preallocate = true
	if got := render(Classify(p, c, testNow)); !slices.Equal(got, []string{"eligible/retention_size", "closed", "open"}) {
		t.Errorf("R1.7 preallocate: %v", got)
	}
	c.Preallocate = false
	if got := render(Classify(p, c, testNow)); !slices.Equal(got, []string{"eligible/retention_size", "eligible/retention_size", "open"}) {
		t.Errorf("without preallocate the file length counts: %v", got)
	}
}

// R6: the broker rolls the active segment while a scan reads it. The
// listing saw the index files at their preallocated 10 MiB; on roll Kafka
// trims them to their entries, so the read ends early (EOF). That is a
// race with the broker, not an I/O error: the scan must count nothing and
// still read the segment right.
func TestScanActiveIndexTrimmedDuringScan(t *testing.T) {
	dir, res := generate(t, badInputSpec())
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	idx := findSegmentFile(t, dir, "a-0", ".index", true)
	tidx := findSegmentFile(t, dir, "a-0", ".timeindex", true)
	trim := func(path string, es int64) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for n*es < int64(len(data)) && !isZero(data[n*es:(n+1)*es]) {
			n++
		}
		if err := os.Truncate(path, n*es); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{idx, tidx} {
		if fi, err := os.Stat(f); err != nil || fi.Size() < 1<<20 {
			t.Fatalf("%s: want a preallocated index, got %v %v", f, fi, err)
		}
	}
	s.afterList = func(d string) {
		if filepath.Base(d) == "a-0" {
			trim(idx, offsetEntrySize)
			trim(tidx, timeEntrySize)
		}
	}
	ld := s.ScanLogDir(dir, nil)
	if errs := s.Errors(); len(errs) != 0 {
		t.Fatalf("R6: a roll during the scan counted as errors %v\n%s", errs, logs)
	}
	p := findPartition(t, ld, "a-0")
	want := res.Partitions[0]
	if p.LogEndOffset != want.LogEndOffset {
		t.Errorf("log end offset %d, want %d", p.LogEndOffset, want.LogEndOffset)
	}
	last := want.Segments[len(want.Segments)-1]
	if got := p.Segments[len(p.Segments)-1].LargestTimestamp(); !got.Equal(last.LargestTimestamp) {
		t.Errorf("largest timestamp %v, want %v", got, last.LargestTimestamp)
	}
}

// R1.4: a tiered broker keeps remote segments' indexes in
// remote-log-index-cache at the log dir root: Kafka's, not a bad name.
func TestScanRemoteIndexCacheDir(t *testing.T) {
	dir, _ := generate(t, badInputSpec())
	cache := filepath.Join(dir, "remote-log-index-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(cache, "00000000000000000000_abc.index"), "0123456789")
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	ld := s.ScanLogDir(dir, nil)
	if errs := s.Errors(); len(errs) != 0 {
		t.Fatalf("R1.4: errors %v\n%s", errs, logs)
	}
	if ld.OtherBytes == 0 {
		t.Error("the cache's bytes are counted as other bytes")
	}
}

// R1.7: a -future log's offsets come from its own log dir's checkpoints.
func TestScanFutureCheckpoints(t *testing.T) {
	dir, _ := generate(t, logdirgen.Spec{NodeID: 1, Topics: []logdirgen.Topic{
		{Name: "m", Partitions: 1, NoCheckpoints: true, Segments: []logdirgen.Segment{{Bytes: 8 << 10, Age: 5 * time.Hour}, {Bytes: 8 << 10, Age: time.Hour}}},
	}})
	future := "m-0.0123456789abcdef0123456789abcdef-future"
	if err := os.Rename(filepath.Join(dir, "m-0"), filepath.Join(dir, future)); err != nil {
		t.Fatal(err)
	}
	ck := func(name string, off int64) {
		b := []byte("0\n1\nm 0 " + strconv.FormatInt(off, 10) + "\n")
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ck("replication-offset-checkpoint", 81)
	ck("log-start-offset-checkpoint", 3)
	logger, _ := testLogger(t)
	s := testScanner(t, logger)
	ld := s.ScanLogDir(dir, nil)
	p := findPartition(t, ld, future)
	if p.Kind != KindFuture || p.HighWatermark != 81 || p.LogStartOffset != 3 {
		t.Errorf("R1.7: future %s hw %d lso %d", p.Kind, p.HighWatermark, p.LogStartOffset)
	}
}
