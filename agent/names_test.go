package agent

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func TestParsePartitionDirName(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		part  int32
		kind  PartitionKind
		ok    bool
	}{
		{"orders-0", "orders", 0, KindLive, true},
		{"my-topic-with-dashes-12", "my-topic-with-dashes", 12, KindLive, true},
		{"a.b_c-d-2147483647", "a.b_c-d", 2147483647, KindLive, true},
		{"__consumer_offsets-49", "__consumer_offsets", 49, KindLive, true},
		{"__cluster_metadata-0", "__cluster_metadata", 0, KindMetadata, true},
		{"orders-3.4b2a7c3f1e0d4d6c9a8b7c6d5e4f3a2b-delete", "orders", 3, KindDeleted, true},
		{"my-topic-1.4b2a7c3f1e0d4d6c9a8b7c6d5e4f3a2b-future", "my-topic", 1, KindFuture, true},
		{"t.x-0.4b2a7c3f1e0d4d6c9a8b7c6d5e4f3a2b-stray", "t.x", 0, KindStray, true},
		{"orders", "", 0, "", false},
		{"orders-", "", 0, "", false},
		{"-0", "", 0, "", false},
		{"orders-01", "", 0, "", false},
		{"orders--1", "orders-", 1, KindLive, true}, // a topic may end with a dash
		{"orders-2147483648", "", 0, "", false},
		{"orders-x", "", 0, "", false},
		{"bad topic-0", "", 0, "", false},
		{"orders-0-delete", "", 0, "", false},
		{"lost+found", "", 0, "", false},
	}
	for _, tc := range tests {
		t.Run("R1.1/"+tc.name, func(t *testing.T) {
			topic, part, kind, ok := ParsePartitionDirName(tc.name)
			if ok != tc.ok || topic != tc.topic || part != tc.part || kind != tc.kind {
				t.Errorf("got %q %d %q %v, want %q %d %q %v", topic, part, kind, ok, tc.topic, tc.part, tc.kind, tc.ok)
			}
		})
	}
}

func TestParseSegmentFileName(t *testing.T) {
	tests := []struct {
		name string
		base int64
		kind fileKind
		ok   bool
	}{
		{"00000000000000000000.log", 0, fileLog, true},
		{"00000000000000012345.index", 12345, fileIndex, true},
		{"09223372036854775807.timeindex", 1<<63 - 1, fileTimeIndex, true},
		{"00000000000000000042.txnindex", 42, fileTxnIndex, true},
		{"00000000000000000042.snapshot", 42, fileSnapshot, true},
		{"00000000000000000042.log.deleted", 42, fileDeleted, true},
		{"00000000000000000042.timeindex.deleted", 42, fileDeleted, true},
		{"00000000000000000042.log.cleaned", 42, fileCleaned, true},
		{"00000000000000000042.index.swap", 42, fileSwap, true},
		{"leader-epoch-checkpoint", -1, fileMeta, true},
		{"partition.metadata", -1, fileMeta, true},
		{"00000000000000000100-0000000001.checkpoint", -1, fileMeta, true},
		{"09223372036854775808.log", -1, fileUnknown, false},
		{"0000000000000000042.log", -1, fileUnknown, false},
		{"0000000000000000004a.log", -1, fileUnknown, false},
		{"00000000000000000042.logs", 42, fileUnknown, false},
		{"00000000000000000042.log.bak", 42, fileUnknown, false},
		{"notes.txt", -1, fileUnknown, false},
	}
	for _, tc := range tests {
		t.Run("R1.1/"+tc.name, func(t *testing.T) {
			base, kind, ok := parseSegmentFileName(tc.name)
			if base != tc.base || kind != tc.kind || ok != tc.ok {
				t.Errorf("got %d %d %v, want %d %d %v", base, kind, ok, tc.base, tc.kind, tc.ok)
			}
		})
	}
}

func TestParseCheckpoint(t *testing.T) {
	m, err := parseCheckpoint([]byte("0\n2\nmy-topic.x 3 100\n__consumer_offsets 0 7\n"))
	if err != nil || m[TopicPartition{"my-topic.x", 3}] != 100 || m[TopicPartition{"__consumer_offsets", 0}] != 7 {
		t.Fatalf("%v %v", m, err)
	}
	// Kafka creates checkpoint files empty at start: no entries, no error.
	if m, err := parseCheckpoint(nil); err != nil || len(m) != 0 {
		t.Fatalf("empty checkpoint file: %v %v", m, err)
	}
	for _, bad := range []string{"1\n0\n", "0\nx\n", "0\n1\n", "0\n1\na 0\n", "0\n1\na b 1\n", "0\n1\na 0 x\n", "0\n1\na 0 1\nb 0 2\n"} {
		if _, err := parseCheckpoint([]byte(bad)); err == nil {
			t.Errorf("R6: %q accepted", bad)
		}
	}
}

func TestParseMetaProperties(t *testing.T) {
	tests := []struct {
		body    string
		id      int32
		cluster string
		ok      bool
	}{
		{"#\nnode.id=3\ndirectory.id=abc\nversion=1\ncluster.id=Xy_z\n", 3, "Xy_z", true},
		{"version=0\nbroker.id=12\ncluster.id=c\n", 12, "c", true},
		{"version=1\ncluster.id=c\n", -1, "c", false},
		{"node.id=-4\n", -1, "", false},
	}
	for _, tc := range tests {
		t.Run("R1.5", func(t *testing.T) {
			id, cluster, err := parseMetaProperties([]byte(tc.body))
			if id != tc.id || cluster != tc.cluster || (err == nil) != tc.ok {
				t.Errorf("%q: got %d %q %v", tc.body, id, cluster, err)
			}
		})
	}
}

func FuzzParsePartitionDirName(f *testing.F) {
	for _, s := range []string{"orders-0", "a-b-1", "x-1.abc-delete", "__cluster_metadata-0", "-", "a-99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		topic, part, kind, ok := ParsePartitionDirName(name)
		if !ok {
			return
		}
		if part < 0 || topic == "" || !validTopicName(topic) || kind == "" {
			t.Fatalf("%q: %q %d %q", name, topic, part, kind)
		}
		if kind == KindLive || kind == KindMetadata {
			if got := topic + "-" + itoa(int64(part)); got != name {
				t.Fatalf("%q does not round-trip: %q", name, got)
			}
		}
	})
}

func FuzzParseSegmentFileName(f *testing.F) {
	for _, s := range []string{"00000000000000000000.log", "00000000000000000001.timeindex.deleted", "leader-epoch-checkpoint", "0.log", "99999999999999999999.log"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, kind, ok := parseSegmentFileName(name)
		if ok && kind != fileMeta && (base < 0 || name[:20] != pad20(base)) {
			t.Fatalf("%q: base %d", name, base)
		}
		if !ok && kind != fileUnknown {
			t.Fatalf("%q: kind %d without ok", name, kind)
		}
	})
}

// FuzzIndexReaders feeds arbitrary bytes to the index readers as a time
// index, an offset index and a log tail: they must never panic, read past
// the file or return offsets outside it.
func FuzzIndexReaders(f *testing.F) {
	var seed []byte
	for i := 1; i <= 5; i++ {
		seed = binary.BigEndian.AppendUint64(seed, uint64(1000*i))
		seed = binary.BigEndian.AppendUint32(seed, uint32(i))
	}
	f.Add(seed, int64(0))
	f.Add(append(seed, make([]byte, 4096)...), int64(3))
	f.Add([]byte{1, 2, 3}, int64(1))
	f.Add(bytes.Repeat([]byte{0}, 100), int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, pos int64) {
		path := filepath.Join(dir, "idx")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		size := int64(len(data))
		buf := make([]byte, scratchSize)
		for _, es := range []int64{timeEntrySize, offsetEntrySize} {
			n, err := validEntries(fh, size, es, buf)
			if err != nil {
				t.Fatalf("validEntries: %v", err)
			}
			if n < 0 || n > size/es {
				t.Fatalf("validEntries %d out of range", n)
			}
			if n > 0 && isZero(data[(n-1)*es:n*es]) {
				t.Fatalf("entry %d is zero but counted", n-1)
			}
		}
		ts, n, _ := lastTimestamp(fh, size, buf)
		if n > 0 && ts == -1 && !isZero(data[(n-1)*12:n*12]) && int64(binary.BigEndian.Uint64(data[(n-1)*12:])) != -1 {
			t.Fatalf("lastTimestamp lost the last entry")
		}
		nt, _ := validEntries(fh, size, timeEntrySize, buf)
		no, _ := validEntries(fh, size, offsetEntrySize, buf)
		pts, _ := sampleExpiry(fh, nt, fh, no, buf)
		if len(pts) > expiryPoints {
			t.Fatalf("%d points", len(pts))
		}
		if pos < 0 {
			pos = -pos
		}
		if pos < 0 {
			pos = 0
		}
		maxTs, next, err := batchTail(fh, pos%(size+1), size, buf)
		if err != nil {
			t.Fatalf("batchTail: %v", err)
		}
		if next < -1 || (next == -1 && maxTs != -1) {
			t.Fatalf("batchTail next %d max %d", next, maxTs)
		}
	})
}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	if v == 0 {
		return "0"
	}
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

func pad20(v int64) string {
	s := itoa(v)
	for len(s) < 20 {
		s = "0" + s
	}
	return s
}
