//go:build !linux

package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// fsWatcher adapts *fsnotify.Watcher where the agent has no inotify
// watcher of its own (outside Linux).
type fsWatcher struct {
	w      *fsnotify.Watcher
	events chan eventT
	errs   chan error
	done   chan struct{} // closed by Close

	mu     sync.Mutex
	paths  map[int32]string // the watches, by a number of their own
	lastWd int32
}

func newFSWatcher() (fileWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(watcherEvents)
	if err != nil {
		return nil, err
	}
	f := &fsWatcher{w: w, events: make(chan eventT, watcherEvents), errs: make(chan error), done: make(chan struct{}), paths: map[int32]string{}}
	go f.forward()
	return f, nil
}

// forward converts fsnotify's events and errors until it closes them.
func (f *fsWatcher) forward() {
	defer close(f.events)
	defer close(f.errs)
	evs, errs := f.w.Events, f.w.Errors
	for evs != nil || errs != nil {
		select {
		case ev, ok := <-evs:
			if !ok {
				evs = nil
				continue
			}
			var o op
			for _, m := range []struct {
				from fsnotify.Op
				to   op
			}{{fsnotify.Create, opCreate}, {fsnotify.Write, opWrite}, {fsnotify.Remove, opRemove}, {fsnotify.Rename, opRename}, {fsnotify.Chmod, opChmod}} {
				if ev.Has(m.from) {
					o |= m.to
				}
			}
			select {
			case f.events <- eventT{Name: ev.Name, Op: o}:
			case <-f.done:
				return
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = errOverflow
			}
			select {
			case f.errs <- err:
			case <-f.done:
				return
			}
		}
	}
}

func (f *fsWatcher) Add(dir, name string) (int32, error) {
	path := filepath.Join(dir, name)
	if err := f.w.Add(path); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastWd++
	f.paths[f.lastWd] = path
	return f.lastWd, nil
}

func (f *fsWatcher) Remove(wd int32) error {
	f.mu.Lock()
	path, ok := f.paths[wd]
	delete(f.paths, wd)
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("no watch %d", wd)
	}
	return f.w.Remove(path)
}

func (f *fsWatcher) Events() <-chan eventT { return f.events }
func (f *fsWatcher) Errors() <-chan error  { return f.errs }
func (f *fsWatcher) Close() error {
	close(f.done)
	return f.w.Close()
}
