package agent

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// fdFile is a file opened relative to its directory's descriptor and read
// with plain pread(2): the scanner opens one small file per segment, and
// this keeps each open to the three system calls it needs (openat, pread,
// close) without path lookups or runtime poller bookkeeping.
type fdFile int

// openAt opens name in the directory dir for reading.
func openAt(dir partDir, name string) (segReader, error) {
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

// openSegmentFile opens <base><suffix> in the directory dir without
// allocating: the name is built on the stack.
func openSegmentFile(dir partDir, base int64, suffix string) (segReader, error) {
	var name [64]byte
	n := putSegmentName(name[:], base, suffix)
	if n < 0 {
		return openAt(dir, FileName(base, suffix))
	}
	for {
		r, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, dir.Fd(), uintptr(unsafe.Pointer(&name[0])),
			uintptr(syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return nil, &os.PathError{Op: "openat", Path: FileName(base, suffix), Err: errno}
		}
		return fdFile(r), nil
	}
}

// putSegmentName writes "<20-digit base><suffix>\x00" into b and returns
// its length without the NUL, or -1 when it does not fit.
func putSegmentName(b []byte, base int64, suffix string) int {
	if base < 0 || len(b) < baseOffsetDigits+len(suffix)+1 {
		return -1
	}
	for i := baseOffsetDigits - 1; i >= 0; i-- {
		b[i] = byte('0' + base%10)
		base /= 10
	}
	n := copy(b[baseOffsetDigits:], suffix) + baseOffsetDigits
	b[n] = 0
	return n
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

// openPartitionDir opens a partition directory for listing: with a bare
// openat(2) relative to the log dir's descriptor when there is one (an
// os.Root's Open also registers the file with the runtime poller, which
// refuses it: four more system calls a directory), else, and for
// anything but a plain directory (a symbolic link, which the Root
// resolves inside the log dir; a file, reported as one), through the
// Root as before. Where listDir lists with getdents (rawListing), the
// descriptor stays bare: no os.File.
func openPartitionDir(pd partitionDir) (partDir, error) {
	if pd.parentDir == nil {
		return rootOpenDir(pd)
	}
	for {
		fd, err := syscall.Openat(int(pd.parentDir.Fd()), pd.name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		switch err {
		case nil:
			if rawListing {
				return partDir{fd: fd, path: pd.full}, nil
			}
			return fileDir(os.NewFile(uintptr(fd), pd.full)), nil
		case syscall.EINTR:
			continue
		case syscall.ELOOP, syscall.ENOTDIR:
			return rootOpenDir(pd)
		}
		return partDir{}, &os.PathError{Op: "openat", Path: pd.full, Err: err}
	}
}

// rootOpenDir opens a partition directory through the log dir's Root.
func rootOpenDir(pd partitionDir) (partDir, error) {
	f, err := pd.parent.Open(pd.name)
	if err != nil {
		return partDir{}, err
	}
	return partDir{f: f, fd: -1, path: pd.full}, nil
}
