//go:build !linux

package agent

import (
	"os"
	"path/filepath"
)

// openAt opens name in the directory dir for reading.
func openAt(dir *os.File, name string) (segReader, error) {
	return os.Open(filepath.Join(dir.Name(), name))
}
