//go:build linux

package agent

import (
	"fmt"
	"syscall"
)

// ReadFilesystem stats the filesystem holding path: its device number
// (stat) and size, used and available bytes (statfs, in fragment-size
// units as df and Java's FileStore count them).
func ReadFilesystem(path string) (Filesystem, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return Filesystem{}, fmt.Errorf("stat %s: %w", path, err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return Filesystem{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	unit := uint64(fs.Frsize)
	if unit == 0 {
		unit = uint64(fs.Bsize)
	}
	return Filesystem{
		Known:          true,
		Device:         st.Dev,
		TotalBytes:     fs.Blocks * unit,
		UsedBytes:      (fs.Blocks - fs.Bfree) * unit,
		AvailableBytes: fs.Bavail * unit,
	}, nil
}
