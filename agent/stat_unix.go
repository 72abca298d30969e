//go:build unix

package agent

import (
	"io/fs"
	"syscall"
)

// diskBytes is the space a file really takes: its allocated blocks (holes
// in sparse files cost nothing).
func diskBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// entryStat is what the scanner needs of a directory entry.
type entryStat struct {
	disk, apparent, mtimeMs int64
	isDir                   bool
	// pending: listed but not stat'ed yet (see listDir's lazy).
	pending bool
}
