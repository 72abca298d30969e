//go:build !linux

package agent

import (
	"fmt"

	"github.com/shirou/gopsutil/v4/disk"
)

// ReadFilesystem stats the filesystem holding path. Outside Linux the
// device number is not read (0): each log dir counts as its own
// filesystem.
func ReadFilesystem(path string) (Filesystem, error) {
	st, err := disk.Usage(path)
	if err != nil {
		return Filesystem{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	return Filesystem{Known: true, TotalBytes: st.Total, UsedBytes: st.Used, AvailableBytes: st.Free}, nil
}
