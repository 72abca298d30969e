package enforcer

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// TestBandChangesLogged: the enforcer logs a log dir's band once when it
// first sees it and once per change (R3.6: what the guard decides is
// visible), with the usage and the band's action.
func TestBandChangesLogged(t *testing.T) {
	var logs bytes.Buffer
	src := &staticSource{ch: make(chan struct{}, 1)}
	cfg := Config{BrokerID: new(int32(1))}
	e, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry(),
		Deps{Snapshots: src, Admin: newFakeAdmin(fullSnapshot()), Clock: &clockAt{t0}})
	if err != nil {
		t.Fatal(err)
	}
	C, O := agent.StateClosed, agent.StateOpen
	for _, used := range []uint64{500, 600, 800, 800, 950, 500} {
		src.mu.Lock()
		src.snap = snap(used, 1000, part("a", 0, 0, 40, seg(0, 1, C), seg(10, 2, O)))
		src.mu.Unlock()
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="band changed"`) {
			got = append(got, l)
		}
	}
	want := []string{
		`band=scheduled from_band="" action=scheduled usage_percent=50`,
		`band=periodic from_band=scheduled action=periodic usage_percent=80 target_percent=75`,
		`band=protect from_band=periodic action=protect usage_percent=95`,
		`band=scheduled from_band=protect action=scheduled usage_percent=50`,
	}
	if len(got) != len(want) {
		t.Fatalf("band lines:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) || !strings.Contains(got[i], "log_dir="+dir) {
			t.Errorf("line %d: %s\nwant %s", i, got[i], w)
		}
	}
}
