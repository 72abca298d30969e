package enforcer

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestOfflineLogDirs: a log dir the broker reports offline is published
// for the agent's model (held: log_dir_offline), and nothing is deleted
// there (spec R1.2, R7.1).
func TestOfflineLogDirs(t *testing.T) {
	s := fullSnapshot()
	f := newFakeAdmin(s)
	ev := newFakeEvidence(s)
	ev.dirs[0].Err = errors.New("KAFKA_STORAGE_ERROR")
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Purge: lenientPurge}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(),
		Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)}, Admin: f, Clock: &clockAt{t0}, Evidence: ev})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.OfflineLogDirs(); got != nil {
		t.Errorf("before a pass: %v, want nil", got)
	}
	if err := e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := e.OfflineLogDirs(); len(got) != 1 || got[dir] == "" {
		t.Errorf("R1.2/offline log dirs %v, want %s", got, dir)
	}
	if len(f.lso) > 0 {
		for tp, lso := range f.lso {
			if lso > 0 {
				t.Errorf("R1.2/deleted in an offline log dir: %v at %d", tp, lso)
			}
		}
	}
}
