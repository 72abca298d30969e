package agent

import (
	"encoding/binary"
	"errors"
	"io"
)

// Index entry sizes (Kafka's OffsetIndex and TimeIndex).
const (
	offsetEntrySize = 8  // 4-byte relative offset, 4-byte position
	timeEntrySize   = 12 // 8-byte timestamp (ms), 4-byte relative offset
	seekHole        = 4  // lseek whence SEEK_HOLE
	batchHeaderSize = 61 // record batch v2 header
	maxTailBatches  = 1 << 16
)

// indexFile is what the index readers need of a file.
type indexFile interface {
	ReadAt(p []byte, off int64) (int, error)
	Seek(offset int64, whence int) (int64, error)
}

// segReader is an open segment file.
type segReader interface {
	indexFile
	Close() error
}

// errCorrupt marks index content Kafka would not have written.
var errCorrupt = errors.New("corrupt index")

// isZero reports whether an index entry is all zero bytes: an unused slot
// of a preallocated index file.
func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// validEntries counts the valid entries of an index file of the given size:
// Kafka writes a prefix of non-zero entries and, for the active segment,
// leaves the rest of the preallocated file zero (often a hole). It reads
// the last entry first (a trimmed index), then bounds the search with
// SEEK_HOLE, then binary-searches with small reads: a 10 MiB preallocated
// index costs a handful of system calls. buf is scratch space (>= 4 KiB).
//
// size is the size the file was listed with. When the segment rolls in
// between, Kafka trims the index to its valid entries and a read at the
// listed size finds the end of the file: that is the broker at work on a
// busy log, not an I/O error, so the file is read again at its size now.
func validEntries(f indexFile, size int64, es int64, buf []byte) (int64, error) {
	n, _, err := validEntriesWindow(f, size, es, buf, false)
	return n, err
}

// indexWindow is a run of an index file's entries already read into
// memory (into a caller's scratch buffer): entries from, from+1, ... of
// es bytes each, in b.
type indexWindow struct {
	b    []byte
	from int64
}

// entries returns entries [i, i+k) of es bytes when the window holds them
// all, else nil.
func (w indexWindow) entries(i, k, es int64) []byte {
	if k <= 0 || i < w.from || (i+k-w.from)*es > int64(len(w.b)) {
		return nil
	}
	return w.b[(i-w.from)*es : (i+k-w.from)*es]
}

// validEntriesWindow is validEntries that also returns the entries its
// last read left in buf, so callers need not read them again. lastZero
// says the caller already read the last entry (at size) and found it
// zero.
func validEntriesWindow(f indexFile, size int64, es int64, buf []byte, lastZero bool) (int64, indexWindow, error) {
	n, w, err := validEntriesOf(f, size, es, buf, lastZero)
	if errors.Is(err, io.EOF) {
		if cur, serr := f.Seek(0, io.SeekEnd); serr == nil && cur < size {
			return validEntriesOf(f, cur, es, buf, false)
		}
	}
	return n, w, err
}

func validEntriesOf(f indexFile, size int64, es int64, buf []byte, lastZero bool) (int64, indexWindow, error) {
	total := size / es
	if total == 0 {
		return 0, indexWindow{}, nil
	}
	if !lastZero {
		e := buf[:es]
		if _, err := f.ReadAt(e, (total-1)*es); err != nil {
			return 0, indexWindow{}, err
		}
		if !isZero(e) {
			return total, indexWindow{e, total - 1}, nil
		}
	}
	lo, hi := int64(0), total-1 // the answer is in [lo, hi]: entry hi is zero
	if hole, err := f.Seek(0, seekHole); err == nil && hole < size {
		if h := (hole + es - 1) / es; h < hi {
			hi = h
		}
	}
	for hi > lo {
		if (hi-lo)*es <= int64(len(buf)) {
			chunk := buf[:(hi-lo)*es]
			if _, err := f.ReadAt(chunk, lo*es); err != nil && !errors.Is(err, io.EOF) {
				return 0, indexWindow{}, err
			}
			// The last entry with a non-zero byte ends the valid ones.
			n := lo
			if i := lastNonZero(chunk); i >= 0 {
				n = lo + int64(i)/es + 1
			}
			return n, indexWindow{chunk, lo}, nil
		}
		mid := lo + (hi-lo)/2
		e := buf[:es]
		if _, err := f.ReadAt(e, mid*es); err != nil {
			return 0, indexWindow{}, err
		}
		if isZero(e) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, indexWindow{}, nil
}

// lastNonZero returns the index of b's last non-zero byte, -1 when b is
// all zero (eight bytes at a time: a preallocated index's zero tail).
func lastNonZero(b []byte) int {
	i := len(b)
	for i >= 8 && binary.LittleEndian.Uint64(b[i-8:i]) == 0 {
		i -= 8
	}
	for i > 0 {
		i--
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// timeEntry decodes a time index entry.
func timeEntry(b []byte) (ts int64, rel uint32) {
	return int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint32(b[8:])
}

// offsetEntry decodes an offset index entry.
func offsetEntry(b []byte) (rel uint32, pos uint32) {
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
}

// lastTimestamp returns the last valid time index entry's timestamp (-1
// when there is none) and the number of valid entries. It reports
// errCorrupt (with the best value it could find) when the file length is
// not a multiple of 12 or the last two timestamps decrease.
func lastTimestamp(f indexFile, size int64, buf []byte) (ts int64, n int64, err error) {
	ts, n, _, err = lastTimestampWindow(f, size, buf)
	return ts, n, err
}

// lastTimestampWindow is lastTimestamp that also returns the entries its
// last read left in buf (see validEntriesWindow).
func lastTimestampWindow(f indexFile, size int64, buf []byte) (ts int64, n int64, w indexWindow, err error) {
	// A closed segment's time index is trimmed to its entries: one read
	// of the last two finds the last entry and checks the order (one
	// system call a segment). Else (a preallocated index: zero there) the
	// search below need not read the last entry again.
	lastZero := false
	if total := size / timeEntrySize; total > 0 {
		first := max(total-2, 0)
		b := buf[:(total-first)*timeEntrySize]
		if _, rerr := f.ReadAt(b, first*timeEntrySize); rerr == nil {
			if !isZero(b[len(b)-timeEntrySize:]) {
				ts, n, err = lastTimestampOf(b, total, size)
				return ts, n, indexWindow{b, first}, err
			}
			lastZero = true
		}
	}
	n, w, err = validEntriesWindow(f, size, timeEntrySize, buf, lastZero)
	if err != nil || n == 0 {
		if err == nil && size%timeEntrySize != 0 {
			err = errCorrupt
		}
		return -1, n, w, err
	}
	first := n - 2
	if first < 0 {
		first = 0
	}
	b := w.entries(first, n-first, timeEntrySize)
	if b == nil {
		b = buf[:(n-first)*timeEntrySize]
		if _, err := f.ReadAt(b, first*timeEntrySize); err != nil {
			return -1, n, indexWindow{}, err
		}
		w = indexWindow{b, first}
	}
	ts, n, err = lastTimestampOf(b, n, size)
	return ts, n, w, err
}

// lastTimestampOf checks and decodes the last one or two valid entries b
// of a time index of n valid entries and the given size.
func lastTimestampOf(b []byte, n, size int64) (ts int64, _ int64, err error) {
	ts, _ = timeEntry(b[len(b)-timeEntrySize:])
	if len(b) == 2*timeEntrySize {
		if prev, _ := timeEntry(b); prev > ts {
			err = errCorrupt
		}
	}
	if size%timeEntrySize != 0 || ts < 0 {
		err = errCorrupt
	}
	return ts, n, err
}

// expiryPoints is how many (timestamp, position) points the scanner keeps
// for an active segment (spec R1.6).
const expiryPoints = 8

// sampleExpiry builds the open segment's expiry curve: points (ts, pos)
// such that every record stored before byte pos has a timestamp <= ts.
// The j-th time index entry is appended at the same append as the j-th
// offset index entry or later (time entries are skipped when the max
// timestamp does not grow), so the bytes before the j-th offset entry's
// position were all appended before the j-th time entry's max timestamp
// was recorded.
func sampleExpiry(ti indexFile, nTime int64, oi indexFile, nOff int64, buf []byte) ([]ExpiryPoint, error) {
	return sampleExpiryWindows(indexRead{ti, nTime, indexWindow{}}, indexRead{oi, nOff, indexWindow{}}, buf)
}

// indexRead is an open index file, its valid entries, and those of them
// already read (see validEntriesWindow).
type indexRead struct {
	f indexFile
	n int64
	w indexWindow
}

// sampleExpiryWindows is sampleExpiry with the entries already read of
// each index: when they hold both indexes' entries [0, n), nothing is
// read again.
func sampleExpiryWindows(t, o indexRead, buf []byte) ([]ExpiryPoint, error) {
	ti, nTime, tw, oi, nOff, ow := t.f, t.n, t.w, o.f, o.n, o.w
	n := min(nTime, nOff)
	if n == 0 {
		return nil, nil
	}
	k := int64(expiryPoints)
	if n < k {
		k = n
	}
	pts := make([]ExpiryPoint, 0, k)
	if tb, ob := tw.entries(0, n, timeEntrySize), ow.entries(0, n, offsetEntrySize); tb != nil && ob != nil {
		for i := int64(0); i < k; i++ {
			j := (i+1)*n/k - 1
			ts, _ := timeEntry(tb[j*timeEntrySize:])
			_, pos := offsetEntry(ob[j*offsetEntrySize:])
			pts = append(pts, ExpiryPoint{TimestampMs: ts, Position: int64(pos)})
		}
	} else if n*timeEntrySize <= int64(len(buf))/2 {
		tb := buf[:n*timeEntrySize]
		ob := buf[n*timeEntrySize : n*timeEntrySize+n*offsetEntrySize]
		if _, err := ti.ReadAt(tb, 0); err != nil {
			return nil, err
		}
		if _, err := oi.ReadAt(ob, 0); err != nil {
			return nil, err
		}
		for i := int64(0); i < k; i++ {
			j := (i+1)*n/k - 1
			ts, _ := timeEntry(tb[j*timeEntrySize:])
			_, pos := offsetEntry(ob[j*offsetEntrySize:])
			pts = append(pts, ExpiryPoint{TimestampMs: ts, Position: int64(pos)})
		}
	} else {
		e := buf[:timeEntrySize]
		for i := int64(0); i < k; i++ {
			j := (i+1)*n/k - 1
			if _, err := ti.ReadAt(e, j*timeEntrySize); err != nil {
				return nil, err
			}
			ts, _ := timeEntry(e)
			if _, err := oi.ReadAt(e[:offsetEntrySize], j*offsetEntrySize); err != nil {
				return nil, err
			}
			_, pos := offsetEntry(e)
			pts = append(pts, ExpiryPoint{TimestampMs: ts, Position: int64(pos)})
		}
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].TimestampMs < pts[i-1].TimestampMs || pts[i].Position < pts[i-1].Position {
			return pts[:i], errCorrupt
		}
	}
	return pts, nil
}

// lastOffsetPosition returns the file position of the last offset index
// entry (0 when the index is empty).
func lastOffsetPosition(f indexFile, n int64, buf []byte) (int64, error) {
	return lastOffsetPositionWindow(f, n, indexWindow{}, buf)
}

// lastOffsetPositionWindow is lastOffsetPosition that takes the entry
// from w when w holds it.
func lastOffsetPositionWindow(f indexFile, n int64, w indexWindow, buf []byte) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	if e := w.entries(n-1, 1, offsetEntrySize); e != nil {
		_, pos := offsetEntry(e)
		return int64(pos), nil
	}
	e := buf[:offsetEntrySize]
	if _, err := f.ReadAt(e, (n-1)*offsetEntrySize); err != nil {
		return 0, err
	}
	_, pos := offsetEntry(e)
	return int64(pos), nil
}

// batchTail walks the record batch headers of a .log file from pos to its
// end and returns the largest batch max timestamp (-1 if none) and the
// offset after the last batch (-1 if no batch was found). The active
// segment's time index lags the records appended since its last entry
// (less than index.interval.bytes plus one batch); their batch headers
// carry the timestamps Kafka keeps in memory. Only v2 batches are read;
// the walk stops at anything else (a torn write, preallocated zeros).
func batchTail(f indexFile, pos, size int64, buf []byte) (maxTs, next int64, err error) {
	t, err := walkBatches(f, pos, size, buf)
	return t.maxTs, t.next, err
}

// tail is what a walk over the active segment's last batches found.
type tail struct {
	maxTs, next int64
	// end is the file position after the last whole batch.
	end int64
	// zeros: the walk stopped at an all-zero header, the unwritten rest
	// of a preallocated file (preallocate=true): end is then the bytes
	// written, what Kafka counts (FileRecords.sizeInBytes).
	zeros bool
}

// walkBatches is batchTail with the position where the batches end.
func walkBatches(f indexFile, pos, size int64, buf []byte) (t tail, err error) {
	t = tail{maxTs: -1, next: -1, end: pos}
	bufStart, bufLen := int64(0), int64(0)
	for i := 0; i < maxTailBatches && pos+batchHeaderSize <= size; i++ {
		if pos < bufStart || pos+batchHeaderSize > bufStart+bufLen {
			// Nothing past size counts: reading only up to it saves the
			// read that would find the end of the file.
			n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
			if err != nil && !errors.Is(err, io.EOF) {
				return t, err
			}
			bufStart, bufLen = pos, int64(n)
			if bufLen < batchHeaderSize {
				break
			}
		}
		h := buf[pos-bufStart:]
		be := binary.BigEndian
		base := int64(be.Uint64(h))
		length := int64(int32(be.Uint32(h[8:])))
		if h[16] != 2 || length < batchHeaderSize-12 || pos+12+length > size || base < 0 {
			t.zeros = isZero(h[:17])
			break
		}
		lastDelta := int64(int32(be.Uint32(h[23:])))
		if ts := int64(be.Uint64(h[35:])); ts > t.maxTs {
			t.maxTs = ts
		}
		t.next = base + lastDelta + 1
		pos += 12 + length
		t.end = pos
	}
	return t, nil
}
