package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitFraction is the share of the cgroup's memory limit given to
// the Go runtime as its soft limit (GOMEMLIMIT): the rest is for what the
// runtime does not count (the binary's text, C libraries' memory) and for
// slack, so that the collector works harder before the kernel kills.
const memoryLimitFraction = 0.9

// unlimitedCgroupV1 is where cgroup v1's memory.limit_in_bytes says "no
// limit" (a page-rounded MaxInt64); anything above is no limit.
const unlimitedCgroupV1 = 1 << 60

// applyMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// memory limit of the process's cgroup (a container's resources.limits.memory,
// a systemd unit's MemoryMax or MemoryHigh), unless GOMEMLIMIT is set (the runtime has
// then applied it; GOMEMLIMIT=off turns the limit off). Without it Go's
// collector lets the heap grow to twice the live heap whatever the limit,
// and the kernel kills the process first.
func applyMemoryLimit(logger *slog.Logger, getenv env) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		logger.Info("memory limit from GOMEMLIMIT", "gomemlimit", v)
		return
	}
	limit, file := cgroupMemoryLimit(os.DirFS("/"))
	if limit <= 0 {
		return
	}
	soft := int64(float64(limit) * memoryLimitFraction)
	debug.SetMemoryLimit(soft)
	logger.Info("memory limit from the cgroup", "cgroup_limit_bytes", limit, "file", file,
		"gomemlimit_bytes", soft, "hint", "set GOMEMLIMIT to override, GOMEMLIMIT=off to disable")
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup, read
// under fsys (the root file system), and the file it came from; 0 when
// there is none. cgroup v2: the smallest memory.max or memory.high (the
// kernel throttles above it: systemd's MemoryHigh) of the process's cgroup
// (from /proc/self/cgroup) and its ancestors; inside a container's cgroup
// namespace that is /sys/fs/cgroup/memory.max. cgroup v1: the
// memory controller's memory.limit_in_bytes, at the process's cgroup path
// or, in a container, at the mount's root.
func cgroupMemoryLimit(fsys fs.FS) (int64, string) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, ""
	}
	var v2, v1 string
	v1Found := false
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1, v1Found = f[2], true
			}
		}
	}
	read := func(file string) int64 {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return 0
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= unlimitedCgroupV1 {
			return 0 // "max", or no limit
		}
		return n
	}
	if v1Found {
		for _, dir := range []string{path.Join("sys/fs/cgroup/memory", v1), "sys/fs/cgroup/memory"} {
			file := path.Join(dir, "memory.limit_in_bytes")
			if _, err := fs.Stat(fsys, file); err == nil {
				return read(file), "/" + file
			}
		}
		return 0, ""
	}
	if v2 == "" {
		return 0, ""
	}
	var best int64
	var bestFile string
	for dir := path.Join("sys/fs/cgroup", v2); ; dir = path.Dir(dir) {
		for _, name := range []string{"memory.max", "memory.high"} {
			file := path.Join(dir, name)
			if n := read(file); n > 0 && (best == 0 || n < best) {
				best, bestFile = n, "/"+file
			}
		}
		if dir == "sys/fs/cgroup" {
			break
		}
	}
	return best, bestFile
}
