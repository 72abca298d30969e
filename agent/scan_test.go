package agent

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testLogger(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func generate(t *testing.T, spec logdirgen.Spec) (string, *logdirgen.Result) {
	t.Helper()
	dir := t.TempDir()
	if spec.Now.IsZero() {
		spec.Now = testNow
	}
	res, err := logdirgen.Generate(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

func findPartition(t *testing.T, ld LogDir, dir string) Partition {
	t.Helper()
	for _, p := range ld.Partitions {
		if p.Dir == dir {
			return *p
		}
	}
	t.Fatalf("partition dir %s not found", dir)
	return Partition{}
}

func TestScanLogDirMatchesGenerator(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		t.Run(map[bool]string{false: "written", true: "sparse"}[sparse], func(t *testing.T) {
			spec := logdirgen.Spec{NodeID: 7, Sparse: sparse, Extras: true, Topics: []logdirgen.Topic{
				{Name: "orders.v1-eu_west", Partitions: 2, Segments: []logdirgen.Segment{
					{Bytes: 64 << 10, Age: 48 * time.Hour},
					{Bytes: 64 << 10, Age: 30 * time.Hour},
					{Bytes: 20 << 10, Age: time.Minute},
				}, LogStartOffset: 700, HighWatermark: 1400},
				{Name: "no-ts", Partitions: 1, Segments: []logdirgen.Segment{{Bytes: 5000, Age: 3 * time.Hour, NoTimeIndex: true}, {Bytes: 0}}},
			}}
			dir, res := generate(t, spec)
			logger, logs := testLogger(t)
			s := testScanner(t, logger)
			ld := s.ScanLogDir(dir, nil)
			if ld.Err != nil {
				t.Fatal(ld.Err)
			}
			if ld.BrokerID != 7 || ld.ClusterID != "kdg-test-cluster" {
				t.Errorf("R1.5: broker %d cluster %q", ld.BrokerID, ld.ClusterID)
			}
			if errs := s.Errors(); len(errs) != 0 {
				t.Errorf("R6: unexpected errors %v\n%s", errs, logs)
			}
			for _, want := range res.Partitions {
				got := findPartition(t, ld, want.Dir)
				if got.Topic != want.Topic || got.Partition != want.Partition || got.Kind != KindLive {
					t.Errorf("R1.1: %s parsed as %q %d %s", want.Dir, got.Topic, got.Partition, got.Kind)
				}
				if len(got.Segments) != len(want.Segments) {
					t.Fatalf("%s: %d segments, want %d", want.Dir, len(got.Segments), len(want.Segments))
				}
				for i, ws := range want.Segments {
					gs := got.Segments[i]
					if gs.BaseOffset != ws.BaseOffset || gs.LogBytes != ws.LogBytes {
						t.Errorf("%s seg %d: base %d bytes %d, want %d %d", want.Dir, i, gs.BaseOffset, gs.LogBytes, ws.BaseOffset, ws.LogBytes)
					}
					if !gs.LargestTimestamp().Equal(ws.LargestTimestamp) {
						t.Errorf("R1.3: %s seg %d largest timestamp %v (%s), want %v", want.Dir, i, gs.LargestTimestamp(), gs.TimestampSource, ws.LargestTimestamp)
					}
				}
				if want.Topic == "orders.v1-eu_west" {
					if got.LogStartOffset != want.LogStartOffset || got.HighWatermark != want.HighWatermark {
						t.Errorf("checkpoints: lso %d hw %d, want %d %d", got.LogStartOffset, got.HighWatermark, want.LogStartOffset, want.HighWatermark)
					}
					if got.LogEndOffset != want.LogEndOffset {
						t.Errorf("log end offset %d, want %d", got.LogEndOffset, want.LogEndOffset)
					}
					if len(got.OpenExpiry) == 0 {
						t.Errorf("R1.6: no expiry curve for the active segment")
					}
					act := got.Segments[len(got.Segments)-1]
					if act.DiskBytes >= 1<<20 {
						t.Errorf("R1.3: active segment counts %d disk bytes: preallocated index holes must not count", act.DiskBytes)
					}
					if act.ApparentBytes() < 10<<20 {
						t.Errorf("active segment apparent bytes %d, want the preallocated size", act.ApparentBytes())
					}
				}
			}
			nots := findPartition(t, ld, "no-ts-0")
			if nots.Segments[0].TimestampSource != TimestampFromMtime {
				t.Errorf("R1.3: no time index entry: source %s, want mtime", nots.Segments[0].TimestampSource)
			}
			// R1.4: special entries.
			kinds := map[PartitionKind]int{}
			for _, p := range ld.Partitions {
				kinds[p.Kind]++
			}
			if kinds[KindDeleted] != 1 || kinds[KindFuture] != 1 || kinds[KindMetadata] != 1 {
				t.Errorf("R1.4: kinds %v", kinds)
			}
			p0 := findPartition(t, ld, "orders.v1-eu_west-0")
			if p0.PendingDeleteBytes < 8192 {
				t.Errorf("R1.4: .deleted bytes %d", p0.PendingDeleteBytes)
			}
			var pending int64
			for _, p := range ld.Partitions {
				if p.Kind == KindDeleted {
					pending = p.PendingDeleteBytes
					if p.Topic != "deleted-topic" || p.Partition != 0 {
						t.Errorf("R1.4: -delete dir parsed as %q %d", p.Topic, p.Partition)
					}
				}
			}
			if pending < 16384 {
				t.Errorf("R1.4: -delete dir pending bytes %d", pending)
			}
			if ld.PendingDeleteBytes != pending+p0.PendingDeleteBytes {
				t.Errorf("R1.4: log dir pending %d, want %d", ld.PendingDeleteBytes, pending+p0.PendingDeleteBytes)
			}
		})
	}
}

func testScanner(t testing.TB, logger *slog.Logger) *Scanner {
	t.Helper()
	s, err := NewScanner(ScannerConfig{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRescanReusesClosedSegments(t *testing.T) {
	dir, _ := generate(t, logdirgen.Spec{NodeID: 1, Topics: []logdirgen.Topic{{Name: "t", Partitions: 2, Segments: []logdirgen.Segment{
		{Bytes: 32 << 10, Age: 50 * time.Hour}, {Bytes: 32 << 10, Age: 40 * time.Hour}, {Bytes: 8 << 10, Age: time.Hour},
	}}}})
	logger, _ := testLogger(t)
	s := testScanner(t, logger)
	first := s.ScanLogDir(dir, nil)
	again := s.ScanLogDir(dir, &first)
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("rescan with the previous result differs:\n%+v\n%+v", first, again)
	}
	// Rewrite a closed segment's last time index entry in place (same
	// size): a rescan with prev keeps the old value, without prev reads it.
	path := filepath.Join(dir, "t-0", logdirgen.FileName(0, ".timeindex"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint64(data[len(data)-12:], uint64(testNow.Add(-45*time.Hour).UnixMilli()))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	reused := s.ScanLogDir(dir, &first)
	fresh := s.ScanLogDir(dir, nil)
	if got := findPartition(t, reused, "t-0").Segments[0].LargestTimestamp(); !got.Equal(testNow.Add(-50 * time.Hour)) {
		t.Errorf("with prev: %v, want the earlier value", got)
	}
	if got := findPartition(t, fresh, "t-0").Segments[0].LargestTimestamp(); !got.Equal(testNow.Add(-45 * time.Hour)) {
		t.Errorf("without prev: %v, want the file's value", got)
	}
	// An active segment that did not grow is taken from prev; one that
	// grew is read again.
	p := findPartition(t, first, "t-1")
	p.Segments[2].LargestTimestampMs = 1
	re, err := s.ReadPartition(dir, "t-1", s.ReadCheckpoints(dir), &p)
	if err != nil {
		t.Fatal(err)
	}
	if !re.Segments[2].LargestTimestamp().Equal(time.UnixMilli(1)) || re.LogEndOffset != p.LogEndOffset {
		t.Errorf("unchanged active segment: timestamp %v, log end %d: want prev's", re.Segments[2].LargestTimestamp(), re.LogEndOffset)
	}
	act := filepath.Join(dir, "t-1", logdirgen.FileName(p.Segments[2].BaseOffset, ".log"))
	if err := os.Truncate(act, p.Segments[2].LogBytes+4096); err != nil {
		t.Fatal(err)
	}
	re, err = s.ReadPartition(dir, "t-1", s.ReadCheckpoints(dir), &p)
	if err != nil {
		t.Fatal(err)
	}
	if !re.Segments[2].LargestTimestamp().Equal(testNow.Add(-time.Hour)) {
		t.Errorf("grown active segment timestamp %v came from prev", re.Segments[2].LargestTimestamp())
	}
}

// R1.1: a partition directory that is a symbolic link to a directory
// inside the log dir is read through the log dir's Root (the bare
// descriptor's openat refuses the link): the same segments, offsets,
// expiry curve and bytes as the directory itself; one that points out of
// the log dir is left out and counted.
func TestR1_1SymlinkedPartitionDirReadThroughRoot(t *testing.T) {
	spec := logdirgen.Spec{NodeID: 1, Sparse: true, Topics: []logdirgen.Topic{{Name: "t", Partitions: 2, Segments: []logdirgen.Segment{
		{Bytes: 64 << 10, Age: 48 * time.Hour}, {Bytes: 20 << 10, Age: time.Minute}}, HighWatermark: 1 << 20}}}
	dir, _ := generate(t, spec)
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	want := findPartition(t, s.ScanLogDir(dir, nil), "t-1")
	if err := os.MkdirAll(filepath.Join(dir, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "t-1"), filepath.Join(dir, "lost+found", "t-1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("lost+found", "t-1"), filepath.Join(dir, "t-1")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Rename(filepath.Join(dir, "t-0"), filepath.Join(outside, "t-0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "t-0"), filepath.Join(dir, "t-0")); err != nil {
		t.Fatal(err)
	}
	ld := s.ScanLogDir(dir, nil)
	got := findPartition(t, ld, "t-1")
	if !reflect.DeepEqual(got.Segments, want.Segments) || got.LogEndOffset != want.LogEndOffset || got.HighWatermark != want.HighWatermark ||
		!reflect.DeepEqual(got.OpenExpiry, want.OpenExpiry) || got.DiskBytes != want.DiskBytes {
		t.Errorf("through the link:\n%+v\nwant\n%+v\n%s", got, want, logs)
	}
	if len(ld.Partitions) != 1 || s.Errors()[ErrBadName]+s.Errors()[ErrIO]+s.Errors()[ErrPermission] == 0 {
		t.Errorf("R6: a link out of the log dir: partitions %d, errors %v", len(ld.Partitions), s.Errors())
	}
}
