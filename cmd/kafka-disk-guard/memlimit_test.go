package main

import (
	"testing"
	"testing/fstest"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name     string
		fs       fstest.MapFS
		want     int64
		wantFile string
	}{
		{"container, cgroup v2 namespace", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("268435456\n"),
		}, 268435456, "/sys/fs/cgroup/memory.max"},
		{"systemd unit, cgroup v2: the unit's MemoryMax", fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/kafka-disk-guard.service\n"),
			"sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.max":  file("536870912\n"),
			"sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.high": file("max\n"),
			"sys/fs/cgroup/system.slice/memory.max":                           file("max\n"),
		}, 536870912, "/sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.max"},
		{"cgroup v2, a smaller limit on the parent", fstest.MapFS{
			"proc/self/cgroup":             file("0::/a/b\n"),
			"sys/fs/cgroup/a/b/memory.max": file("max\n"),
			"sys/fs/cgroup/a/memory.max":   file("1048576\n"),
		}, 1048576, "/sys/fs/cgroup/a/memory.max"},
		{"systemd unit, cgroup v2: MemoryHigh below MemoryMax", fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/kafka-disk-guard.service\n"),
			"sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.max":  file("536870912\n"),
			"sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.high": file("268435456\n"),
		}, 268435456, "/sys/fs/cgroup/system.slice/kafka-disk-guard.service/memory.high"},
		{"cgroup v2, no limit", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0, ""},
		{"cgroup v1 in a container: the mount's root", fstest.MapFS{
			"proc/self/cgroup":                           file("5:cpu,cpuacct:/kubepods/x\n4:memory:/kubepods/x\n0::/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("268435456\n"),
		}, 268435456, "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"cgroup v1, unlimited", fstest.MapFS{
			"proc/self/cgroup": file("4:memory:/user.slice\n"),
			"sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, "/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes"},
		{"no cgroup file", fstest.MapFS{}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, f := cgroupMemoryLimit(tc.fs)
			if got != tc.want || (tc.want > 0 && f != tc.wantFile) {
				t.Errorf("cgroupMemoryLimit = %d, %q; want %d, %q", got, f, tc.want, tc.wantFile)
			}
		})
	}
}
