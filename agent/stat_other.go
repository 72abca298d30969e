//go:build !unix

package agent

import "io/fs"

// diskBytes falls back to the apparent size where block counts are unknown.
func diskBytes(fi fs.FileInfo) int64 { return fi.Size() }
