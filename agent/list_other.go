//go:build !(linux && (amd64 || arm64))

package agent

import (
	"io"
	"os"
	"path/filepath"
)

// listDir calls fn for every entry of the directory d with its lstat data
// (portable version: os.File.ReadDir, which lstat's the entries of a
// directory opened in an os.Root). It stats every entry: lazy is ignored.
func listDir(d partDir, _ []byte, _ func(name string, regular bool) bool, fn func(name string, st entryStat, err error)) error {
	entries, err := d.f.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			fn(e.Name(), entryStat{}, err)
			continue
		}
		fn(e.Name(), entryStat{disk: diskBytes(fi), apparent: fi.Size(), mtimeMs: fi.ModTime().UnixMilli(), isDir: fi.IsDir()}, nil)
	}
	return nil
}

// statSegmentFile lstat's <base><suffix> in the directory d.
func statSegmentFile(d partDir, base int64, suffix string) (entryStat, error) {
	fi, err := os.Lstat(filepath.Join(d.Name(), FileName(base, suffix)))
	if err != nil {
		return entryStat{}, err
	}
	return entryStat{disk: diskBytes(fi), apparent: fi.Size(), mtimeMs: fi.ModTime().UnixMilli(), isDir: fi.IsDir()}, nil
}

// openStatSegmentFile opens <base><suffix> in the directory d and stats it.
func openStatSegmentFile(d partDir, base int64, suffix string) (segReader, entryStat, error) {
	r, err := openSegmentFile(d, base, suffix)
	if err != nil {
		return nil, entryStat{}, err
	}
	st, err := statSegmentFile(d, base, suffix)
	if err != nil {
		r.Close()
		return nil, entryStat{}, err
	}
	return r, st, nil
}

// rawListing: listDir reads directories through os.File (openPartitionDir).
const rawListing = false

// stat measures the directory itself.
func (d partDir) stat() (entryStat, error) {
	fi, err := d.f.Stat()
	if err != nil {
		return entryStat{}, err
	}
	return entryStat{disk: diskBytes(fi), apparent: fi.Size(), mtimeMs: fi.ModTime().UnixMilli(), isDir: fi.IsDir()}, nil
}

// rewind moves the listing back to the directory's first entry.
func (d partDir) rewind() error {
	_, err := d.f.Seek(0, io.SeekStart)
	return err
}

// Close closes the directory.
func (d partDir) Close() error { return d.f.Close() }
