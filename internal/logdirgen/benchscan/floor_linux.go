//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// floor walks a log dir making the system calls a full scan cannot do
// without, and nothing else: no Go scanner, one goroutine, no result
// kept. Its CPU is the lower bound of the scan's design, to compare with
// `du -s` (scripts/bench-scan.sh prints both ratios). Per partition
// directory: open it and fstat it (its own disk bytes), list it
// (getdents), fstatat every entry except time indexes (du's work); open,
// fstat, read the last two entries of and close every time index (spec
// R1.3: a segment's largest timestamp is its time index's last entry;
// the fstat measures it); for the active segment (the highest base
// offset), whose preallocated indexes end in zeros: SEEK_HOLE and one
// read of the entries before the hole in its time index, then the same
// in its offset index (open, read the last entry, SEEK_HOLE, read,
// close), and one read of its .log from the last offset index entry's
// position (open, pread, close): the log end offset and the expiry curve
// (R1.6). That is what Scanner.ScanLogDir does on a tree `benchscan gen`
// makes (the log tail there is one read); on other trees the scanner may
// make more calls.
func floor(args []string, out io.Writer) error {
	if len(args) < 2 {
		return fmt.Errorf("floor DIR")
	}
	start, c0 := time.Now(), cpuTime()
	w := floorWalker{buf: make([]byte, 16<<10), rb: make([]byte, 16<<10)}
	if err := w.logDir(args[1]); err != nil {
		return err
	}
	fmt.Fprintf(out, "floor partitions=%d segments=%d syscalls=%d wall_ms=%.1f cpu_ms=%.1f\n",
		w.partitions, w.segments, w.calls, float64(time.Since(start).Microseconds())/1000, float64((cpuTime()-c0).Microseconds())/1000)
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type floorWalker struct {
	buf, rb                     []byte
	partitions, segments, calls int
	st                          syscall.Stat_t
	times                       [][32]byte // a partition's time index names, NUL-terminated
	index                       [20]byte   // the highest base offset of an offset index listed
	indexSize                   int64      // its size
}

func (w *floorWalker) sys(trap, a1, a2, a3, a4 uintptr) (uintptr, syscall.Errno) {
	w.calls++
	r, _, e := syscall.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	return r, e
}

// names lists a directory's entries (without . and ..), calling fn with
// each name (valid during the call, NUL-terminated in the buffer) and
// whether getdents typed it a directory.
func (w *floorWalker) names(fd int, fn func(name string, p *byte, dir bool) error) error {
	for {
		n, e := w.sys(syscall.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)), 0)
		if e != 0 {
			return e
		}
		if n == 0 {
			return nil
		}
		for off := 0; off < int(n); {
			reclen := int(binary.NativeEndian.Uint16(w.buf[off+16:]))
			typ, rec := w.buf[off+18], w.buf[off+19:off+reclen]
			off += reclen
			l := 0
			for l < len(rec) && rec[l] != 0 {
				l++
			}
			name := unsafe.String(&rec[0], l)
			if name == "." || name == ".." {
				continue
			}
			if err := fn(name, &rec[0], typ == syscall.DT_DIR); err != nil {
				return err
			}
		}
	}
}

func (w *floorWalker) logDir(path string) error {
	root, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer syscall.Close(root)
	var parts []string
	if err := w.names(root, func(name string, _ *byte, dir bool) error {
		if dir && strings.Contains(name, "-") {
			parts = append(parts, strings.Clone(name))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, name := range parts {
		if err := w.partition(root, name); err != nil {
			return fmt.Errorf("%s/%s: %w", path, name, err)
		}
	}
	return nil
}

func (w *floorWalker) partition(root int, name string) error {
	w.partitions++
	cname := append([]byte(name), 0)
	r, e := w.sys(syscall.SYS_OPENAT, uintptr(root), uintptr(unsafe.Pointer(&cname[0])), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if e != 0 {
		return e
	}
	dir := int(r)
	defer w.sys(syscall.SYS_CLOSE, uintptr(dir), 0, 0, 0)
	w.sys(syscall.SYS_FSTAT, uintptr(dir), uintptr(unsafe.Pointer(&w.st)), 0, 0)
	// The listing stats everything but time indexes, which are read
	// after it (as the scanner does), the highest base offset last.
	w.times, w.index, w.indexSize = w.times[:0], [20]byte{}, -1
	err := w.names(dir, func(name string, p *byte, _ bool) error {
		if len(name) == 20+len(".timeindex") && strings.HasSuffix(name, ".timeindex") {
			var b [32]byte
			copy(b[:], name)
			w.times = append(w.times, b)
			return nil
		}
		if _, e := w.sys(syscall.SYS_NEWFSTATAT, uintptr(dir), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&w.st)), 0x100 /* AT_SYMLINK_NOFOLLOW */); e != 0 {
			return e
		}
		if strings.HasSuffix(name, ".log") {
			w.segments++
		}
		if len(name) == 20+len(".index") && strings.HasSuffix(name, ".index") && name[:20] > string(w.index[:20]) {
			copy(w.index[:], name[:20])
			w.indexSize = w.st.Size
		}
		return nil
	})
	if err != nil || len(w.times) == 0 {
		return err
	}
	last := 0
	for i := range w.times {
		if string(w.times[i][:20]) > string(w.times[last][:20]) {
			last = i
		}
	}
	w.times[last], w.times[len(w.times)-1] = w.times[len(w.times)-1], w.times[last]
	for i := range w.times {
		name := &w.times[i]
		r, e := w.sys(syscall.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&name[0])), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if e != 0 {
			return e
		}
		w.sys(syscall.SYS_FSTAT, r, uintptr(unsafe.Pointer(&w.st)), 0, 0)
		if size := w.st.Size; size >= 24 {
			w.sys(syscall.SYS_PREAD64, r, uintptr(unsafe.Pointer(&w.rb[0])), 24, uintptr(size-24))
			if i == len(w.times)-1 {
				w.active(dir, int(r), name[:20], size)
			}
		}
		w.sys(syscall.SYS_CLOSE, r, 0, 0, 0)
	}
	return nil
}

// active reads what the active segment needs, its time index open as ti
// (its last entry read): the entries before the hole of its time index,
// the same of its offset index, and its log's tail.
func (w *floorWalker) active(dir, ti int, base []byte, size int64) {
	w.entries(ti, 12, size)
	var name [32]byte
	copy(name[:], base)
	copy(name[20:], ".index")
	r, e := w.sys(syscall.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&name[0])), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	var pos int64
	if e == 0 {
		// Its size is the listing's.
		if size := w.indexSize; string(w.index[:]) == string(base) && size >= 8 {
			w.sys(syscall.SYS_PREAD64, r, uintptr(unsafe.Pointer(&w.rb[0])), 8, uintptr(size-8))
			pos = w.entries(int(r), 8, size)
		}
		w.sys(syscall.SYS_CLOSE, r, 0, 0, 0)
	}
	copy(name[20:], ".log\x00")
	if r, e := w.sys(syscall.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&name[0])), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); e == 0 {
		w.sys(syscall.SYS_PREAD64, r, uintptr(unsafe.Pointer(&w.rb[0])), 2048, uintptr(pos))
		w.sys(syscall.SYS_CLOSE, r, 0, 0, 0)
	}
}

// entries finds the valid entries of a preallocated index whose last
// entry was read (zero): SEEK_HOLE, then one read of the entries before
// the hole. It returns the position the last offset index entry points
// at (es 8), else 0.
func (w *floorWalker) entries(fd int, es int64, size int64) int64 {
	hole, e := w.sys(syscall.SYS_LSEEK, uintptr(fd), 0, 4 /* SEEK_HOLE */, 0)
	if e != 0 || int64(hole) >= size {
		return 0
	}
	n := min((int64(hole)+es-1)/es*es, int64(len(w.rb)))
	got, e := w.sys(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&w.rb[0])), uintptr(n), 0)
	if e != 0 || es != 8 {
		return 0
	}
	var pos int64
	for i := int64(0); i+8 <= int64(got); i += 8 {
		if p := int64(binary.BigEndian.Uint32(w.rb[i+4:])); p != 0 {
			pos = p
		}
	}
	return pos
}
