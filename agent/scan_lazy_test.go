package agent

import (
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// duBytes sums the allocated bytes of every entry under dir, itself
// included, as du -s does.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += diskBytes(fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// R1.4: a first scan opens the time indexes it has no earlier value for
// and measures them with fstat instead of stat'ing them in the listing;
// every byte is still counted, as by the listing (a rescan with the
// previous result stats them there): a time index of no segment, a
// directory named like a time index, files waiting for deletion.
func TestScanMeasuresTimeIndexesItOpens(t *testing.T) {
	dir, _ := generate(t, badInputSpec())
	a0 := filepath.Join(dir, "a-0")
	write(t, filepath.Join(a0, logdirgen.FileName(900, ".timeindex")), strings.Repeat("x", 5000))
	write(t, filepath.Join(a0, logdirgen.FileName(901, ".timeindex.deleted")), strings.Repeat("y", 9000))
	sub := filepath.Join(a0, logdirgen.FileName(777, ".timeindex"))
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, "f"), strings.Repeat("z", 7000))
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	first := s.ScanLogDir(dir, nil)
	if want := duBytes(t, dir); first.DiskBytes != want {
		t.Errorf("disk bytes %d, du counts %d", first.DiskBytes, want)
	}
	p := findPartition(t, first, "a-0")
	if len(p.Segments) != 3 || p.PendingDeleteBytes < 9000 || p.OtherBytes < 5000+7000 {
		t.Errorf("a-0: %d segments, pending delete %d, other %d bytes", len(p.Segments), p.PendingDeleteBytes, p.OtherBytes)
	}
	for _, seg := range p.Segments {
		if seg.TimestampSource != TimestampFromTimeIndex {
			t.Errorf("segment %d: timestamp from %s", seg.BaseOffset, seg.TimestampSource)
		}
	}
	if errs := s.Errors(); errs[ErrBadName] != 1 || len(errs) != 1 {
		t.Errorf("errors %v, want the directory's bad name only\n%s", errs, logs)
	}
	again := s.ScanLogDir(dir, &first)
	if !reflect.DeepEqual(first, again) {
		t.Errorf("a rescan stat'ing every time index differs:\n%+v\n%+v", first, again)
	}
}

// R6: a time index the scan may not open (permission) is still measured,
// the error is counted, and the segment takes its timestamp from the log's
// mtime. Run as an unprivileged user (root opens everything).
func TestScanUnreadableTimeIndex(t *testing.T) {
	type result struct {
		Errors   map[ErrorKind]uint64
		Segments int
		Source   TimestampSource
		Disk     int64
	}
	scan := func(dir string) result {
		logger, _ := testLogger(t)
		s := testScanner(t, logger)
		ld := s.ScanLogDir(dir, nil)
		p := findPartition(t, ld, "a-0")
		r := result{Errors: s.Errors(), Segments: len(p.Segments), Disk: ld.DiskBytes}
		if len(p.Segments) > 0 {
			r.Source = p.Segments[0].TimestampSource
		}
		return r
	}
	if dir := os.Getenv("KDG_UNREADABLE_TIMEINDEX_DIR"); dir != "" {
		json.NewEncoder(os.Stdout).Encode(scan(dir))
		return
	}
	base := t.TempDir()
	dir := filepath.Join(base, "logdir")
	if _, err := logdirgen.Generate(dir, withNow(badInputSpec())); err != nil {
		t.Fatal(err)
	}
	readable := scan(dir)
	ti := filepath.Join(dir, "a-0", logdirgen.FileName(0, ".timeindex"))
	if err := os.Chmod(ti, 0); err != nil {
		t.Fatal(err)
	}
	var res result
	if os.Getuid() != 0 {
		res = scan(dir)
	} else {
		// Re-run this test as nobody, on a tree nobody may read except
		// that file.
		for p := base; p != "/" && p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil {
				os.Chmod(p, fi.Mode().Perm()|0o005)
			}
		}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && p != ti {
				os.Chmod(p, fi.Mode().Perm()|0o005)
			}
			return nil
		})
		exe, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(base, "agent.test")
		if err := os.WriteFile(bin, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestScanUnreadableTimeIndex$")
		cmd.Env = append(os.Environ(), "KDG_UNREADABLE_TIMEINDEX_DIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		line := strings.SplitN(string(out), "\n", 2)[0]
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("helper output %q: %v", out, err)
		}
	}
	if res.Errors[ErrPermission] == 0 || len(res.Errors) != 1 {
		t.Errorf("errors %v, want permission counted", res.Errors)
	}
	if res.Segments != 3 || res.Source != TimestampFromMtime {
		t.Errorf("a-0: %d segments, the first's timestamp from %v: want 3, from the mtime", res.Segments, res.Source)
	}
	if res.Disk != readable.Disk {
		t.Errorf("disk bytes %d, %d when readable: the unreadable time index was not measured", res.Disk, readable.Disk)
	}
}

// The active segment's index reads keep the entries they read (windows)
// and sample the expiry curve from them: the same values as reading the
// files again, for preallocated (sparse) and trimmed indexes of every
// length around the scratch buffer's halves.
func TestIndexWindowsMatchReads(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, entries []byte, size int64) *os.File {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, entries, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, n := range []int64{0, 1, 2, 3, 100, 340, 341, 342, 600, 682, 683, 1023, 1024, 1025, 5000} {
		for _, prealloc := range []bool{true, false} {
			var te, oe []byte
			for i := int64(0); i < n; i++ {
				te = binary.BigEndian.AppendUint64(te, uint64(1000+10*i))
				te = binary.BigEndian.AppendUint32(te, uint32(i+1))
				oe = binary.BigEndian.AppendUint32(oe, uint32(i+1))
				oe = binary.BigEndian.AppendUint32(oe, uint32(4096*(i+1)))
			}
			tsize, osize := int64(len(te)), int64(len(oe))
			if prealloc {
				tsize, osize = 10485756, 10485760
			}
			ti := &countingReader{indexFile: mk("t", te, tsize)}
			oi := &countingReader{indexFile: mk("o", oe, osize)}
			buf := make([]byte, scratchSize)
			ts, nt, tw, err := lastTimestampWindow(ti, tsize, buf[:len(buf)/2])
			if prealloc && n == 100 && ti.reads != 2 {
				t.Errorf("preallocated time index of 100 entries: %d reads, want 2 (its end, then its entries)", ti.reads)
			}
			wts, wnt, werr := lastTimestamp(ti, tsize, make([]byte, scratchSize))
			if ts != wts || nt != wnt || (err == nil) != (werr == nil) || nt != n {
				t.Fatalf("n=%d prealloc=%v: time index %d/%d/%v with windows, %d/%d/%v without", n, prealloc, ts, nt, err, wts, wnt, werr)
			}
			no, ow, err := validEntriesWindow(oi, osize, offsetEntrySize, buf[len(buf)/2:], false)
			if err != nil || no != n {
				t.Fatalf("n=%d prealloc=%v: offset index %d entries, %v", n, prealloc, no, err)
			}
			pos, err := lastOffsetPositionWindow(oi, no, ow, buf[len(buf)/2:])
			wpos, _ := lastOffsetPosition(oi, no, make([]byte, scratchSize))
			if err != nil || pos != wpos {
				t.Fatalf("n=%d prealloc=%v: last position %d with windows, %d without (%v)", n, prealloc, pos, wpos, err)
			}
			ti.reads, oi.reads = 0, 0
			pts, err := sampleExpiryWindows(indexRead{ti, nt, tw}, indexRead{oi, no, ow}, buf)
			if prealloc && n == 100 && ti.reads+oi.reads != 0 {
				t.Errorf("expiry curve of 100 entries read the indexes again (%d reads)", ti.reads+oi.reads)
			}
			wpts, werr := sampleExpiry(ti, nt, oi, no, make([]byte, scratchSize))
			if !reflect.DeepEqual(pts, wpts) || (err == nil) != (werr == nil) {
				t.Fatalf("n=%d prealloc=%v: expiry %v with windows, %v without", n, prealloc, pts, wpts)
			}
		}
	}
}

type countingReader struct {
	indexFile
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.indexFile.ReadAt(p, off)
}
