//go:build linux && (amd64 || arm64)

package agent

import (
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// listDir calls fn for every entry of the directory d except "." and "..",
// with its lstat data, reading the directory with getdents(2) and
// stat'ing each entry with fstatat(2) relative to d: the same system calls
// as du, and no allocation per entry. name is only valid during the call
// (it points into buf); copy it to keep it. An entry that cannot be
// stat'ed is passed with err set (a vanished one with an error matching
// fs.ErrNotExist). An entry for which lazy (when not nil) returns true is
// passed without a stat (st.pending set): lazy is told whether getdents
// typed it a regular file.
func listDir(d partDir, buf []byte, lazy func(name string, regular bool) bool, fn func(name string, st entryStat, err error)) error {
	fd := int(d.Fd())
	var sys syscall.Stat_t
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "getdents", Path: d.Name(), Err: err}
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			if reclen <= 19 || off+reclen > n {
				return &os.PathError{Op: "getdents", Path: d.Name(), Err: syscall.EIO}
			}
			typ := buf[off+18]
			rec := buf[off+19 : off+reclen]
			off += reclen
			l := 0
			for l < len(rec) && rec[l] != 0 {
				l++
			}
			if l == 0 || l == len(rec) || (l == 1 && rec[0] == '.') || (l == 2 && rec[0] == '.' && rec[1] == '.') {
				continue
			}
			name := unsafe.String(&rec[0], l)
			if lazy != nil && lazy(name, typ == syscall.DT_REG) {
				fn(name, entryStat{pending: true}, nil)
				continue
			}
			_, _, errno := syscall.Syscall6(sysFstatat, uintptr(fd), uintptr(unsafe.Pointer(&rec[0])),
				uintptr(unsafe.Pointer(&sys)), _AT_SYMLINK_NOFOLLOW, 0, 0)
			if errno != 0 {
				fn(name, entryStat{}, &os.PathError{Op: "fstatat", Path: strings.Clone(name), Err: errno})
				continue
			}
			fn(name, statOf(&sys), nil)
		}
	}
}

const _AT_SYMLINK_NOFOLLOW = 0x100

func statOf(sys *syscall.Stat_t) entryStat {
	return entryStat{
		disk:     int64(sys.Blocks) * 512,
		apparent: sys.Size,
		mtimeMs:  sys.Mtim.Sec*1000 + sys.Mtim.Nsec/1e6,
		isDir:    sys.Mode&syscall.S_IFMT == syscall.S_IFDIR,
	}
}

// statSegmentFile lstat's <base><suffix> in the directory d (fstatat).
func statSegmentFile(d partDir, base int64, suffix string) (entryStat, error) {
	var name [64]byte
	if putSegmentName(name[:], base, suffix) < 0 {
		return entryStat{}, &os.PathError{Op: "fstatat", Path: FileName(base, suffix), Err: syscall.EINVAL}
	}
	var sys syscall.Stat_t
	for {
		_, _, errno := syscall.Syscall6(sysFstatat, d.Fd(), uintptr(unsafe.Pointer(&name[0])),
			uintptr(unsafe.Pointer(&sys)), _AT_SYMLINK_NOFOLLOW, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return entryStat{}, &os.PathError{Op: "fstatat", Path: FileName(base, suffix), Err: errno}
		}
		return statOf(&sys), nil
	}
}

// openStatSegmentFile opens <base><suffix> in the directory d and
// fstat's the open file: one path lookup for both, where a listing's
// fstatat and a later open take two. It is how a file the scanner reads
// anyway (a time index it has no earlier value for) is measured.
func openStatSegmentFile(d partDir, base int64, suffix string) (segReader, entryStat, error) {
	r, err := openSegmentFile(d, base, suffix)
	if err != nil {
		return nil, entryStat{}, err
	}
	var sys syscall.Stat_t
	if err := syscall.Fstat(int(r.(fdFile)), &sys); err != nil {
		r.Close()
		return nil, entryStat{}, &os.PathError{Op: "fstat", Path: FileName(base, suffix), Err: err}
	}
	return r, statOf(&sys), nil
}

// rawListing: listDir reads directories with getdents itself, so a
// partition directory needs no os.File (openPartitionDir).
const rawListing = true

// stat measures the directory itself (fstat).
func (d partDir) stat() (entryStat, error) {
	if d.f != nil {
		fi, err := d.f.Stat()
		if err != nil {
			return entryStat{}, err
		}
		return entryStat{disk: diskBytes(fi), apparent: fi.Size(), mtimeMs: fi.ModTime().UnixMilli(), isDir: fi.IsDir()}, nil
	}
	var sys syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(d.fd, &sys) }); err != nil {
		return entryStat{}, &os.PathError{Op: "fstat", Path: d.path, Err: err}
	}
	return statOf(&sys), nil
}

// rewind moves the listing back to the directory's first entry.
func (d partDir) rewind() error {
	if d.f != nil {
		_, err := d.f.Seek(0, io.SeekStart)
		return err
	}
	if _, err := syscall.Seek(d.fd, 0, io.SeekStart); err != nil {
		return &os.PathError{Op: "seek", Path: d.path, Err: err}
	}
	return nil
}

// Close closes the directory.
func (d partDir) Close() error {
	if d.f != nil {
		return d.f.Close()
	}
	// Not retried on EINTR: Linux releases the descriptor first.
	return syscall.Close(d.fd)
}

// ignoringEINTR retries fn while it fails with EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}
