//go:build linux

package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// inotifyWatcher watches directories with inotify. It replaces
// fsnotify's watcher, whose bookkeeping (a watch struct, the full path,
// and two maps, about 200 bytes a watch) was a sixth of the running
// agent's heap with one watch per partition directory. It keeps for a
// watch its directory's name, split from its parent (a few distinct
// parents, kept once), in one map by watch descriptor and one by path.
// Its events are fsnotify's: the same ops from the same inotify masks, a
// watched directory removed or renamed forgets its watch, and a queue
// overflow is reported as errOverflow.
type inotifyWatcher struct {
	file       *os.File
	fd         int
	events     chan eventT
	errs       chan error
	done       chan struct{} // closed by Close
	readerDone chan struct{} // closed when read returns
	closeOnce  sync.Once

	mu     sync.Mutex
	byWd   map[int32]watchPath
	byPath map[watchPath]int32
	dirs   []string // parent directories, by index
	dirIdx map[string]uint32
}

// watchPath is a watched path: its parent directory, an index into
// inotifyWatcher.dirs (noDir for a path without a separator), and its
// last element.
type watchPath struct {
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
		byWd:       map[int32]watchPath{},
		byPath:     map[watchPath]int32{},
		dirIdx:     map[string]uint32{},
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

// split splits path into its watchPath; with intern a parent directory
// not seen before is added, else ok is false for it.
func (w *inotifyWatcher) split(path string, intern bool) (p watchPath, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return watchPath{dir: noDir, name: path}, true
	}
	dir := path[:i]
	idx, ok := w.dirIdx[dir]
	if !ok {
		if !intern {
			return watchPath{}, false
		}
		dir = strings.Clone(dir)
		idx = uint32(len(w.dirs))
		w.dirs = append(w.dirs, dir)
		w.dirIdx[dir] = idx
	}
	return watchPath{dir: idx, name: path[i+1:]}, true
}

// join is the path p stands for.
func (w *inotifyWatcher) join(p watchPath) string {
	if p.dir == noDir {
		return p.name
	}
	return w.dirs[p.dir] + "/" + p.name
}

// Add watches the directory path. Adding a watched path again keeps its
// watch; a path whose directory is watched under another path already
// gets no watch of its own (inotify gives both the same descriptor).
func (w *inotifyWatcher) Add(path string) error {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return errWatcherClosed
	}
	key, _ := w.split(path, true)
	old, had := w.byPath[key]
	flags := uint32(watchMask)
	if had {
		flags |= syscall.IN_MASK_ADD
	}
	n, err := syscall.InotifyAddWatch(w.fd, path, flags)
	if err != nil {
		return err
	}
	wd := int32(n)
	if had && old != wd {
		// The path is another directory now (its old one went and its
		// removal was not read yet): forget the old watch.
		delete(w.byWd, old)
		delete(w.byPath, key)
	}
	if _, ok := w.byWd[wd]; ok {
		return nil
	}
	key.name = strings.Clone(key.name) // not the caller's whole path
	w.byWd[wd] = key
	w.byPath[key] = wd
	return nil
}

// Remove removes the watch of path.
func (w *inotifyWatcher) Remove(path string) error {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed() {
		return nil
	}
	key, ok := w.split(path, false)
	wd, watched := w.byPath[key]
	if !ok || !watched {
		return fmt.Errorf("%w: %s", errNoWatch, path)
	}
	delete(w.byPath, key)
	delete(w.byWd, wd)
	if _, err := syscall.InotifyRmWatch(w.fd, uint32(wd)); err != nil {
		return fmt.Errorf("remove watch %s: %w", path, err)
	}
	return nil
}

// forget drops the watch wd of key from the maps.
func (w *inotifyWatcher) forget(wd int32, key watchPath) {
	delete(w.byWd, wd)
	if cur, ok := w.byPath[key]; ok && cur == wd {
		delete(w.byPath, key)
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
	key, watched := w.byWd[wd]
	if !watched {
		return eventT{}, false, nil
	}
	path := w.join(key)
	ev.Name = path
	if i := bytes.IndexByte(rawName, 0); i >= 0 {
		rawName = rawName[:i]
	}
	if len(rawName) > 0 {
		ev.Name = path + "/" + string(rawName)
	}
	if mask&(syscall.IN_IGNORED|syscall.IN_UNMOUNT) != 0 {
		w.forget(wd, key) // the kernel dropped the watch
		return eventT{}, false, nil
	}
	if mask&syscall.IN_DELETE_SELF != 0 {
		w.forget(wd, key)
		// The parent's watch reports the removal (IN_DELETE).
		if key.dir != noDir {
			if pk, ok := w.split(w.dirs[key.dir], false); ok {
				if _, ok := w.byPath[pk]; ok {
					return eventT{}, false, nil
				}
			}
		}
	}
	if mask&syscall.IN_MOVE_SELF != 0 {
		// The watch follows the directory to its new name, which this
		// watcher does not know: drop it.
		w.forget(wd, key)
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
