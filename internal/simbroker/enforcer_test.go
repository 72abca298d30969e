package simbroker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// source is the snapshot the test built last; the test calls Reconcile
// itself, from its own goroutine.
type source struct{ snap *agent.Snapshot }

func (s *source) Snapshot() *agent.Snapshot { return s.snap }
func (s *source) Updated() <-chan struct{}  { return nil }

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// cycleResult is what runCycle saw.
type cycleResult struct {
	logs        string
	peak        float64
	protected   State // the broker's state when the most topics were refused
	final       State
	finalUsage  float64
	firstSegLSO bool // at the end every log start offset is its first segment's base
}

// cycleSpeed is the demo's speed in the cycle tests: 2, or 4 in the quick
// loop (-short), where a cycle takes half the steps (each step writes and
// scans the log dir's files: most of the package's time); the full run
// keeps 2.
func cycleSpeed() float64 {
	if testing.Short() {
		return 4
	}
	return 2
}

// runCycle runs the demo's broker, scenario and an enforcer (cfg) in
// simulated time, the agent's scanner measuring the log dir at each step,
// until the scenario is calm again after a burst.
func runCycle(t *testing.T, cfg enforcer.Config) cycleResult {
	t.Helper()
	dir := t.TempDir()
	bcfg, sc := Demo(DemoOptions{Dir: dir, Now: t0, Capacity: testCapacity, Speed: cycleSpeed()})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	b, err := New(bcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	sc.Logger = logger
	scanner := newScanner(t)
	src, clk := &source{}, &clock{t0}
	enf, err := enforcer.New(cfg, logger, prometheus.NewRegistry(), enforcer.Deps{Snapshots: src, Admin: b.Admin(), Clock: clk, Evidence: b.Evidence()})
	if err != nil {
		t.Fatal(err)
	}
	var res cycleResult
	var u float64
	sc.Usage = func() (float64, bool) { return u, true }
	now := t0
	for i := 0; i < 800; i++ {
		now = now.Add(250 * time.Millisecond)
		b.SetExtraRate(sc.Topic, sc.Rate(now, b.Refused(sc.Topic)))
		if err := b.Step(now); err != nil {
			t.Fatal(err)
		}
		s := scanSnapshot(t, scanner, b, dir, now)
		u = s.LogDirs[0].Usage.Ratio()
		res.peak = max(res.peak, u)
		src.snap, clk.now = s, now
		if err := enf.Reconcile(t.Context()); err != nil {
			t.Fatalf("reconcile at t+%s: %v", now.Sub(t0), err)
		}
		if st := b.State(); len(st.Refused) > len(res.protected.Refused) {
			res.protected = st
		}
		if sc.Phase() == PhaseCalm && res.peak > 0.9 {
			break
		}
	}
	res.logs, res.final, res.finalUsage = logs.String(), b.State(), u
	res.firstSegLSO = true
	for _, p := range b.parts {
		if p.log.LogStartOffset() != p.log.Segments()[0].BaseOffset {
			res.firstSegLSO = false
		}
	}
	if sc.Phase() != PhaseCalm {
		t.Fatalf("the cycle did not end: phase %s, usage %.1f%%", sc.Phase(), 100*u)
	}
	return res
}

func countLines(logs, msg string, attrs ...string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, `msg="`+msg+`"`) {
			continue
		}
		ok := true
		for _, a := range attrs {
			ok = ok && strings.Contains(l, a)
		}
		if ok {
			n++
		}
	}
	return n
}

// TestObserveModeAcrossTheBands (R4.4): through a whole demo cycle the
// enforcer in observe mode enters every band, plans deletions (eligible
// ones at 75%, unexpired ones at 85%) and protection (at 90%), and the
// simulated broker's admin state is untouched: no ACL, no quota, no
// ownership record, no log start offset moved; usage falls back through
// retention alone.
func TestObserveModeAcrossTheBands(t *testing.T) {
	t.Parallel()
	r := runCycle(t, enforcer.Config{})
	for _, band := range []string{"periodic", "purge", "protect"} {
		if countLines(r.logs, "band changed", "band="+band) == 0 {
			t.Errorf("never entered band %s (peak %.1f%%)", band, 100*r.peak)
		}
	}
	if countLines(r.logs, "would delete records", "action=periodic", "unexpired_bytes=0") == 0 {
		t.Error("no eligible segments planned in the periodic band")
	}
	if countLines(r.logs, "would delete records", "action=purge") == 0 || !strings.Contains(r.logs, "unexpired_bytes=") {
		t.Error("no purge planned in the purge band")
	}
	if countLines(r.logs, "write protection on", "dry_run=true") == 0 || countLines(r.logs, "write protection off", "dry_run=true") == 0 {
		t.Error("protection not planned on and off")
	}
	if countLines(r.logs, "deleted records") > 0 || countLines(r.logs, "producers refused") > 0 {
		t.Error("observe mode acted")
	}
	st := r.final
	if len(r.protected.ACLs) != 0 || len(st.ACLs) != 0 || st.ProducerByteRate != 0 || len(st.Ownership) != 0 || !r.firstSegLSO {
		t.Errorf("R4.4: observe mode changed the broker: %+v, log start offsets at first segments: %v", st, r.firstSegLSO)
	}
	if r.finalUsage >= 0.6 {
		t.Errorf("usage did not fall back: %.1f%%", 100*r.finalUsage)
	}
}

// TestEnforceModeAcrossTheBands: enforcing, the same cycle deletes
// through DeleteRecords (the broker's retention check then removes the
// segments), protects the topics when usage reaches 90% (the simulated
// producers are refused) and lifts the protection when usage is back under
// the hysteresis bound, leaving no ACL and an empty claim behind.
func TestEnforceModeAcrossTheBands(t *testing.T) {
	t.Parallel()
	r := runCycle(t, enforcer.Config{Enabled: true})
	if countLines(r.logs, "deleted records", "action=periodic") == 0 ||
		countLines(r.logs, "deleted unexpired records", "action=purge") == 0 {
		t.Error("no deletions performed in the periodic and purge bands")
	}
	if len(r.protected.Refused) == 0 || len(r.protected.ACLs) == 0 {
		t.Errorf("never protected: %+v (peak %.1f%%)", r.protected, 100*r.peak)
	}
	if countLines(r.logs, "producers refused", "TOPIC_AUTHORIZATION_FAILED") == 0 || countLines(r.logs, "producers accepted") == 0 {
		t.Error("the simulated producers were not refused, then accepted")
	}
	st := r.final
	if len(st.ACLs) != 0 || len(st.Refused) != 0 || len(st.Ownership[1].LogDirs) != 0 || st.Ownership[1].Claims() {
		t.Errorf("protection left behind: %+v", st)
	}
	if r.peak >= 0.97 {
		t.Errorf("peak %.1f%% while enforcing", 100*r.peak)
	}
	if countLines(r.logs, "delete records failed") > 0 || countLines(r.logs, "write protection change failed") > 0 {
		t.Error("an action failed against the simulated admin")
	}
}
