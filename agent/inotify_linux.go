//go:build linux

package agent

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// inotifyWatcher watches directories with inotify. It replaces
// fsnotify's watcher, whose bookkeeping (a watch struct, the full path,
// and two maps: about 170 bytes a watch) was a sixth of the running
// agent's heap with one watch per partition directory. It keeps a watch
// as its descriptor, its parent directory (an index: there are a few)
// and the name the caller passed (the loop's own string), in a slice
// sorted by descriptor: about 30 bytes a watch. The caller keeps the
// descriptor for Remove. Its events are fsnotify's: the same ops from the
// same inotify masks, a watched directory removed or renamed forgets its
// watch, and a queue overflow is reported as errOverflow.
type inotifyWatcher struct {
	file       *os.File
	fd         int
	events     chan eventT
	errs       chan error
	done       chan struct{} // closed by Close
	readerDone chan struct{} // closed when read returns
	closeOnce  sync.Once

	mu sync.Mutex
	// watches, by descriptor: the kernel hands descriptors out in
	// ascending order (cyclically, from 1), so a new watch is appended.
	// A removed one stays as a tombstone (dir == noDir) until they are
	// half of the slice.
	watches []watchEntry
	dead    int
	dirs    []string // parent directories, by index
	dirIdx  map[string]uint32
	// self: the watch of the directory dirs[i] itself (added with name
	// ""), by i.
	self map[uint32]int32
}

// watchEntry is one watch: dirs[dir]/name, or dirs[dir] for name "".
type watchEntry struct {
	wd   int32
	dir  uint32
	name string
}

const noDir = math.MaxUint32

// watchMask is what fsnotify's Add watches for: Create, Write, Remove,
// Rename and Chmod.
const watchMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_MODIFY | syscall.IN_DELETE |
	syscall.IN_DELETE_SELF | syscall.IN_MOVED_FROM | syscall.IN_MOVE_SELF | syscall.IN_ATTRIB

var (
	errWatcherClosed = errors.New("inotify watcher already closed")
	errNoWatch       = errors.New("no such watch")
)

func newFSWatcher() (fileWatcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	w := &inotifyWatcher{
		// Non-blocking: reads wait in the runtime's poller, and Close
		// ends a pending one.
		file:       os.NewFile(uintptr(fd), "inotify"),
		fd:         fd,
		events:     make(chan eventT, watcherEvents),
		errs:       make(chan error),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
		dirIdx:     map[string]uint32{},
		self:       map[uint32]int32{},
	}
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) Events() <-chan eventT { return w.events }
func (w *inotifyWatcher) Errors() <-chan error  { return w.errs }

// Close removes every watch and ends the events and errors channels.
func (w *inotifyWatcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.mu.Lock()
		close(w.done)
		w.mu.Unlock()
		err = w.file.Close()
		<-w.readerDone
	})
	return err
}

func (w *inotifyWatcher) closed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// path is the path e watches.
func (w *inotifyWatcher) path(e watchEntry) string {
	if e.name == "" {
		return w.dirs[e.dir]
	}
	return w.dirs[e.dir] + "/" + e.name
}

// find returns the index of wd's entry, or where it would go.
func (w *inotifyWatcher) find(wd int32) (int, bool) {
	i, ok := slices.BinarySearchFunc(w.watches, wd, func(e watchEntry, wd int32) int { return cmp.Compare(e.wd, wd) })
	return i, ok && w.watches[i].dir != noDir
}

// Add watches dir/name (dir for name ""). A directory watched already
// (under this path or another: inotify gives both one descriptor) keeps
// its watch and descriptor.
func (w *inotifyWatcher) Add(dir, name string) (int32, error) {
	dir = filepath.Clean(dir)
	path := dir
	if name != "" {
		path = dir + "/" + name
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return 0, errWatcherClosed
	}
	n, err := syscall.InotifyAddWatch(w.fd, path, watchMask)
	if err != nil {
		return 0, err
	}
	wd := int32(n)
	i, ok := w.find(wd)
	if ok {
		return wd, nil
	}
	idx, ok := w.dirIdx[dir]
	if !ok {
		dir = strings.Clone(dir)
		idx = uint32(len(w.dirs))
		w.dirs = append(w.dirs, dir)
		w.dirIdx[dir] = idx
	}
	e := watchEntry{wd: wd, dir: idx, name: name}
	switch {
	case i < len(w.watches) && w.watches[i].wd == wd: // a tombstone
		w.watches[i] = e
		w.dead--
	default:
		w.watches = slices.Insert(w.watches, i, e) // i == len: appended
	}
	if name == "" {
		w.self[idx] = wd
	}
	return wd, nil
}

// Remove removes the watch wd.
func (w *inotifyWatcher) Remove(wd int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return nil
	}
	i, ok := w.find(wd)
	if !ok {
		return fmt.Errorf("%w: %d", errNoWatch, wd)
	}
	path := w.path(w.watches[i])
	w.forget(i)
	if _, err := syscall.InotifyRmWatch(w.fd, uint32(wd)); err != nil {
		return fmt.Errorf("remove watch %s: %w", path, err)
	}
	return nil
}

// forget drops the watch at index i.
func (w *inotifyWatcher) forget(i int) {
	e := w.watches[i]
	if e.name == "" && w.self[e.dir] == e.wd {
		delete(w.self, e.dir)
	}
	w.watches[i] = watchEntry{wd: e.wd, dir: noDir}
	w.dead++
	if w.dead > 64 && w.dead > len(w.watches)/2 {
		w.watches = slices.DeleteFunc(w.watches, func(e watchEntry) bool { return e.dir == noDir })
		w.watches = slices.Clip(w.watches)
		w.dead = 0
	}
}

// read reads inotify events until Close, then closes the channels.
func (w *inotifyWatcher) read() {
	defer func() {
		close(w.readerDone)
		close(w.errs)
		close(w.events)
	}()
	buf := make([]byte, syscall.SizeofInotifyEvent*watcherEvents)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if !w.sendErr(err) {
				return
			}
			continue
		}
		if n < syscall.SizeofInotifyEvent {
			err := errors.New("inotify: short read")
			if n == 0 {
				err = io.EOF
			}
			if !w.sendErr(err) {
				return
			}
			continue
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + syscall.SizeofInotifyEvent
			off = start + nameLen
			if off > n {
				break
			}
			if mask&syscall.IN_Q_OVERFLOW != 0 && !w.sendErr(errOverflow) {
				return
			}
			ev, ok, err := w.event(wd, mask, buf[start:off])
			if err != nil && !w.sendErr(err) {
				return
			}
			if ok && !w.send(ev) {
				return
			}
		}
	}
}

// event makes the event of one inotify record, as fsnotify does: ok is
// false when there is none to send.
func (w *inotifyWatcher) event(wd int32, mask uint32, rawName []byte) (ev eventT, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, watched := w.find(wd)
	if !watched {
		return eventT{}, false, nil
	}
	e := w.watches[i]
	path := w.path(e)
	ev.Name = path
	if j := bytes.IndexByte(rawName, 0); j >= 0 {
		rawName = rawName[:j]
	}
	if len(rawName) > 0 {
		ev.Name = path + "/" + string(rawName)
	}
	if mask&(syscall.IN_IGNORED|syscall.IN_UNMOUNT) != 0 {
		w.forget(i) // the kernel dropped the watch
		return eventT{}, false, nil
	}
	if mask&syscall.IN_DELETE_SELF != 0 {
		w.forget(i)
		// The parent's watch reports the removal (IN_DELETE).
		if _, ok := w.self[e.dir]; ok && e.name != "" {
			return eventT{}, false, nil
		}
	}
	if mask&syscall.IN_MOVE_SELF != 0 {
		// The watch follows the directory to its new name, which this
		// watcher does not know: drop it.
		w.forget(i)
		if _, e := syscall.InotifyRmWatch(w.fd, uint32(wd)); e != nil && !errors.Is(e, syscall.EINVAL) {
			err = fmt.Errorf("remove watch %s: %w", path, e)
		}
	}
	for _, m := range []struct {
		mask uint32
		op   op
	}{
		{syscall.IN_CREATE | syscall.IN_MOVED_TO, opCreate},
		{syscall.IN_DELETE_SELF | syscall.IN_DELETE, opRemove},
		{syscall.IN_MODIFY, opWrite},
		{syscall.IN_MOVE_SELF | syscall.IN_MOVED_FROM, opRename},
		{syscall.IN_ATTRIB, opChmod},
	} {
		if mask&m.mask != 0 {
			ev.Op |= m.op
		}
	}
	return ev, true, err
}

func (w *inotifyWatcher) send(ev eventT) bool {
	select {
	case w.events <- ev:
		return true
	case <-w.done:
		return false
	}
}

func (w *inotifyWatcher) sendErr(err error) bool {
	select {
	case w.errs <- err:
		return true
	case <-w.done:
		return false
	}
}
