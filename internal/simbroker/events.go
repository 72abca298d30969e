package simbroker

import (
	"log/slog"
	"time"
)

// Events of the simulated broker and its scenario, typed for the demo's
// narration, attached to the log record that reports each under EventKey
// (as enforcer's events: they render as nothing in the log).

// EventKey is the attribute key of an event in a log record.
const EventKey = "event"

// PhaseChange: the scenario entered a phase.
type PhaseChange struct {
	Phase Phase
	Cycle int
	Topic string
	// Usage, Peak, Low: ratios (the usage now, the scenario's bounds).
	Usage, Peak, Low float64
	// NextFill: the calm phase's length.
	NextFill time.Duration
	// Stopped: why a burst stopped (StopPeak, StopRefused, StopMaxFill).
	Stopped string
}

// ProducersChange: the topic's simulated producers were refused (Refused:
// the error) or accepted again (Refused "").
type ProducersChange struct {
	Topic   string
	Refused string
}

// LogValue renders the event as nothing: the record's other attributes
// say the same for the log.
func (PhaseChange) LogValue() slog.Value { return slog.GroupValue() }

// LogValue renders the event as nothing (see PhaseChange.LogValue).
func (ProducersChange) LogValue() slog.Value { return slog.GroupValue() }

// Event returns the event a log record attribute carries (nil: none): a
// PhaseChange or ProducersChange. Call it before resolving the value.
func Event(a slog.Attr) any {
	if a.Key != EventKey || a.Value.Kind() != slog.KindLogValuer {
		return nil
	}
	switch ev := a.Value.Any().(type) {
	case PhaseChange, ProducersChange:
		return ev
	}
	return nil
}
