package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadFilesystem(t *testing.T) {
	dir := t.TempDir()
	fs, err := ReadFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fs.Known || fs.TotalBytes == 0 || fs.UsedBytes > fs.TotalBytes || fs.AvailableBytes > fs.TotalBytes {
		t.Errorf("%+v", fs)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fs2, err := ReadFilesystem(sub)
	if err != nil {
		t.Fatal(err)
	}
	if fs2.Device != fs.Device || fs2.TotalBytes != fs.TotalBytes {
		t.Errorf("two dirs of one filesystem: %+v and %+v", fs, fs2)
	}
	if _, err := ReadFilesystem(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing path: no error")
	}
}

// R7.3: what fills a filesystem, with two log dirs on one filesystem
// counted once and a third on another.
func TestFilesystemsAccountsForUsedBytes(t *testing.T) {
	fsA := Filesystem{Known: true, Device: 7, TotalBytes: 10_000, UsedBytes: 6_000, AvailableBytes: 4_000}
	fsB := Filesystem{Known: true, Device: 9, TotalBytes: 5_000, UsedBytes: 1_000, AvailableBytes: 4_000}
	part := func(kind PartitionKind, disk, pending int64) Partition {
		return Partition{Topic: "t", Kind: kind, DiskBytes: disk, PendingDeleteBytes: pending}
	}
	snap := &Snapshot{LogDirs: []LogDir{
		{
			Path: "/data/b", Filesystem: fsA,
			Partitions: []*Partition{
				new(part(KindLive, 1_000, 100)),  // 900 live, 100 .deleted
				new(part(KindDeleted, 300, 296)), // a -delete directory: all pending
				new(part(KindFuture, 200, 0)),
			},
			// root: 50 of checkpoints, 20 of a .deleted file at the root
			DiskBytes: 1_000 + 300 + 200 + 70, PendingDeleteBytes: 100 + 296 + 20,
		},
		{
			Path: "/data/a", Filesystem: fsA,
			Partitions: []*Partition{new(part(KindLive, 2_000, 0)), new(part(KindStray, 150, 0)), new(part(KindMetadata, 80, 0))},
			DiskBytes:  2_000 + 150 + 80 + 10,
		},
		{
			Path: "/other", Filesystem: fsB,
			Partitions: []*Partition{new(part(KindLive, 900, 0))},
			DiskBytes:  900,
		},
		{Path: "/unread", Filesystem: fsB, Err: errors.New("gone"), DiskBytes: 5},
		{Path: "/unknown-fs", DiskBytes: 5},
	}}
	got := snap.Filesystems()
	if len(got) != 2 {
		t.Fatalf("%d filesystems, want 2: %+v", len(got), got)
	}
	a := got[0]
	if a.Device != 7 || len(a.LogDirs) != 2 || a.LogDirs[0] != "/data/a" || a.LogDirs[1] != "/data/b" {
		t.Fatalf("first filesystem %+v", a)
	}
	want := FilesystemBytes{Filesystem: fsA, LogDirs: a.LogDirs, Live: 2_900, PendingDelete: 100 + 300 + 20, Future: 200, Stray: 150, Metadata: 80, Other: 50 + 10}
	if a.Live != want.Live || a.PendingDelete != want.PendingDelete || a.Future != want.Future || a.Stray != want.Stray ||
		a.Metadata != want.Metadata || a.Other != want.Other {
		t.Errorf("got  %+v\nwant %+v", a, want)
	}
	under := int64(2_900 + 420 + 200 + 150 + 80 + 60)
	if a.UnderLogDirs() != under || a.Outside() != 6_000-under {
		t.Errorf("under log dirs %d, outside %d", a.UnderLogDirs(), a.Outside())
	}
	if a.NonKafkaBytes() != 6_000-2_900 {
		t.Errorf("non-Kafka bytes %d, want %d", a.NonKafkaBytes(), 6_000-2_900)
	}
	if sum := a.Outside() + a.Other + a.PendingDelete + a.Future + a.Stray + a.Metadata; sum != a.NonKafkaBytes() {
		t.Errorf("the kinds sum to %d, not the non-Kafka bytes %d", sum, a.NonKafkaBytes())
	}
	b := got[1]
	if len(b.LogDirs) != 1 || b.LogDirs[0] != "/other" || b.Live != 900 || b.Outside() != 100 || b.NonKafkaBytes() != 100 {
		t.Errorf("second filesystem %+v (unreadable log dirs are left out)", b)
	}

	// The clocks may cross: a scan that saw more than statfs says is used.
	snap.LogDirs[2].Partitions[0].DiskBytes = 1_500
	snap.LogDirs[2].DiskBytes = 1_500
	if b := snap.Filesystems()[1]; b.Outside() != 0 || b.NonKafkaBytes() != 0 {
		t.Errorf("negative figures not clamped: outside %d, non-Kafka %d", b.Outside(), b.NonKafkaBytes())
	}
}

// The live agent keeps each log dir's filesystem in its snapshots, also
// with a configured capacity.
func TestLiveAgentReadsFilesystem(t *testing.T) {
	dir := genLogDir(t)
	a := startAgent(t, Config{LogDirs: []string{dir}, CapacityBytes: 1 << 30, UsageInterval: 10 * time.Millisecond}, func(a *Agent) {
		a.fsStat = func(path string) (Filesystem, error) {
			return Filesystem{Known: true, Device: 42, TotalBytes: 1 << 40, UsedBytes: 1 << 39}, nil
		}
	})
	s := waitFor(t, 5*time.Second, a, func(s *Snapshot) error {
		if !s.LogDirs[0].Filesystem.Known {
			return errors.New("filesystem not read yet")
		}
		return nil
	})
	ld := s.LogDirs[0]
	if ld.Filesystem.Device != 42 || ld.Usage.Basis != CapacityConfigured {
		t.Fatalf("filesystem %+v, usage %+v", ld.Filesystem, ld.Usage)
	}
	fs := s.Filesystems()
	if len(fs) != 1 || fs[0].Live <= 0 || fs[0].UnderLogDirs() != ld.DiskBytes || fs[0].NonKafkaBytes() != 1<<39-fs[0].Live {
		t.Errorf("filesystems %+v, log dir disk bytes %d", fs, ld.DiskBytes)
	}
}
