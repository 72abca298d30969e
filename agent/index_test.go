package agent

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// R6: a segment that rolls between listing and reading has its indexes
// trimmed by the broker; reading them at the listed (preallocated) size
// reaches the end of the file. The entries are read at the file's size now,
// without an error: on a busy broker this happens at every roll.
func TestR6IndexTrimmedByARollAfterListing(t *testing.T) {
	const listed = 10485756 // Kafka's preallocated time index, 10 MiB rounded to 12-byte entries
	var b []byte
	for i, ts := range []int64{1000, 2000, 3000} {
		e := make([]byte, timeEntrySize)
		binary.BigEndian.PutUint64(e, uint64(ts))
		binary.BigEndian.PutUint32(e[8:], uint32(i*10))
		b = append(b, e...)
	}
	buf := make([]byte, 4096)

	ts, n, err := lastTimestamp(bytes.NewReader(b), listed, buf)
	if err != nil || n != 3 || ts != 3000 {
		t.Fatalf("time index trimmed after listing: ts %d, entries %d, err %v; want 3000, 3, nil", ts, n, err)
	}
	off := make([]byte, 5*offsetEntrySize)
	for i := range 5 {
		binary.BigEndian.PutUint32(off[i*offsetEntrySize:], uint32(i+1))
		binary.BigEndian.PutUint32(off[i*offsetEntrySize+4:], uint32(4096*(i+1)))
	}
	if n, err := validEntries(bytes.NewReader(off), 10485760, offsetEntrySize, buf); err != nil || n != 5 {
		t.Fatalf("offset index trimmed after listing: entries %d, err %v; want 5, nil", n, err)
	}
	// A file that did not shrink still reports what is wrong with it.
	if _, _, err := lastTimestamp(bytes.NewReader(b[:30]), 30, buf); err == nil {
		t.Fatal("a time index of 30 bytes read without error")
	}
}
