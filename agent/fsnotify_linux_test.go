//go:build linux

package agent

import (
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// fsnotifyWatcher is fsnotify's watcher, which the agent used before its
// own (BenchmarkWatcherHeap compares them).
// Add and Remove are fsnotify's with the path the loop used to pass.
type fsnotifyWatcher struct{ w *fsnotify.Watcher }

func newFsnotifyWatcher() (fileWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(watcherEvents)
	return fsnotifyWatcher{w}, err
}

func (f fsnotifyWatcher) Add(dir, name string) (int32, error) {
	return 0, f.w.Add(filepath.Join(dir, name))
}
func (f fsnotifyWatcher) Remove(wd int32) error { return nil }
func (f fsnotifyWatcher) Events() <-chan eventT { return nil }
func (f fsnotifyWatcher) Errors() <-chan error  { return nil }
func (f fsnotifyWatcher) Close() error          { return f.w.Close() }
