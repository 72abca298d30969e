package agent

import (
	"slices"
	"strings"
)

// Filesystem is the filesystem holding a log dir, from stat(2) and
// statfs(2) of the log dir. The agent refreshes it with usage. Known is
// false until it was read.
type Filesystem struct {
	Known bool
	// Device is the log dir's st_dev: log dirs with the same Device share
	// one filesystem (0 where the platform does not say).
	Device uint64
	// TotalBytes is f_blocks x f_frsize: the filesystem's size, as Kafka
	// reports it for the log dir in DescribeLogDirs (Java's
	// FileStore.getTotalSpace).
	TotalBytes uint64
	// UsedBytes is (f_blocks - f_bfree) x f_frsize, as df counts used.
	UsedBytes uint64
	// AvailableBytes is f_bavail x f_frsize: what an unprivileged writer
	// (the broker) can still use.
	AvailableBytes uint64
}

// FilesystemBytes says what fills one filesystem that holds log dirs:
// its used bytes (statfs) against the disk bytes the agent found under
// the log dirs on it, by kind. Several log dirs on one filesystem are
// counted once, together.
//
// The figures come from two clocks: statfs is sampled every usage
// interval (250 ms), partition sizes when their files change (structural
// changes within ~50 ms, appends to active segments every growth
// interval, 1 s). Expect about a second of writes of noise.
type FilesystemBytes struct {
	Filesystem
	// LogDirs on the filesystem, sorted. The first names it in metrics.
	LogDirs []string
	// Live is the disk bytes of live partition directories
	// (<topic>-<partition>: segments, indexes, their other files), without
	// their .deleted files: the bytes the retention and purges of live
	// partitions can free.
	Live int64
	// PendingDelete: .deleted files (in any partition directory or at a
	// log dir root) and -delete directories; Kafka removes them itself
	// after file.delete.delay.ms.
	PendingDelete int64
	// Future and Stray: -future directories (replicas moving between log
	// dirs) and -stray ones (replicas the broker no longer owns), without
	// their .deleted files.
	Future, Stray int64
	// Metadata: the KRaft metadata log (__cluster_metadata-0) when it is in
	// a log dir.
	Metadata int64
	// Other: everything else under the log dirs: checkpoints,
	// meta.properties, lost+found, anything unrecognised.
	Other int64
}

// UnderLogDirs is every byte found under the filesystem's log dirs.
func (f FilesystemBytes) UnderLogDirs() int64 {
	return f.Live + f.PendingDelete + f.Future + f.Stray + f.Metadata + f.Other
}

// Outside is the used bytes of the filesystem that lie under none of its
// log dirs: other files on the volume (a heap dump, another
// application's data), files deleted but still held open, and filesystem
// overhead. Never negative (the two clocks may cross).
func (f FilesystemBytes) Outside() int64 {
	return max(0, int64(f.UsedBytes)-f.UnderLogDirs())
}

// NonKafkaBytes is the used bytes of the filesystem that live Kafka
// partitions do not explain: UsedBytes - Live, never negative. It is the
// sum of Outside, Other, PendingDelete, Future, Stray and Metadata (up to
// the clamping at zero). Purging live partitions cannot free these bytes.
func (f FilesystemBytes) NonKafkaBytes() int64 {
	return max(0, int64(f.UsedBytes)-f.Live)
}

// Filesystems groups the snapshot's log dirs by filesystem (Device) and
// accounts for each filesystem's used bytes (spec R7.3). Log dirs that
// could not be read or whose filesystem is unknown are left out; on a
// platform without device numbers each log dir is its own filesystem.
// Ordered by the first log dir's path.
func (s *Snapshot) Filesystems() []FilesystemBytes {
	var out []FilesystemBytes
	index := map[uint64]int{}
	for i := range s.LogDirs {
		ld := &s.LogDirs[i]
		if ld.Err != nil || !ld.Filesystem.Known {
			continue
		}
		j, ok := index[ld.Filesystem.Device]
		if !ok || ld.Filesystem.Device == 0 {
			j = len(out)
			out = append(out, FilesystemBytes{Filesystem: ld.Filesystem})
			if ld.Filesystem.Device != 0 {
				index[ld.Filesystem.Device] = j
			}
		}
		f := &out[j]
		f.LogDirs = append(f.LogDirs, ld.Path)
		f.add(ld.Bytes())
	}
	for i := range out {
		slices.Sort(out[i].LogDirs)
	}
	slices.SortFunc(out, func(a, b FilesystemBytes) int { return strings.Compare(a.LogDirs[0], b.LogDirs[0]) })
	return out
}

// Bytes accounts for the disk bytes under the log dir alone, by kind, as
// Filesystems does for a filesystem (Filesystem and LogDirs left zero).
func (ld *LogDir) Bytes() FilesystemBytes {
	var f FilesystemBytes
	var parts int64
	for k := range ld.Partitions {
		p := ld.Partitions[k]
		parts += p.DiskBytes
		switch p.Kind {
		case KindLive:
			f.Live += p.DiskBytes - p.PendingDeleteBytes
			f.PendingDelete += p.PendingDeleteBytes
		case KindDeleted:
			f.PendingDelete += p.DiskBytes
		case KindFuture:
			f.Future += p.DiskBytes - p.PendingDeleteBytes
			f.PendingDelete += p.PendingDeleteBytes
		case KindStray:
			f.Stray += p.DiskBytes - p.PendingDeleteBytes
			f.PendingDelete += p.PendingDeleteBytes
		case KindMetadata:
			f.Metadata += p.DiskBytes - p.PendingDeleteBytes
			f.PendingDelete += p.PendingDeleteBytes
		default:
			f.Other += p.DiskBytes
		}
	}
	// The root's own entries: .deleted files are pending, the rest other.
	root := ld.DiskBytes - parts
	rootPending := ld.PendingDeleteBytes
	for k := range ld.Partitions {
		rootPending -= ld.Partitions[k].PendingDeleteBytes
	}
	rootPending = min(max(rootPending, 0), max(root, 0))
	f.PendingDelete += rootPending
	f.Other += max(root-rootPending, 0)
	return f
}

// add adds b's bytes by kind to f.
func (f *FilesystemBytes) add(b FilesystemBytes) {
	f.Live += b.Live
	f.PendingDelete += b.PendingDelete
	f.Future += b.Future
	f.Stray += b.Stray
	f.Metadata += b.Metadata
	f.Other += b.Other
}
