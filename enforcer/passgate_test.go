package enforcer

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// TestPassGate: a snapshot that moves only usage, within the thresholds
// of a band that frees nothing, after a pass that planned nothing, skips
// its pass; anything else runs one.
func TestPassGate(t *testing.T) {
	p := Policy{Profile: CloudProfile(), HysteresisPoints: 5}
	at := func(used uint64, gen uint64) *agent.Snapshot {
		s := snap(used, 1000)
		s.Generation = gen
		return s
	}
	cases := []struct {
		name    string
		last    *agent.Snapshot
		settled bool
		next    *agent.Snapshot
		skip    bool
	}{
		{"usage moved within the band", at(100, 7), true, at(300, 7), true},
		{"the last pass planned something", at(100, 7), false, at(300, 7), false},
		{"new generation", at(100, 7), true, at(100, 8), false},
		{"no generation (not a live agent)", at(100, 0), true, at(100, 0), false},
		{"crossed a band", at(100, 7), true, at(760, 7), false},
		{"crossed a hysteresis bound", at(690, 7), true, at(710, 7), false}, // periodic from 0.75, less 5 points
		{"in a band that frees", at(800, 7), true, at(801, 7), false},
		{"capacity unknown", at(0, 7), true, &agent.Snapshot{Generation: 7, LogDirs: []agent.LogDir{{Path: dir}}}, false},
	}
	for _, c := range cases {
		var g passGate
		g.record(p, c.last, c.settled)
		if got := g.skip(p, c.next, false); got != c.skip {
			t.Errorf("%s: skip %v, want %v", c.name, got, c.skip)
		}
	}
	var g passGate
	g.record(p, at(100, 7), true)
	if g.skip(p, at(300, 7), true) {
		t.Error("skipped while a purge is being verified")
	}
}

// TestRunSkipsUsageOnlySnapshots: Run's loop consults the gate; a
// snapshot of a new generation still gets its pass.
func TestRunSkipsUsageOnlySnapshots(t *testing.T) {
	s := snap(100, 1000)
	s.Generation = 1
	src := &staticSource{snap: s, ch: make(chan struct{}, 1)}
	reg := prometheus.NewRegistry()
	e, err := New(Config{Interval: time.Hour, BrokerID: new(int32(1))}, slog.New(slog.NewTextHandler(io.Discard, nil)), reg,
		Deps{Snapshots: src, Admin: newFakeAdmin(s), Clock: &clockAt{t0}, Evidence: newFakeEvidence(s)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	passes := func() float64 { return gather(t, reg, "kafka_disk_guard_reconciles_total", nil) }
	waitPasses := func(n float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); passes() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%v passes, want %v", passes(), n)
			}
		}
	}
	publish := func(used uint64, gen uint64) {
		next := snap(used, 1000)
		next.Generation = gen
		src.mu.Lock()
		src.snap = next
		src.mu.Unlock()
		src.ch <- struct{}{}
		for len(src.ch) > 0 { // taken by the loop
			time.Sleep(time.Millisecond)
		}
	}
	waitPasses(1)
	for used := uint64(101); used < 110; used++ {
		publish(used, 1)
	}
	time.Sleep(50 * time.Millisecond)
	if n := passes(); n != 1 {
		t.Fatalf("%v passes after usage-only snapshots, want 1", n)
	}
	publish(110, 2)
	waitPasses(2)
	publish(900, 2) // into the purge band
	waitPasses(3)
}
