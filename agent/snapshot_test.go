package agent

import (
	"testing"
	"time"
)

func TestDiskUsage(t *testing.T) {
	t.Run("R2.1/configured capacity: bytes under the log dir", func(t *testing.T) {
		u, err := DiskUsage(t.TempDir(), 1000, 250)
		if err != nil {
			t.Fatal(err)
		}
		if u.Basis != CapacityConfigured || u.UsedBytes != 250 || u.AvailableBytes != 750 || u.Ratio() != 0.25 {
			t.Errorf("%+v ratio %v", u, u.Ratio())
		}
		if u, _ := DiskUsage(t.TempDir(), 1000, 1500); u.AvailableBytes != 0 || u.Ratio() != 1.5 {
			t.Errorf("over capacity: %+v", u)
		}
	})
	t.Run("R2.1/filesystem: statfs", func(t *testing.T) {
		u, err := DiskUsage(t.TempDir(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if u.Basis != CapacityFilesystem || u.CapacityBytes == 0 || u.UsedBytes == 0 || u.UsedBytes > u.CapacityBytes || u.Ratio() <= 0 || u.Ratio() > 1 {
			t.Errorf("%+v", u)
		}
		if _, err := DiskUsage("/nonexistent/kdg", 0, 0); err == nil {
			t.Error("missing path: no error")
		}
	})
}

func TestBuildSnapshot(t *testing.T) {
	h := time.Hour
	a := mkPartition(-1, 300, 300, seg{0, 100, 50 * h}, seg{100, 100, 5 * h}, seg{200, 10, h})
	a.Topic = "a"
	b := mkPartition(-1, 300, 300, seg{0, 100, 50 * h}, seg{100, 100, 5 * h}, seg{200, 10, h})
	b.Topic = "b"
	dirs := []LogDir{{Path: "/d", Partitions: []*Partition{&a, &b}}}
	a1, b1 := cfg(24*hour, -1, "delete"), cfg(2*hour, -1, "delete")
	health := Health{ScanErrors: map[ErrorKind]uint64{ErrBadName: 1}}
	configs := ConfigSet{Topics: map[string]TopicConfig{"b": b1}, Defaults: a1, Time: testNow}
	snap := BuildSnapshot(testNow, dirs, configs, health)
	if got := render(*snap.LogDirs[0].Partitions[0]); got[0] != "eligible/retention_time" || got[1] != "closed" {
		t.Errorf("topic a (defaults): %v", got)
	}
	if got := render(*snap.LogDirs[0].Partitions[1]); got[1] != "eligible/retention_time" {
		t.Errorf("topic b (its own config): %v", got)
	}
	if dirs[0].Partitions[0].Segments[0].State != 0 {
		t.Error("BuildSnapshot modified its input")
	}
	configs.Topics["b"] = a1
	health.ScanErrors[ErrBadName] = 7
	if snap.Configs["b"] != b1 || snap.Health.ScanErrors[ErrBadName] != 1 || !snap.ConfigsTime.Equal(testNow) {
		t.Error("the snapshot shares maps with its inputs")
	}
	// A second snapshot with the same inputs shares the classified slices.
	again := BuildSnapshot(testNow, snap.LogDirs, configs, health)
	if again.LogDirs[0].Partitions[0].Segments[0] != snap.LogDirs[0].Partitions[0].Segments[0] {
		t.Error("unchanged partitions must share their segment slices")
	}
}
