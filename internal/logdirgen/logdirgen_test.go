package logdirgen

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testSpec(sparse bool) Spec {
	return Spec{
		Now: testNow, NodeID: 3, Sparse: sparse, Extras: true,
		Topics: []Topic{
			{Name: "orders.v1-eu_west", Partitions: 2, Segments: []Segment{
				{Bytes: 64 << 10, Age: 48 * time.Hour},
				{Bytes: 64 << 10, Age: 30 * time.Hour},
				{Bytes: 10 << 10, Age: time.Minute},
			}, LogStartOffset: 700, HighWatermark: 1400},
			{Name: "compacted", Partitions: 1, Segments: []Segment{{Bytes: 5000, Age: time.Hour, NoTimeIndex: true}, {Bytes: 0}}},
		},
	}
}

func TestGenerateLayout(t *testing.T) {
	dir := t.TempDir()
	res, err := Generate(dir, testSpec(false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 8 || len(res.Partitions) != 3 {
		t.Fatalf("segments=%d partitions=%d", res.Segments, len(res.Partitions))
	}
	p := res.Partitions[0]
	if p.Dir != "orders.v1-eu_west-0" || p.LogStartOffset != 700 || p.HighWatermark != 1400 {
		t.Fatalf("partition %+v", p)
	}
	// Closed segment: index files trimmed, time index last entry = max timestamp.
	ti, err := os.ReadFile(filepath.Join(dir, p.Dir, FileName(0, ".timeindex")))
	if err != nil {
		t.Fatal(err)
	}
	if len(ti) == 0 || len(ti)%12 != 0 {
		t.Fatalf("time index length %d", len(ti))
	}
	last := int64(binary.BigEndian.Uint64(ti[len(ti)-12:]))
	if want := testNow.Add(-48 * time.Hour).UnixMilli(); last != want {
		t.Fatalf("last time index entry %d, want %d", last, want)
	}
	oi, err := os.ReadFile(filepath.Join(dir, p.Dir, FileName(0, ".index")))
	if err != nil {
		t.Fatal(err)
	}
	// 64 KiB of 1 KiB batches, an entry once more than 4096 bytes went by: every 5 batches.
	if len(oi) != 8*12 {
		t.Fatalf("offset index length %d, want %d", len(oi), 8*12)
	}
	// Active segment: preallocated indexes.
	act := p.Segments[2]
	for _, suf := range []string{".index", ".timeindex"} {
		st, err := os.Stat(filepath.Join(dir, p.Dir, FileName(act.BaseOffset, suf)))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(DefaultSegmentIndexBytes / 8 * 8)
		if suf == ".timeindex" {
			want = DefaultSegmentIndexBytes / 12 * 12
		}
		if st.Size() != want {
			t.Errorf("%s size %d, want %d", suf, st.Size(), want)
		}
	}
	// Checkpoints.
	lso, _ := os.ReadFile(filepath.Join(dir, "log-start-offset-checkpoint"))
	if string(lso) != "0\n2\norders.v1-eu_west 0 700\norders.v1-eu_west 1 700\n" {
		t.Fatalf("log-start-offset-checkpoint %q", lso)
	}
	hw, _ := os.ReadFile(filepath.Join(dir, "replication-offset-checkpoint"))
	if !strings.Contains(string(hw), "compacted 0 50\n") || !strings.HasPrefix(string(hw), "0\n3\n") {
		t.Fatalf("replication-offset-checkpoint %q", hw)
	}
	meta, _ := os.ReadFile(filepath.Join(dir, "meta.properties"))
	for _, want := range []string{"node.id=3\n", "version=1\n", "cluster.id=kdg-test-cluster\n", "directory.id="} {
		if !strings.Contains(string(meta), want) {
			t.Errorf("meta.properties lacks %q", want)
		}
	}
	// No time index: mtime carries the timestamp.
	st, err := os.Stat(filepath.Join(dir, "compacted-0", FileName(0, ".log")))
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(testNow.Add(-time.Hour)) {
		t.Fatalf("mtime %v", st.ModTime())
	}
	for _, name := range []string{"__cluster_metadata-0", "orders.v1-eu_west-0/00000000000000000000.log.deleted"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		a, b := t.TempDir(), t.TempDir()
		if _, err := Generate(a, testSpec(sparse)); err != nil {
			t.Fatal(err)
		}
		if _, err := Generate(b, testSpec(sparse)); err != nil {
			t.Fatal(err)
		}
		n := 0
		err := filepath.WalkDir(a, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(a, path)
			x, _ := os.ReadFile(path)
			y, err := os.ReadFile(filepath.Join(b, rel))
			if err != nil {
				return err
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s differs", rel)
			}
			n++
			return nil
		})
		if err != nil || n < 30 {
			t.Fatalf("walk: %v, %d files", err, n)
		}
	}
}
