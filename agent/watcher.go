package agent

import (
	"errors"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// fileWatcher is the part of fsnotify the agent uses. Tests inject one with
// a tiny watch limit or forced overflows.
type fileWatcher interface {
	Add(path string) error
	Remove(path string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// fsWatcher adapts *fsnotify.Watcher.
type fsWatcher struct{ w *fsnotify.Watcher }

// newFSWatcher starts an inotify watcher with a generous event buffer, so
// bursts (a broker rolling many segments at once) rarely overflow.
func newFSWatcher() (fileWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, err
	}
	return fsWatcher{w}, nil
}

func (f fsWatcher) Add(path string) error         { return f.w.Add(path) }
func (f fsWatcher) Remove(path string) error      { return f.w.Remove(path) }
func (f fsWatcher) Events() <-chan fsnotify.Event { return f.w.Events }
func (f fsWatcher) Errors() <-chan error          { return f.w.Errors }
func (f fsWatcher) Close() error                  { return f.w.Close() }

// errWatchLimit reports that no more watches can be added: the inotify
// watch limit (fs.inotify.max_user_watches) is exhausted.
var errWatchLimit = errors.New("inotify watch limit reached")

// isWatchLimit tells the watch-limit error (ENOSPC from inotify_add_watch)
// from others.
func isWatchLimit(err error) bool {
	return errors.Is(err, errWatchLimit) || errors.Is(err, syscall.ENOSPC)
}

// Short names for the fsnotify values the loop matches on.
type eventT = fsnotify.Event

const (
	opCreate = fsnotify.Create
	opWrite  = fsnotify.Write
	opRemove = fsnotify.Remove
	opRename = fsnotify.Rename
	opChmod  = fsnotify.Chmod
)

var errOverflow = fsnotify.ErrEventOverflow
