//go:build !unix

package agent

import "io/fs"

// diskBytes falls back to the apparent size where block counts are unknown.
func diskBytes(fi fs.FileInfo) int64 { return fi.Size() }

// entryStat is what the scanner needs of a directory entry.
type entryStat struct {
	disk, apparent, mtimeMs int64
	isDir                   bool
	// pending: listed but not stat'ed yet (see listDir's lazy).
	pending bool
}
