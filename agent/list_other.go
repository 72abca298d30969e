//go:build !(linux && (amd64 || arm64))

package agent

import "os"

// listDir calls fn for every entry of the directory d with its lstat data
// (portable version: os.File.ReadDir, which lstat's the entries of a
// directory opened in an os.Root).
func listDir(d *os.File, _ []byte, fn func(name string, st entryStat, err error)) error {
	entries, err := d.ReadDir(-1)
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
