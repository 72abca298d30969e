package agent

import (
	"errors"
	"syscall"
)

// fileWatcher is the inotify watcher the agent uses. Tests inject one with
// a tiny watch limit or forced overflows.
type fileWatcher interface {
	// Add watches the directory dir/name (dir itself when name is ""),
	// and returns the watch's descriptor for Remove. The watcher may keep
	// name: the loop passes its own copy (a key of its partitions), so a
	// watch costs no copy of it.
	Add(dir, name string) (int32, error)
	// Remove removes the watch wd.
	Remove(wd int32) error
	Events() <-chan eventT
	Errors() <-chan error
	Close() error
}

// eventT is one file system event: the path it happened to and what
// happened (fsnotify's event, which the agent used before its own inotify
// watcher; the ops map from inotify's masks as fsnotify maps them).
type eventT struct {
	Name string
	Op   op
}

// op is a set of event kinds.
type op uint32

const (
	opCreate op = 1 << iota // IN_CREATE, IN_MOVED_TO
	opWrite                 // IN_MODIFY
	opRemove                // IN_DELETE, IN_DELETE_SELF
	opRename                // IN_MOVED_FROM, IN_MOVE_SELF
	opChmod                 // IN_ATTRIB
)

// Has reports whether the event has any of the kinds in o.
func (e eventT) Has(o op) bool { return e.Op&o != 0 }

// watcherEvents is the room in a watcher's event channel, so bursts (a
// broker rolling many segments at once) rarely overflow.
const watcherEvents = 4096

// errWatchLimit reports that no more watches can be added: the inotify
// watch limit (fs.inotify.max_user_watches) is exhausted.
var errWatchLimit = errors.New("inotify watch limit reached")

// isWatchLimit tells the watch-limit error (ENOSPC from inotify_add_watch)
// from others.
func isWatchLimit(err error) bool {
	return errors.Is(err, errWatchLimit) || errors.Is(err, syscall.ENOSPC)
}

// errOverflow is the watcher's error when the kernel's event queue
// overflowed and events were lost.
var errOverflow = errors.New("inotify event queue overflowed")
