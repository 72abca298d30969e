//go:build !linux

package agent

import (
	"os"
	"path/filepath"
)

// openAt opens name in the directory dir for reading.
func openAt(dir partDir, name string) (segReader, error) {
	return os.Open(filepath.Join(dir.Name(), name))
}

// openSegmentFile opens <base><suffix> in the directory dir.
func openSegmentFile(dir partDir, base int64, suffix string) (segReader, error) {
	return openAt(dir, FileName(base, suffix))
}

// openPartitionDir opens a partition directory for listing.
func openPartitionDir(pd partitionDir) (partDir, error) {
	f, err := pd.parent.Open(pd.name)
	if err != nil {
		return partDir{}, err
	}
	return partDir{f: f, fd: -1, path: pd.full}, nil
}
