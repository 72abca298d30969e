package agent

import (
	"io"
	"os"
	"syscall"
)

// fdFile is a file opened relative to its directory's descriptor and read
// with plain pread(2): the scanner opens one small file per segment, and
// this keeps each open to the three system calls it needs (openat, pread,
// close) without path lookups or runtime poller bookkeeping.
type fdFile int

// openAt opens name in the directory dir for reading.
func openAt(dir *os.File, name string) (segReader, error) {
	for {
		fd, err := syscall.Openat(int(dir.Fd()), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "openat", Path: name, Err: err}
		}
		return fdFile(fd), nil
	}
}

func (f fdFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Pread(int(f), p[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "pread", Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f fdFile) Seek(offset int64, whence int) (int64, error) {
	return syscall.Seek(int(f), offset, whence)
}

func (f fdFile) Close() error { return syscall.Close(int(f)) }
