package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

func badInputSpec() logdirgen.Spec {
	segs := []logdirgen.Segment{{Bytes: 32 << 10, Age: 50 * time.Hour}, {Bytes: 32 << 10, Age: 40 * time.Hour}, {Bytes: 8 << 10, Age: time.Hour}}
	return logdirgen.Spec{NodeID: 1, Topics: []logdirgen.Topic{
		{Name: "a", Partitions: 1, Segments: segs},
		{Name: "b", Partitions: 1, Segments: segs},
	}}
}

func TestScanBadInput(t *testing.T) {
	seg0 := logdirgen.FileName(0, "")
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string, s *Scanner)
		kind   ErrorKind
		check  func(t *testing.T, ld LogDir)
	}{
		{"R6/garbage file name in a partition dir", func(t *testing.T, dir string, _ *Scanner) {
			write(t, filepath.Join(dir, "a-0", "notes.txt"), "x")
			write(t, filepath.Join(dir, "a-0", "123.log"), "x")
			write(t, filepath.Join(dir, "a-0", "00000000000000000000.logx"), "x")
		}, ErrBadName, func(t *testing.T, ld LogDir) {
			if p := findPartition(t, ld, "a-0"); len(p.Segments) != 3 || p.OtherBytes < 3*4096 {
				t.Errorf("segments %d other bytes %d", len(p.Segments), p.OtherBytes)
			}
		}},
		{"R6/garbage directory name at the root", func(t *testing.T, dir string, _ *Scanner) {
			if err := os.MkdirAll(filepath.Join(dir, "no_partition_number", "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "no_partition_number", "sub", "f"), "data")
			if err := os.Mkdir(filepath.Join(dir, "topic-01"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, ErrBadName, func(t *testing.T, ld LogDir) {
			if len(ld.Partitions) != 2 || ld.OtherBytes < 3*4096 {
				t.Errorf("partitions %d other bytes %d", len(ld.Partitions), ld.OtherBytes)
			}
		}},
		{"R6/time index length not a multiple of 12", func(t *testing.T, dir string, _ *Scanner) {
			appendBytes(t, filepath.Join(dir, "a-0", seg0+".timeindex"), []byte{1, 2, 3, 4, 5})
		}, ErrCorruptIndex, func(t *testing.T, ld LogDir) {
			s := findPartition(t, ld, "a-0").Segments[0]
			if !s.LargestTimestamp().Equal(testNow.Add(-50*time.Hour)) || s.TimestampSource != TimestampFromTimeIndex {
				t.Errorf("largest timestamp %v from %s: the whole entries still count", s.LargestTimestamp(), s.TimestampSource)
			}
		}},
		{"R6/time index with decreasing timestamps", func(t *testing.T, dir string, _ *Scanner) {
			var e [12]byte
			binary.BigEndian.PutUint64(e[:], uint64(testNow.Add(-100*time.Hour).UnixMilli()))
			appendBytes(t, filepath.Join(dir, "a-0", seg0+".timeindex"), e[:])
		}, ErrCorruptIndex, func(t *testing.T, ld LogDir) {
			if n := len(findPartition(t, ld, "a-0").Segments); n != 3 {
				t.Errorf("segments %d", n)
			}
		}},
		{"R6/active offset index pointing past the log", func(t *testing.T, dir string, _ *Scanner) {
			f, err := os.OpenFile(filepath.Join(dir, "b-0", logdirgen.FileName(0, ".index")), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Rewrite the active segment's index instead.
			act := findSegmentFile(t, dir, "b-0", ".index", true)
			g, err := os.OpenFile(act, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if _, err := g.WriteAt([]byte{0, 0, 0, 9, 0x7f, 0, 0, 0}, 0); err != nil {
				t.Fatal(err)
			}
		}, ErrCorruptIndex, func(t *testing.T, ld LogDir) {
			p := findPartition(t, ld, "b-0")
			if p.LogEndOffset <= 0 {
				t.Errorf("log end offset %d: the tail walk must restart from the segment start", p.LogEndOffset)
			}
		}},
		{"R6/a file named like a partition directory", func(t *testing.T, dir string, _ *Scanner) {
			write(t, filepath.Join(dir, "c-0"), "not a directory")
		}, ErrBadName, func(t *testing.T, ld LogDir) {
			for _, p := range ld.Partitions {
				if p.Dir == "c-0" {
					t.Errorf("file c-0 reported as a partition")
				}
			}
			if len(ld.Partitions) != 2 {
				t.Errorf("partitions %d", len(ld.Partitions))
			}
		}},
		{"R6/corrupt checkpoint file", func(t *testing.T, dir string, _ *Scanner) {
			write(t, filepath.Join(dir, "replication-offset-checkpoint"), "0\n5\na 0 12\n")
		}, ErrCorruptIndex, func(t *testing.T, ld LogDir) {
			if hw := findPartition(t, ld, "a-0").HighWatermark; hw != 12 {
				t.Errorf("high watermark %d: entries before the error still count", hw)
			}
		}},
		{"R6/corrupt meta.properties", func(t *testing.T, dir string, _ *Scanner) {
			write(t, filepath.Join(dir, "meta.properties"), "version=1\nnode.id=abc\n")
		}, ErrCorruptIndex, func(t *testing.T, ld LogDir) {
			if ld.BrokerID != -1 || len(ld.Partitions) != 2 {
				t.Errorf("broker id %d partitions %d", ld.BrokerID, len(ld.Partitions))
			}
		}},
		{"R6/files vanish between listing and reading", func(t *testing.T, dir string, s *Scanner) {
			s.afterList = func(d string) {
				if filepath.Base(d) == "a-0" {
					for _, suf := range []string{".log", ".index", ".timeindex"} {
						os.Remove(filepath.Join(d, seg0+suf))
					}
				}
			}
		}, ErrVanished, func(t *testing.T, ld LogDir) {
			if n := len(findPartition(t, ld, "a-0").Segments); n != 2 {
				t.Errorf("segments %d, want the 2 that remain", n)
			}
			if n := len(findPartition(t, ld, "b-0").Segments); n != 3 {
				t.Errorf("other partition: %d segments", n)
			}
		}},
		{"R6/partition dir vanishes", func(t *testing.T, dir string, s *Scanner) {
			s.afterList = func(d string) {
				if filepath.Base(d) == "a-0" {
					os.RemoveAll(d)
				}
			}
		}, ErrVanished, func(t *testing.T, ld LogDir) {
			if n := len(findPartition(t, ld, "b-0").Segments); n != 3 {
				t.Errorf("other partition: %d segments", n)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := generate(t, badInputSpec())
			var logs bytes.Buffer
			s := testScanner(t, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			tc.break_(t, dir, s)
			ld := s.ScanLogDir(dir, nil)
			if ld.Err != nil {
				t.Fatalf("scan gave up: %v", ld.Err)
			}
			errs := s.Errors()
			if errs[tc.kind] == 0 {
				t.Errorf("errors %v, want %s counted\n%s", errs, tc.kind, logs.String())
			}
			// Vanished files are the broker's normal churn: debug, not warn.
			level := "level=WARN"
			if tc.kind == ErrVanished {
				level = "level=DEBUG"
			}
			if !regexp.MustCompile(level + ` msg="scan error" .*kind=` + string(tc.kind)).MatchString(logs.String()) {
				t.Errorf("no %s log line for %s:\n%s", level, tc.kind, logs.String())
			}
			tc.check(t, ld)
		})
	}
}

func TestScanErrorLoggedOnceCountedEachTime(t *testing.T) {
	dir, _ := generate(t, badInputSpec())
	write(t, filepath.Join(dir, "a-0", "junk"), "x")
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	s.ScanLogDir(dir, nil)
	s.ScanLogDir(dir, nil)
	if n := s.Errors()[ErrBadName]; n != 2 {
		t.Errorf("R6: counted %d, want 2", n)
	}
	if n := strings.Count(logs.String(), "junk"); n != 1 {
		t.Errorf("R6: logged %d times, want once:\n%s", n, logs)
	}
}

func TestScanLogDirMissing(t *testing.T) {
	logger, _ := testLogger(t)
	s := testScanner(t, logger)
	for _, path := range []string{filepath.Join(t.TempDir(), "gone"), writeTemp(t)} {
		ld := s.ScanLogDir(path, nil)
		if ld.Err == nil || ld.BrokerID != -1 {
			t.Errorf("R6: %s: err %v", path, ld.Err)
		}
	}
	if n := s.Errors()[ErrLogDirMissing]; n != 2 {
		t.Errorf("R6: log_dir_missing %d, want 2", n)
	}
}

// TestScanUnreadableDir runs the scan as an unprivileged user (root reads
// everything): a partition directory it may not read is counted as a
// permission error and the rest of the log dir is still scanned.
func TestScanUnreadableDir(t *testing.T) {
	if dir := os.Getenv("KDG_PERMISSION_HELPER_DIR"); dir != "" {
		logger, _ := testLogger(t)
		s := testScanner(t, logger)
		ld := s.ScanLogDir(dir, nil)
		out := map[string]any{"errors": s.Errors(), "partitions": len(ld.Partitions), "b0": len(findPartition(t, ld, "b-0").Segments)}
		json.NewEncoder(os.Stdout).Encode(out)
		return
	}
	base := t.TempDir()
	dir := filepath.Join(base, "logdir")
	if _, err := logdirgen.Generate(dir, withNow(badInputSpec())); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "a-0"), 0); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Errors     map[ErrorKind]uint64
		Partitions int
		B0         int
	}
	if os.Getuid() == 0 {
		// Re-run this test as nobody.
		for p := base; p != "/" && p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil {
				os.Chmod(p, fi.Mode().Perm()|0o005)
			}
		}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && p != filepath.Join(dir, "a-0") && !strings.HasPrefix(p, filepath.Join(dir, "a-0")+"/") {
				os.Chmod(p, fi.Mode().Perm()|0o005)
			}
			return nil
		})
		// The test binary lives in a private build dir: copy it where nobody can run it.
		exe, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(base, "agent.test")
		if err := os.WriteFile(bin, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestScanUnreadableDir$")
		cmd.Env = append(os.Environ(), "KDG_PERMISSION_HELPER_DIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		line := strings.SplitN(string(out), "\n", 2)[0]
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("helper output %q: %v", out, err)
		}
	} else {
		logger, _ := testLogger(t)
		s := testScanner(t, logger)
		ld := s.ScanLogDir(dir, nil)
		res.Errors, res.Partitions, res.B0 = s.Errors(), len(ld.Partitions), len(findPartition(t, ld, "b-0").Segments)
	}
	if res.Errors[ErrPermission] == 0 {
		t.Errorf("R6: errors %v, want permission counted", res.Errors)
	}
	if res.B0 != 3 {
		t.Errorf("R6: readable partition has %d segments, want 3", res.B0)
	}
}

func withNow(s logdirgen.Spec) logdirgen.Spec {
	s.Now = testNow
	return s
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTemp(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "file")
	write(t, p, "not a dir")
	return p
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// findSegmentFile returns the path of a segment file of a partition: the
// active (highest base offset) one when active is set.
func findSegmentFile(t *testing.T, dir, part, suffix string, active bool) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, part, "*"+suffix))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s", suffix, part)
	}
	if active {
		return m[len(m)-1]
	}
	return m[0]
}

// R6: the broker appends to the active segment's log, then indexes what it
// appended. A scan that took the log's size before the index gained an
// entry sees that entry past the size it took: not corruption, since it
// lies within the log as it is now. An entry past the log's current end
// still is (see TestScanBadInput).
func TestScanActiveIndexAheadOfStaleLogSize(t *testing.T) {
	dir, _ := generate(t, badInputSpec())
	logger, logs := testLogger(t)
	s := testScanner(t, logger)
	idx := findSegmentFile(t, dir, "b-0", ".index", true)
	base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(idx), ".index"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	logFile := strings.TrimSuffix(idx, ".index") + ".log"
	lfi, err := os.Stat(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// The active index's first entry points at the log's last bytes.
	pos := lfi.Size() - 1
	entry := []byte{0, 0, 0, 1, byte(pos >> 24), byte(pos >> 16), byte(pos >> 8), byte(pos)}
	if err := os.WriteFile(idx, entry, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(filepath.Join(dir, "b-0"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := Partition{}
	buf := make([]byte, 16<<10)
	stale := pos - 10 // the size the listing saw, before the last append
	s.readActive(activeSegment{dir: fileDir(d), path: filepath.Join(dir, "b-0"), base: base, logName: ".log", indexName: ".index",
		indexSize: int64(len(entry)), logBytes: stale, timestamp: -1}, &p, buf)
	if n := s.Errors()[ErrCorruptIndex]; n != 0 {
		t.Fatalf("an index entry within the current log counted as corrupt (%d):\n%s", n, logs)
	}
}

// R6: an entry that vanishes between getdents and stat (the broker's
// retention renaming a segment .deleted) does not leave the partition
// short of its bytes: the directory is listed again, the renamed files
// count as pending deletion, and nothing is reported.
func TestScanListingRacingRetention(t *testing.T) {
	dir, _ := generate(t, badInputSpec())
	pdir := filepath.Join(dir, "a-0")
	s := testScanner(t, slog.New(slog.DiscardHandler))
	before := findPartition(t, s.ScanLogDir(dir, nil), "a-0")
	lists, renamed := 0, false
	s.vanishAt = func(d, name string) bool {
		if d == pdir && name == logdirgen.FileName(0, ".index") {
			lists++ // once per listing of a-0
		}
		if d != pdir || name != logdirgen.FileName(0, ".log") || renamed {
			return false
		}
		// Listed by getdents, renamed before its stat.
		renamed = true
		if err := os.Rename(filepath.Join(d, name), filepath.Join(d, name+".deleted")); err != nil {
			t.Error(err)
		}
		return true
	}
	p := findPartition(t, s.ScanLogDir(dir, nil), "a-0")
	if lists != 2 {
		t.Errorf("a-0 listed %d times, want once more after the vanished entry", lists)
	}
	if p.DiskBytes != before.DiskBytes || p.PendingDeleteBytes < before.Segments[0].LogBytes {
		t.Errorf("disk bytes %d (was %d), pending delete %d: the renamed segment's bytes went missing",
			p.DiskBytes, before.DiskBytes, p.PendingDeleteBytes)
	}
	if errs := s.Errors(); errs[ErrVanished] != 0 {
		t.Errorf("errors %v: a listing that recovered reported a vanished file", errs)
	}
}
