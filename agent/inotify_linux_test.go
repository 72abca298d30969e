//go:build linux

package agent

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func newTestWatcher(t *testing.T) *inotifyWatcher {
	t.Helper()
	fw, err := newFSWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close() })
	return fw.(*inotifyWatcher)
}

// nextEvent waits for the watcher's next event.
func nextEvent(t *testing.T, w *inotifyWatcher) eventT {
	t.Helper()
	select {
	case ev := <-w.Events():
		return ev
	case err := <-w.Errors():
		t.Fatalf("watcher error: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return eventT{}
}

// expectEvents reads events until each of want was seen (in any order,
// others in between are allowed, as a loaded kernel may add IN_MODIFY),
// and fails on an event whose path none of want or allowed has.
func expectEvents(t *testing.T, w *inotifyWatcher, want ...eventT) {
	t.Helper()
	left := map[eventT]int{}
	paths := map[string]bool{}
	for _, e := range want {
		left[e]++
		paths[e.Name] = true
	}
	for len(left) > 0 {
		ev := nextEvent(t, w)
		if !paths[ev.Name] {
			t.Fatalf("unexpected event %+v while waiting for %+v", ev, left)
		}
		if left[ev]--; left[ev] <= 0 {
			delete(left, ev)
		}
	}
}

func noEvent(t *testing.T, w *inotifyWatcher) {
	t.Helper()
	select {
	case ev := <-w.Events():
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// live is how many watches w holds.
func (w *inotifyWatcher) live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches) - w.dead
}

// The agent's own inotify watcher gives the events fsnotify gave: the
// full path, the ops from the inotify masks, and forgets the watch of a
// directory that is removed or renamed.
func TestInotifyWatcherEvents(t *testing.T) {
	root := t.TempDir()
	part := filepath.Join(root, "orders-0")
	if err := os.Mkdir(part, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t)
	rootWd, err := w.Add(root, "")
	if err != nil {
		t.Fatal(err)
	}
	wds := map[int32]bool{}
	for _, p := range [][2]string{{root, "orders-0"}, {part, ""}, {root + "/", "orders-0"}} {
		wd, err := w.Add(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		wds[wd] = true
	}
	if n := w.live(); n != 2 || len(wds) != 1 {
		t.Fatalf("%d watches, %d descriptors after adding two directories (one three times), want 2 and 1", n, len(wds))
	}

	log := filepath.Join(part, "00000000000000000000.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{log, opCreate})
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	expectEvents(t, w, eventT{log, opWrite})
	if err := os.Chmod(log, 0o600); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{log, opChmod})
	deleted := log + ".deleted"
	if err := os.Rename(log, deleted); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{log, opRename}, eventT{deleted, opCreate})
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{deleted, opRemove})

	// A partition directory renamed (Kafka's deletion): the parent sees
	// both names, the directory's own watch reports the rename of its
	// old path (a second event of the same name and op) and is dropped.
	gone := filepath.Join(root, "orders-0.abc-delete")
	if err := os.Rename(part, gone); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{part, opRename}, eventT{part, opRename}, eventT{gone, opCreate})
	if n := w.live(); n != 1 {
		t.Fatalf("%d watches after the rename, want 1 (the root)", n)
	}
	if err := os.WriteFile(filepath.Join(gone, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noEvent(t, w)
	var partWd int32
	for wd := range wds {
		partWd = wd
	}
	if err := w.Remove(partWd); !errors.Is(err, errNoWatch) {
		t.Fatalf("Remove of a dropped watch: %v, want errNoWatch", err)
	}

	// A watched directory removed: the parent reports it, once.
	if _, err := w.Add(root, filepath.Base(gone)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, eventT{filepath.Join(gone, "x"), opRemove}, eventT{gone, opRemove})
	noEvent(t, w)
	if n := w.live(); n != 1 {
		t.Fatalf("%d watches after the removal, want 1 (the root)", n)
	}

	// Remove, then a missing directory.
	if err := w.Remove(rootWd); err != nil {
		t.Fatal(err)
	}
	if n := w.live(); n != 0 {
		t.Fatalf("%d watches after Remove, want 0", n)
	}
	if err := os.WriteFile(filepath.Join(root, "y"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noEvent(t, w)
	if _, err := w.Add(root, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Add of a missing directory: %v, want ErrNotExist", err)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Events(); ok {
		t.Fatal("events open after Close")
	}
	if _, err := w.Add(root, ""); !errors.Is(err, errWatcherClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
}

// A full kernel queue is reported as errOverflow (the loop then rescans).
func TestInotifyWatcherOverflow(t *testing.T) {
	max := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if n, err := strconv.Atoi(string(b[:len(b)-1])); err == nil {
			max = n
		}
	}
	if max > 100_000 {
		t.Skipf("max_queued_events is %d", max)
	}
	dir := t.TempDir()
	w := newTestWatcher(t)
	if _, err := w.Add(dir, ""); err != nil {
		t.Fatal(err)
	}
	// Nobody reads events: the channel, the reader's buffer and then the
	// kernel's queue fill up. Two files' modes changed in turn: the kernel
	// merges an event only into an equal last one.
	files := [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for _, f := range files {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range max + 2*watcherEvents + 100 {
		if err := os.Chmod(files[i%2], os.FileMode(0o600+i%2*0o44)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-w.Events():
		case err := <-w.Errors():
			if !errors.Is(err, errOverflow) {
				t.Fatalf("error %v, want errOverflow", err)
			}
			return
		case <-deadline:
			t.Fatal("no overflow reported")
		}
	}
}

// BenchmarkWatcherHeap reports the live heap a watch costs: the agent's
// watcher beside fsnotify's, on 10,000 directories named as partitions.
//
//	go test -run '^$' -bench WatcherHeap -benchtime 1x ./agent/
func BenchmarkWatcherHeap(b *testing.B) {
	const n = 10_000
	root := filepath.Join(b.TempDir(), "logs")
	names := make([]string, n) // held by the loop in any case
	for i := range names {
		names[i] = "topic-" + strconv.Itoa(i/100) + "-" + strconv.Itoa(i%100)
		if err := os.MkdirAll(filepath.Join(root, names[i]), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, impl := range []struct {
		name string
		new  func() (fileWatcher, error)
	}{{"agent", newFSWatcher}, {"fsnotify", newFsnotifyWatcher}} {
		b.Run(impl.name, func(b *testing.B) {
			for range b.N {
				heap := func() float64 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					return float64(m.HeapAlloc)
				}
				w, err := impl.new()
				if err != nil {
					b.Fatal(err)
				}
				h0 := heap()
				for _, name := range names {
					if _, err := w.Add(root, name); err != nil {
						b.Fatal(err)
					}
				}
				h1 := heap()
				b.ReportMetric((h1-h0)/n, "live-B/watch")
				w.Close()
			}
		})
	}
}
