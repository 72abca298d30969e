package simbroker

import (
	"log/slog"
	"math"
	"time"
)

// Phase is where a Scenario is in its cycle.
type Phase string

// Scenario phases.
const (
	PhaseCalm Phase = "calm" // only the steady producers write
	PhaseFill Phase = "fill" // the burst: one topic written faster and faster
	PhaseEbb  Phase = "ebb"  // the burst is over; retention reclaims its space
)

// Scenario drives a log dir's usage up through the bands and lets it fall
// back, in cycles. Calm (FirstCalm the first time, then Calm); then a
// burst of writes to Topic that grows faster and faster (StartRate,
// doubling every Doubling, up to MaxRate) and slows as usage nears Peak;
// at Peak, when its producers are refused (write protection: the client
// gives up), or after MaxFill, the burst stops and the topic's own
// retention reclaims the space; once usage is under Low, calm again. Usage is the guard's own figure, the log dir's
// usage ratio; rates are fractions of Capacity per second. A Scenario is
// used by one goroutine.
type Scenario struct {
	Topic              string
	Capacity           uint64
	Usage              func() (ratio float64, ok bool)
	Peak, Low          float64
	StartRate, MaxRate float64
	Doubling, MaxFill  time.Duration
	FirstCalm, Calm    time.Duration
	Logger             *slog.Logger

	phase   Phase
	since   time.Time
	calmFor time.Duration
	cycle   int // bursts so far
}

// slowdown is how far under Peak (plus a margin of a sixth of it) the
// burst starts slowing down: the rate falls with the headroom left, so
// every band above 80% lasts a few seconds, and usage meets Peak without
// overshooting far although the guard's figure lags the writes.
const slowdown = 0.15

// Rate is the burst topic's extra write rate at now, in bytes per second;
// refused says whether the topic's producers are refused now.
func (s *Scenario) Rate(now time.Time, refused bool) float64 {
	u, ok := s.Usage()
	switch {
	case s.phase == "":
		s.enter(PhaseCalm, now, u, s.FirstCalm, "")
	case s.phase == PhaseCalm && now.Sub(s.since) >= s.calmFor:
		s.enter(PhaseFill, now, u, 0, "")
	case s.phase == PhaseFill && ok && u >= s.Peak:
		s.enter(PhaseEbb, now, u, 0, StopPeak)
	case s.phase == PhaseFill && refused:
		s.enter(PhaseEbb, now, u, 0, StopRefused)
	case s.phase == PhaseFill && now.Sub(s.since) >= s.MaxFill:
		s.enter(PhaseEbb, now, u, 0, StopMaxFill)
	case s.phase == PhaseEbb && ok && u < s.Low:
		s.enter(PhaseCalm, now, u, s.Calm, "")
	}
	if s.phase != PhaseFill {
		return 0
	}
	r := min(s.MaxRate, s.StartRate*math.Exp2(now.Sub(s.since).Seconds()/s.Doubling.Seconds()))
	if ok {
		r *= min(max((s.Peak+slowdown/6-u)/slowdown, 0.1), 1)
	}
	return r * float64(s.Capacity)
}

// Phase is the current phase.
func (s *Scenario) Phase() Phase { return s.phase }

// Why a burst stops (the "stopped" attribute of the ebb phase's record).
const (
	StopPeak    = "peak"     // usage reached Peak
	StopRefused = "refused"  // write protection refused the producers
	StopMaxFill = "max_fill" // the guard held usage under Peak for MaxFill
)

func (s *Scenario) enter(p Phase, now time.Time, usage float64, calm time.Duration, stopped string) {
	s.phase, s.since, s.calmFor = p, now, calm
	if p == PhaseFill {
		s.cycle++
	}
	attrs := []any{"phase", p, "cycle", s.cycle, "topic", s.Topic, "usage_percent", math.Round(1000*usage) / 10}
	switch p {
	case PhaseCalm:
		attrs = append(attrs, "next_fill_in", calm, "low_percent", math.Round(1000*s.Low)/10)
	case PhaseFill:
		attrs = append(attrs, "peak_percent", math.Round(1000*s.Peak)/10)
	case PhaseEbb:
		attrs = append(attrs, "stopped", stopped)
	}
	ev := PhaseChange{Phase: p, Cycle: s.cycle, Topic: s.Topic, Usage: usage, Peak: s.Peak, Low: s.Low, NextFill: calm, Stopped: stopped}
	s.Logger.Info("scenario phase", append(attrs, slog.Any(EventKey, ev))...)
}
