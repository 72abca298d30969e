package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

type staticConfigs ConfigSet

func (s staticConfigs) Current() ConfigSet { return ConfigSet(s) }

func testConfigs() staticConfigs {
	return staticConfigs{Defaults: DefaultTopicConfig(), Time: time.Unix(1, 0)}
}

// genLogDir writes a small realistic log dir: two topics of two partitions.
func genLogDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kafka-logs")
	_, err := logdirgen.Generate(dir, logdirgen.Spec{
		Now:    time.Now(),
		Sparse: true,
		Topics: []logdirgen.Topic{
			{Name: "orders", Partitions: 2, Segments: []logdirgen.Segment{{Bytes: 64 << 10, Age: time.Hour}, {Bytes: 8 << 10}}},
			{Name: "audit.log-v2", Partitions: 2, Segments: []logdirgen.Segment{{Bytes: 32 << 10}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// startAgent runs an agent until the test ends and waits for its first
// snapshot.
func startAgent(t *testing.T, cfg Config, setup func(*Agent)) *Agent {
	t.Helper()
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitFor(t, 5*time.Second, a, func(s *Snapshot) error { return nil })
	return a
}

// waitFor polls the agent's snapshot until cond accepts it.
func waitFor(t *testing.T, timeout time.Duration, a *Agent, cond func(*Snapshot) error) *Snapshot {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := a.Snapshot()
		var err error
		if s == nil {
			err = errors.New("no snapshot yet")
		} else {
			err = cond(s)
		}
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func livePartition(s *Snapshot, dir string) (Partition, bool) {
	for _, ld := range s.LogDirs {
		for _, p := range ld.Partitions {
			if p.Dir == dir {
				return *p, true
			}
		}
	}
	return Partition{}, false
}

func segmentBases(p Partition) []int64 {
	var out []int64
	for _, s := range p.Segments {
		out = append(out, s.BaseOffset)
	}
	return out
}

func touch(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// roll simulates a segment roll: a new segment's files after the active one.
func roll(t *testing.T, pdir string, base int64) {
	t.Helper()
	for _, suffix := range []string{".log", ".index", ".timeindex"} {
		touch(t, filepath.Join(pdir, logdirgen.FileName(base, suffix)), 0)
	}
}

// fastConfig keeps periodic work out of the way: what the tests see comes
// from events (or from the mechanism under test).
func fastConfig(dir string) Config {
	return Config{LogDirs: []string{dir}, Debounce: 20 * time.Millisecond, GrowthInterval: 100 * time.Millisecond,
		UsageInterval: 50 * time.Millisecond, ReclassifyInterval: time.Hour, ResyncInterval: time.Hour, PollInterval: 100 * time.Millisecond}
}

// Issue 4: a roll, a deletion and a new partition show up from events
// alone, within a second, without a full rescan.
func TestLiveEventsWithoutRescan(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), nil)
	s := a.Snapshot()
	if got := s.Health.Rescans["start"]; got != 1 {
		t.Fatalf("start rescans %d, want 1", got)
	}
	if s.Health.WatchMode != "inotify" || s.Health.PolledDirs != 0 {
		t.Fatalf("watch mode %q with %d polled dirs, want inotify and 0", s.Health.WatchMode, s.Health.PolledDirs)
	}
	p, _ := livePartition(s, "orders-0")
	bases := segmentBases(p)
	last := bases[len(bases)-1]

	t.Run("roll", func(t *testing.T) {
		roll(t, filepath.Join(dir, "orders-0"), last+1000)
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			p, _ := livePartition(s, "orders-0")
			n := len(p.Segments)
			if n != len(bases)+1 || p.Segments[n-1].BaseOffset != last+1000 {
				return fmt.Errorf("segments %v", segmentBases(p))
			}
			if p.Segments[n-1].State != StateOpen || p.Segments[n-2].State == StateOpen {
				return fmt.Errorf("after the roll the new segment must be the open one: %v / %v", p.Segments[n-2].State, p.Segments[n-1].State)
			}
			return nil
		})
	})
	t.Run("retention deletion", func(t *testing.T) {
		pdir := filepath.Join(dir, "orders-0")
		for _, suffix := range []string{".log", ".index", ".timeindex"} {
			old := filepath.Join(pdir, logdirgen.FileName(bases[0], suffix))
			if err := os.Rename(old, old+".deleted"); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			p, _ := livePartition(s, "orders-0")
			if p.Segments[0].BaseOffset == bases[0] {
				return fmt.Errorf("segment %d still listed", bases[0])
			}
			if p.PendingDeleteBytes == 0 || s.LogDirs[0].PendingDeleteBytes < p.PendingDeleteBytes {
				return fmt.Errorf("pending delete bytes %d (log dir %d)", p.PendingDeleteBytes, s.LogDirs[0].PendingDeleteBytes)
			}
			return nil
		})
	})
	t.Run("new topic", func(t *testing.T) {
		pdir := filepath.Join(dir, "payments-0")
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		roll(t, pdir, 0)
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			p, ok := livePartition(s, "payments-0")
			if !ok || len(p.Segments) != 1 || p.Topic != "payments" {
				return fmt.Errorf("payments-0: %v %+v", ok, p)
			}
			return nil
		})
		// A segment written into the new directory after it was found
		// proves the new directory is watched.
		roll(t, pdir, 500)
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			p, _ := livePartition(s, "payments-0")
			if len(p.Segments) != 2 {
				return fmt.Errorf("payments-0 segments %v", segmentBases(p))
			}
			return nil
		})
	})
	t.Run("topic deleted", func(t *testing.T) {
		if err := os.Rename(filepath.Join(dir, "audit.log-v2-1"), filepath.Join(dir, "audit.log-v2-1.0123456789abcdef0123456789abcdef-delete")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Second, a, func(s *Snapshot) error {
			if _, ok := livePartition(s, "audit.log-v2-1"); ok {
				return errors.New("audit.log-v2-1 still live")
			}
			p, ok := livePartition(s, "audit.log-v2-1.0123456789abcdef0123456789abcdef-delete")
			if !ok || p.Kind != KindDeleted {
				return fmt.Errorf("deleted dir not seen as deleted: %v %q", ok, p.Kind)
			}
			return nil
		})
	})
	if s := a.Snapshot(); s.Health.Rescans["start"] != 1 || len(s.Health.Rescans) != 1 {
		t.Fatalf("rescans %v: changes must come from events, not full scans", s.Health.Rescans)
	}
	if a.Snapshot().Health.PartitionRereads == 0 {
		t.Fatal("no partition re-read counted")
	}
}

// Appends to the active segment are seen on the growth cadence and counted
// as appended bytes.
func TestLiveGrowthCountsAppendedBytes(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), nil)
	p, _ := livePartition(a.Snapshot(), "orders-1")
	active := filepath.Join(dir, "orders-1", logdirgen.FileName(p.Segments[len(p.Segments)-1].BaseOffset, ".log"))
	f, err := os.OpenFile(active, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 12345)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		p, _ := livePartition(s, "orders-1")
		if p.AppendedBytes != 12345 {
			return fmt.Errorf("appended %d, want 12345", p.AppendedBytes)
		}
		return nil
	})
}

// limitedWatcher is a real inotify watcher that refuses watches past a
// limit, as the kernel does when fs.inotify.max_user_watches runs out.
type limitedWatcher struct {
	fileWatcher
	mu    sync.Mutex
	limit int
	n     int
}

func (w *limitedWatcher) Add(dir, name string) (int32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n >= w.limit {
		return 0, fmt.Errorf("add watch %s: %w", filepath.Join(dir, name), syscall.ENOSPC)
	}
	w.n++
	return w.fileWatcher.Add(dir, name)
}

// R6: an exhausted inotify watch limit falls back to polling, says so, and
// stays correct.
func TestLiveWatchLimitFallsBackToPolling(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), func(a *Agent) {
		a.newWatcher = func() (fileWatcher, error) {
			w, err := newFSWatcher()
			return &limitedWatcher{fileWatcher: w, limit: 2}, err
		}
	})
	s := a.Snapshot()
	if s.Health.WatchMode != "polling" || s.Health.PolledDirs == 0 {
		t.Fatalf("watch mode %q, polled %d: want polling with some polled dirs", s.Health.WatchMode, s.Health.PolledDirs)
	}
	// Every partition, watched or not, converges.
	for _, name := range []string{"orders-0", "orders-1", "audit.log-v2-0", "audit.log-v2-1"} {
		roll(t, filepath.Join(dir, name), 9000)
	}
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		for _, name := range []string{"orders-0", "orders-1", "audit.log-v2-0", "audit.log-v2-1"} {
			p, _ := livePartition(s, name)
			if p.Segments[len(p.Segments)-1].BaseOffset != 9000 {
				return fmt.Errorf("%s: %v", name, segmentBases(p))
			}
		}
		return nil
	})
	// A polled partition's appends (no new file, the directory unchanged)
	// are seen too, and an unchanged one is not re-read at each poll.
	time.Sleep(300 * time.Millisecond) // polls that saw the roll's last files
	rereads := a.Snapshot().Health.PartitionRereads
	time.Sleep(500 * time.Millisecond) // five polls of nothing
	if n := a.Snapshot().Health.PartitionRereads; n != rereads {
		t.Errorf("%d partitions re-read by polls while nothing changed", n-rereads)
	}
	for _, name := range []string{"orders-0", "orders-1", "audit.log-v2-0", "audit.log-v2-1"} {
		appendBytes(t, filepath.Join(dir, name, logdirgen.FileName(9000, ".log")), make([]byte, 777))
	}
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		for _, name := range []string{"orders-0", "orders-1", "audit.log-v2-0", "audit.log-v2-1"} {
			p, _ := livePartition(s, name)
			if got := p.Segments[len(p.Segments)-1].LogBytes; got != 777 {
				return fmt.Errorf("%s: active segment %d bytes, want 777", name, got)
			}
		}
		return nil
	})
}

// overflowWatcher swallows every event after start and reports an
// overflow when told to, as inotify does when its queue is full.
type overflowWatcher struct {
	fileWatcher
	events chan eventT
	errs   chan error
}

func (w *overflowWatcher) Events() <-chan eventT { return w.events }
func (w *overflowWatcher) Errors() <-chan error  { return w.errs }

// R6: a queue overflow triggers a full rescan that repairs what was missed.
func TestLiveOverflowRescans(t *testing.T) {
	dir := genLogDir(t)
	ow := &overflowWatcher{events: make(chan eventT), errs: make(chan error, 1)}
	a := startAgent(t, fastConfig(dir), func(a *Agent) {
		a.newWatcher = func() (fileWatcher, error) {
			w, err := newFSWatcher()
			ow.fileWatcher = w
			return ow, err
		}
	})
	roll(t, filepath.Join(dir, "orders-0"), 7777)
	time.Sleep(200 * time.Millisecond) // events are swallowed: nothing may change
	if p, _ := livePartition(a.Snapshot(), "orders-0"); p.Segments[len(p.Segments)-1].BaseOffset == 7777 {
		t.Fatal("the roll was seen although its events were dropped: the test proves nothing")
	}
	ow.errs <- errOverflow
	s := waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		p, _ := livePartition(s, "orders-0")
		if p.Segments[len(p.Segments)-1].BaseOffset != 7777 {
			return fmt.Errorf("orders-0: %v", segmentBases(p))
		}
		return nil
	})
	if s.Health.Rescans["overflow"] != 1 {
		t.Fatalf("rescans %v, want one overflow rescan", s.Health.Rescans)
	}
}

// R6: a log dir that disappears is reported, the last known state is still
// served, and it is picked up again when it comes back.
func TestLiveLogDirDisappearsAndReturns(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), nil)
	before := len(a.Snapshot().LogDirs[0].Partitions)
	moved := dir + ".away"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	// A rename of the watched directory itself arrives as a move-self; a
	// remove or unmount as delete-self. Either way the poll finds it gone.
	s := waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if s.LogDirs[0].Err == nil {
			return errors.New("log dir error not reported")
		}
		return nil
	})
	if got := len(s.LogDirs[0].Partitions); got != before {
		t.Fatalf("serving %d partitions after the log dir vanished, want the %d known", got, before)
	}
	if s.Health.ScanErrors[ErrLogDirMissing] == 0 {
		t.Fatalf("scan errors %v, want log_dir_missing counted", s.Health.ScanErrors)
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	roll(t, filepath.Join(dir, "orders-0"), 4242)
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if s.LogDirs[0].Err != nil {
			return fmt.Errorf("still in error: %v", s.LogDirs[0].Err)
		}
		p, _ := livePartition(s, "orders-0")
		if p.Segments[len(p.Segments)-1].BaseOffset != 4242 {
			return fmt.Errorf("orders-0 after recovery: %v", segmentBases(p))
		}
		if s.Health.Rescans["log_dir_recovered"] == 0 {
			return fmt.Errorf("rescans %v", s.Health.Rescans)
		}
		return nil
	})
}

// Config errors name the field (spec R6).
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no log dirs", Config{}, "logDirs"},
		{"empty path", Config{LogDirs: []string{""}}, "logDirs[0]"},
		{"duplicate", Config{LogDirs: []string{"/a", "/a/"}}, "logDirs[1]"},
		{"negative", Config{LogDirs: []string{"/a"}, Debounce: -1}, "debounce"},
		{"bad glob", Config{LogDirs: []string{"/pods/[/data"}}, "logDirs[0]: bad glob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	c := Config{LogDirs: []string{"/a"}}.WithDefaults()
	if err := c.Validate(); err != nil || c.Debounce != 50*time.Millisecond || c.ResyncInterval != 5*time.Minute {
		t.Fatalf("defaults: %v %+v", err, c)
	}
}

// A logDirs glob (a broker pod's volume under the kubelet's pod
// directory): matches holding meta.properties are log dirs; a pod that
// starts later is picked up, one that goes away is dropped, and a match
// without meta.properties is not a log dir.
func TestLiveGlobLogDirs(t *testing.T) {
	root := t.TempDir()
	pod := func(uid string) string {
		return filepath.Join(root, uid, "volumes", "kubernetes.io~csi", "pvc-"+uid, "mount", "kafka-log0")
	}
	gen := func(dir string) {
		t.Helper()
		if _, err := logdirgen.Generate(dir, logdirgen.Spec{Now: time.Now(), Sparse: true,
			Topics: []logdirgen.Topic{{Name: "orders", Partitions: 1, Segments: []logdirgen.Segment{{Bytes: 4096}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	gen(pod("a"))
	if err := os.MkdirAll(pod("not-kafka"), 0o755); err != nil { // no meta.properties
		t.Fatal(err)
	}
	cfg := fastConfig(filepath.Join(root, "*", "volumes", "*", "*", "mount", "kafka-log*"))
	a := startAgent(t, cfg, nil)
	paths := func(s *Snapshot) []string {
		var out []string
		for _, ld := range s.LogDirs {
			out = append(out, ld.Path)
		}
		return out
	}
	if got := paths(a.Snapshot()); len(got) != 1 || got[0] != pod("a") {
		t.Fatalf("log dirs %v, want only %s", got, pod("a"))
	}
	gen(pod("b"))
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if got := paths(s); len(got) != 2 || got[1] != pod("b") {
			return fmt.Errorf("log dirs %v", got)
		}
		if len(s.LogDirs[1].Partitions) != 1 {
			return fmt.Errorf("new log dir not scanned: %+v", s.LogDirs[1].Partitions)
		}
		return nil
	})
	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if got := paths(s); len(got) != 1 || got[0] != pod("b") {
			return fmt.Errorf("log dirs %v, want only %s", got, pod("b"))
		}
		return nil
	})
}

// TestSamePartitionCoversPartition: samePartition decides whether a
// published snapshot gets a new Partitions slice; a Partition field it does
// not compare would leave a change unpublished.
func TestSamePartitionCoversPartition(t *testing.T) {
	if n := reflect.TypeFor[Partition]().NumField(); n != 18 {
		t.Fatalf("Partition has %d fields, samePartition compares 18: compare the new ones and update this count", n)
	}
	a := Partition{Topic: "t", Segments: []Segment{{BaseOffset: 1}}, Remote: &RemoteOffsets{HighestUploaded: 3}}
	b := a
	b.Remote = &RemoteOffsets{HighestUploaded: 3}
	if !samePartition(&a, &b) {
		t.Error("equal partitions (remote offsets equal by value) differ")
	}
	b.Segments = []Segment{{BaseOffset: 1}}
	if samePartition(&a, &b) {
		t.Error("a new segment slice is the same")
	}
	b = a
	b.WriteRateBytesPerSecond = 1
	if samePartition(&a, &b) {
		t.Error("a new write rate is the same")
	}
	b = a
	b.Held = HeldMoving
	if samePartition(&a, &b) {
		t.Error("a new retention hold is the same")
	}
}

// timeStableUntil bounds when time can change a classification: before the
// bound every segment's verdict is as at now; at the bound one changes.
func TestTimeStableUntil(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DefaultTopicConfig()
	cfg.RetentionMs = time.Hour.Milliseconds()
	p := Partition{Topic: "t", Kind: KindLive, HighWatermark: 1 << 40, LogStartOffset: 0, LogEndOffset: 5000, ActiveWrittenBytes: -1}
	for i := range 5 {
		p.Segments = append(p.Segments, Segment{BaseOffset: int64(i) * 1000, LogBytes: 1 << 20,
			LargestTimestampMs: base.Add(time.Duration(i) * 17 * time.Minute).UnixMilli(), TimestampSource: TimestampFromTimeIndex})
	}
	p.OpenExpiry = []ExpiryPoint{{TimestampMs: base.Add(65 * time.Minute).UnixMilli(), Position: 1000}}
	verdicts := func(at int64) string {
		q := Classify(p, cfg, time.UnixMilli(at))
		return fmt.Sprint(segmentStates(q))
	}
	changes := 0
	for now := base.UnixMilli(); now < base.Add(3*time.Hour).UnixMilli(); {
		until := timeStableUntil(&p, cfg, now)
		if until == math.MaxInt64 {
			break
		}
		if a, b := verdicts(now), verdicts(until-1); a != b {
			t.Fatalf("classification changed before the bound: at %d %s, at %d %s", now, a, until-1, b)
		}
		if a, b := verdicts(until-1), verdicts(until); a == b {
			t.Errorf("nothing changed at the bound %d: %s", until, a)
		}
		changes++
		now = until
	}
	if changes < 5 {
		t.Errorf("%d boundaries found, want one per segment and expiry point", changes)
	}
}

func segmentStates(p Partition) []string {
	var out []string
	for _, s := range p.Segments {
		out = append(out, fmt.Sprintf("%s/%s/%d", s.State, s.Reason, s.ExpiredBytes))
	}
	return out
}

// A checkpoint file rewritten with a new high watermark reaches the
// snapshot; rewritten with the same lines (Kafka rewrites it every 5 s),
// the snapshot keeps sharing its partitions.
func TestLiveCheckpointRewrite(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), nil)
	cp := "0\n4\norders 0 7\norders 1 9\naudit.log-v2 0 3\naudit.log-v2 1 4\n"
	writeFile := func(content string) {
		t.Helper()
		tmp := filepath.Join(dir, "replication-offset-checkpoint.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "replication-offset-checkpoint")); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(cp)
	s := waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if p, _ := livePartition(s, "orders-1"); p.HighWatermark != 9 {
			return fmt.Errorf("orders-1 high watermark %d, want 9", p.HighWatermark)
		}
		return nil
	})
	writeFile(cp)
	time.Sleep(300 * time.Millisecond)
	if s2 := a.Snapshot(); s2.LogDirs[0].Partitions[0] != s.LogDirs[0].Partitions[0] {
		t.Error("the same checkpoint lines gave the snapshot new partitions")
	}
	writeFile(strings.Replace(cp, "orders 1 9", "orders 1 11", 1))
	waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if p, _ := livePartition(s, "orders-1"); p.HighWatermark != 11 {
			return fmt.Errorf("orders-1 high watermark %d, want 11", p.HighWatermark)
		}
		return nil
	})
}

// A checkpoint re-read gives each partition the offsets the scanner
// gives it (one rule, Checkpoints.Offsets): a partition missing from
// log-start-offset-checkpoint keeps -1 (the live agent used to fall back
// to its first base offset), and a -stray directory of a checkpointed
// partition takes none of the live log's offsets.
func TestLiveCheckpointOffsetsAsScanned(t *testing.T) {
	dir := genLogDir(t)
	stray := filepath.Join(dir, "orders-0.4b2a7c3f1e0d4d6c9a8b7c6d5e4f3a2b-stray")
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(stray, logdirgen.FileName(0, ".log")), 0)
	a := startAgent(t, fastConfig(dir), nil)
	tmp := filepath.Join(dir, "replication-offset-checkpoint.tmp")
	if err := os.WriteFile(tmp, []byte("0\n1\norders 0 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "replication-offset-checkpoint")); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, 3*time.Second, a, func(s *Snapshot) error {
		if p, _ := livePartition(s, "orders-0"); p.HighWatermark != 7 {
			return fmt.Errorf("orders-0 high watermark %d, want 7", p.HighWatermark)
		}
		return nil
	})
	p, _ := livePartition(s, "orders-0")
	if p.LogStartOffset != -1 {
		t.Errorf("orders-0 log start offset %d after a checkpoint re-read, want -1 (not in log-start-offset-checkpoint), as scanned", p.LogStartOffset)
	}
	found := false
	for _, q := range s.LogDirs[0].Partitions {
		if q.Kind == KindStray {
			found = true
			if q.LogStartOffset != -1 || q.HighWatermark != -1 {
				t.Errorf("the -stray directory took the live log's offsets: log start %d, high watermark %d", q.LogStartOffset, q.HighWatermark)
			}
		}
	}
	if !found {
		t.Fatal("no -stray partition in the snapshot")
	}
}

// TestSameSegmentFactsCoversSegment: a re-read hands the previous segment
// slice back when sameSegmentFacts holds; a scanned Segment field it does
// not compare would keep a stale value.
func TestSameSegmentFactsCoversSegment(t *testing.T) {
	// Compared: BaseOffset, LogBytes, DiskBytes, IndexApparentBytes,
	// LargestTimestampMs, TimestampSource. Set by Classify: State, Reason,
	// ExpiredBytes, Tier.
	if n := reflect.TypeFor[Segment]().NumField(); n != 10 {
		t.Fatalf("Segment has %d fields, sameSegmentFacts knows 10: compare the new ones the scanner fills and update this count", n)
	}
	a := []Segment{{BaseOffset: 1, LogBytes: 2, LargestTimestampMs: 5, TimestampSource: TimestampFromMtime}}
	b := []Segment{a[0]}
	b[0].State = StateEligible
	if !sameSegmentFacts(a, b) {
		t.Error("a classification made the facts differ")
	}
	b[0].LargestTimestampMs = 6
	if sameSegmentFacts(a, b) {
		t.Error("a new largest timestamp is the same")
	}
}

// TestLiveGeneration: a snapshot that differs only in usage keeps the
// generation (the enforcer skips passes on it); a changed partition moves
// it.
func TestLiveGeneration(t *testing.T) {
	dir := genLogDir(t)
	var used atomic.Uint64
	used.Store(1 << 20)
	a := startAgent(t, fastConfig(dir), func(a *Agent) {
		a.usage = func(path string, capacity uint64, dirBytes int64) (Usage, error) {
			return Usage{CapacityBytes: 1 << 30, UsedBytes: used.Load(), AvailableBytes: 1<<30 - used.Load(), Basis: CapacityFilesystem}, nil
		}
	})
	first := a.Snapshot()
	if first.Generation == 0 {
		t.Fatal("a live agent's snapshot has generation 0")
	}
	used.Store(2 << 20)
	s := waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		if s.LogDirs[0].Usage.UsedBytes != 2<<20 {
			return fmt.Errorf("used %d", s.LogDirs[0].Usage.UsedBytes)
		}
		return nil
	})
	if s == first || s.Generation != first.Generation {
		t.Errorf("usage alone: generation %d -> %d (same snapshot: %v), want a new snapshot of the same generation", first.Generation, s.Generation, s == first)
	}
	p, _ := livePartition(s, "orders-0")
	bases := segmentBases(p)
	roll(t, filepath.Join(dir, "orders-0"), bases[len(bases)-1]+1000)
	waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		p, _ := livePartition(s, "orders-0")
		if len(p.Segments) != len(bases)+1 {
			return fmt.Errorf("segments %v", segmentBases(p))
		}
		if s.Generation <= first.Generation {
			return fmt.Errorf("a roll kept generation %d", s.Generation)
		}
		return nil
	})
}

// TestLiveReclassifiesWhenBoundaryPasses: on the reclassify tick, a
// partition whose retention boundary passed is classified again (the tick
// visits partitions only then, or when written to).
func TestLiveReclassifiesWhenBoundaryPasses(t *testing.T) {
	dir := genLogDir(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	cfg := fastConfig(dir)
	cfg.ReclassifyInterval = 50 * time.Millisecond
	a := startAgent(t, cfg, func(a *Agent) { a.UseClock(func() time.Time { return time.UnixMilli(clock.Load()) }) })
	p, _ := livePartition(a.Snapshot(), "orders-0")
	if len(p.Segments) < 2 || p.Segments[0].State != StateClosed {
		t.Fatalf("orders-0 segments %+v: want a closed first segment", p.Segments)
	}
	gen := a.Snapshot().Generation
	time.Sleep(200 * time.Millisecond) // a few ticks: nothing changes
	if s := a.Snapshot(); s.Generation != gen {
		t.Errorf("idle reclassify ticks moved the generation %d -> %d", gen, s.Generation)
	}
	clock.Store(p.Segments[0].LargestTimestampMs + DefaultTopicConfig().RetentionMs + 1)
	waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		p, _ := livePartition(s, "orders-0")
		if p.Segments[0].State != StateEligible || p.Segments[0].Reason != ReasonRetentionTime {
			return fmt.Errorf("first segment %v/%v", p.Segments[0].State, p.Segments[0].Reason)
		}
		return nil
	})
}

// TestLiveHoldsMovingPartition: a -future directory that appears holds
// the partition's retention (HeldMoving), and the hold ends with it; the
// loop skips Holds only while no -future directory exists.
func TestLiveHoldsMovingPartition(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, fastConfig(dir), nil)
	if p, _ := livePartition(a.Snapshot(), "orders-0"); p.Held != ReasonNone {
		t.Fatalf("orders-0 held %v before any -future directory", p.Held)
	}
	future := filepath.Join(dir, "orders-0.0123456789abcdef0123456789abcdef-future")
	if err := os.Mkdir(future, 0o755); err != nil {
		t.Fatal(err)
	}
	roll(t, future, 0)
	waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		if p, _ := livePartition(s, "orders-0"); p.Held != HeldMoving {
			return fmt.Errorf("orders-0 held %v, want moving", p.Held)
		}
		return nil
	})
	if err := os.RemoveAll(future); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, a, func(s *Snapshot) error {
		if p, _ := livePartition(s, "orders-0"); p.Held != ReasonNone {
			return fmt.Errorf("orders-0 still held %v", p.Held)
		}
		return nil
	})
}

// TestReleaseAfterLargeFullScan: a full scan of a model of releaseAt
// segments or more (the start scan and each periodic one) is followed by
// a collection that returns its garbage to the operating system, so that
// the collector's next heap goal is twice the model, not twice the
// model and the scan's transients (releaseAfterScan); a smaller model is
// left to the collector.
func TestReleaseAfterLargeFullScan(t *testing.T) {
	dir := genLogDir(t) // 6 segments
	for _, tc := range []struct {
		releaseAt int
		want      bool
	}{{6, true}, {7, false}} {
		var released atomic.Int32
		a := startAgent(t, Config{LogDirs: []string{dir}, ResyncInterval: 50 * time.Millisecond}, func(a *Agent) {
			a.releaseAt = tc.releaseAt
			a.release = func() { released.Add(1) }
		})
		waitFor(t, 5*time.Second, a, func(s *Snapshot) error {
			if n := s.Health.Rescans["periodic"]; n < 2 {
				return fmt.Errorf("%d periodic scans", n)
			}
			if tc.want && released.Load() < 2 {
				return fmt.Errorf("released %d times", released.Load())
			}
			return nil
		})
		if n := released.Load(); !tc.want && n != 0 {
			t.Errorf("releaseAt %d: released %d times after scans of 6 segments, want none", tc.releaseAt, n)
		}
	}
}

// TestStoreAllocatesOnlyForAChange: storing a partition's same values
// (every partition at a periodic full scan, at new topic configs)
// allocates nothing; a change stores a new Partition and keeps the log
// dir's sums, and never writes into the published one.
func TestStoreAllocatesOnlyForAChange(t *testing.T) {
	l := &loop{}
	d := &dirState{}
	published := &Partition{Topic: "orders", Dir: "orders-0", DiskBytes: 100,
		Segments: []Segment{{BaseOffset: 0, LogBytes: 100}}}
	ps := &partState{part: published}
	d.partDisk = 100
	same := *ps.part
	if n := testing.AllocsPerRun(100, func() { l.store(d, ps, same) }); n != 0 {
		t.Errorf("store of the same values: %v allocations, want 0", n)
	}
	if ps.part != published || d.changed {
		t.Fatalf("store of the same values replaced the partition (changed %v)", d.changed)
	}
	grown := same
	grown.DiskBytes = 150
	l.store(d, ps, grown)
	if ps.part == published || ps.part.DiskBytes != 150 || d.partDisk != 150 || !d.changed {
		t.Errorf("store of a change: part %p (published %p), DiskBytes %d, partDisk %d, changed %v; want a new partition of 150, partDisk 150, changed",
			ps.part, published, ps.part.DiskBytes, d.partDisk, d.changed)
	}
	if published.DiskBytes != 100 {
		t.Errorf("the published partition was written into: DiskBytes %d, want 100", published.DiskBytes)
	}
}
