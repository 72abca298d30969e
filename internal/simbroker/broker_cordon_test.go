package simbroker

import (
	"errors"
	"slices"
	"testing"
)

// The single broker's cordons as Kafka keeps them: APPEND once, SUBTRACT
// of an absent entry is no error, an entry not in log.dirs is refused.
func TestBrokerCordons(t *testing.T) {
	b, _ := newDemoBroker(t, 0)
	a, ctx := b.Admin(), t.Context()
	dir := b.cfg.Dir
	st, err := a.LogDirCordons(ctx, b.cfg.NodeID)
	if err != nil || !st.Supported() || !slices.Equal(st.LogDirs, []string{dir, b.SpareLogDir()}) || len(st.Dynamic) != 0 {
		t.Fatalf("cordons %+v, %v", st, err)
	}
	for range 2 {
		if err := a.CordonLogDir(ctx, b.cfg.NodeID, dir); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Cordoned(); !slices.Equal(got, []string{dir}) {
		t.Errorf("cordoned %q after two APPENDs", got)
	}
	if err := a.CordonLogDir(ctx, b.cfg.NodeID, "/elsewhere"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("an entry not in log.dirs: %v", err)
	}
	for range 2 {
		if err := a.UncordonLogDir(ctx, b.cfg.NodeID, dir); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Cordoned(); len(got) != 0 {
		t.Errorf("cordoned %q after SUBTRACT", got)
	}
	if _, err := a.LogDirCordons(ctx, b.cfg.NodeID+1); !errors.Is(err, ErrNoBroker) {
		t.Errorf("another node: %v", err)
	}
}
