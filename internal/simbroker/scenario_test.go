package simbroker

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

// TestScenarioPhases drives a scenario with a usage the test sets: calm
// first, then a burst that doubles every Doubling and slows near Peak,
// stopped at Peak, calm again once usage is under Low; and a burst the
// guard holds down ends after MaxFill.
func TestScenarioPhases(t *testing.T) {
	var logs bytes.Buffer
	u := 0.2
	s := &Scenario{Topic: "burst", Capacity: 1000, Usage: func() (float64, bool) { return u, true },
		Peak: 0.9, Low: 0.6, StartRate: 0.01, MaxRate: 0.08, Doubling: 10 * time.Second, MaxFill: time.Minute,
		FirstCalm: 5 * time.Second, Calm: 30 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sec := time.Second
	steps := []struct {
		at      time.Duration
		usage   float64
		refused bool
		phase   Phase
		rate    float64 // bytes/s; -1: not checked
	}{
		{0, 0.2, false, PhaseCalm, 0},
		{4 * sec, 0.2, false, PhaseCalm, 0},
		{5 * sec, 0.2, false, PhaseFill, 10},     // StartRate x capacity
		{15 * sec, 0.2, false, PhaseFill, 20},    // doubled
		{25 * sec, 0.2, false, PhaseFill, 40},    // doubled again
		{45 * sec, 0.2, false, PhaseFill, 80},    // capped at MaxRate
		{46 * sec, 0.8125, false, PhaseFill, 60}, // slowing: (0.9+0.025-0.8125)/0.15 of 80
		{47 * sec, 0.9, false, PhaseEbb, 0},      // at Peak: stop
		{60 * sec, 0.95, false, PhaseEbb, 0},     // overshoot: still nothing more
		{90 * sec, 0.61, false, PhaseEbb, 0},     // retention has not reclaimed enough yet
		{91 * sec, 0.59, false, PhaseCalm, 0},    // under Low
		{120 * sec, 0.5, false, PhaseCalm, 0},    // Calm is 30 s
		{121 * sec, 0.5, false, PhaseFill, 10},   // the next burst
		{180 * sec, 0.85, false, PhaseFill, -1},  // the guard holds usage down...
		{181 * sec, 0.85, false, PhaseEbb, 0},    // ...MaxFill ends the burst
		{200 * sec, 0.5, false, PhaseCalm, 0},    //
		{230 * sec, 0.5, false, PhaseFill, 10},   // the third burst
		{231 * sec, 0.88, true, PhaseEbb, 0},     // write protection refuses it: the producer gives up
	}
	for _, st := range steps {
		u = st.usage
		r := s.Rate(at(st.at), st.refused)
		if s.Phase() != st.phase || (st.rate >= 0 && math.Abs(r-st.rate) > 1e-6) {
			t.Errorf("t+%s usage %.2f: phase %s rate %.2f, want %s %.2f", st.at, st.usage, s.Phase(), r, st.phase, st.rate)
		}
	}
	for _, stopped := range []string{StopPeak, StopMaxFill, StopRefused} {
		if !strings.Contains(logs.String(), "stopped="+stopped) {
			t.Errorf("no burst stopped by %s:\n%s", stopped, logs.String())
		}
	}
	if n := strings.Count(logs.String(), `msg="scenario phase"`); n != 9 {
		t.Errorf("%d phase lines, want one per change (9):\n%s", n, logs.String())
	}
}

// TestDemoScenarioCycle runs the demo's broker and scenario in simulated
// time, with usage measured as the agent measures it (the scanned log
// dir's bytes over the configured capacity): usage crosses 70, 75, 85 and
// 90%, peaks under 100%, and falls back under the scenario's Low through
// the burst topic's own retention, into the next calm.
func TestDemoScenarioCycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, sc := Demo(DemoOptions{Dir: dir, Now: t0, Capacity: testCapacity, Speed: cycleSpeed()})
	b, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	scanner := newScanner(t)
	var u, peak float64
	sc.Usage = func() (float64, bool) { return u, true }
	crossed := map[float64]time.Duration{}
	now := t0
	calmAgain := false
	for i := 0; i < 400 && !calmAgain; i++ {
		now = now.Add(250 * time.Millisecond)
		b.SetExtraRate(sc.Topic, sc.Rate(now, b.Refused(sc.Topic)))
		if err := b.Step(now); err != nil {
			t.Fatal(err)
		}
		u = scanSnapshot(t, scanner, b, dir, now).LogDirs[0].Usage.Ratio()
		peak = max(peak, u)
		for _, th := range []float64{0.70, 0.75, 0.85, 0.90} {
			if _, ok := crossed[th]; !ok && u >= th {
				crossed[th] = now.Sub(t0)
			}
		}
		calmAgain = sc.Phase() == PhaseCalm && peak > 0.9
	}
	for _, th := range []float64{0.70, 0.75, 0.85, 0.90} {
		if _, ok := crossed[th]; !ok {
			t.Errorf("usage never crossed %.0f%% (peak %.1f%%)", 100*th, 100*peak)
		}
	}
	if peak >= 0.98 {
		t.Errorf("peak %.1f%%: the scenario overshoots", 100*peak)
	}
	if !calmAgain || u >= sc.Low {
		t.Errorf("usage did not fall back: %.1f%% at t+%s, phase %s", 100*u, now.Sub(t0), sc.Phase())
	}
	t.Logf("crossed %v, peak %.1f%%, back to %.1f%% at t+%s", crossed, 100*peak, 100*u, now.Sub(t0))
}
