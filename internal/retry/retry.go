// Package retry is the loop the long-lived parts share when a call to the
// cluster fails: wait longer after each failure in a row (capped
// exponential backoff), and log the failure when it starts, then every
// tenth time, and the recovery once.
package retry

import (
	"context"
	"log/slog"
	"time"
)

// Backoff is a capped exponential backoff: First after the first failure,
// doubling after each further failure, never more than Max.
type Backoff struct {
	First, Max time.Duration
}

// Delay is the wait after failures failures in a row.
func (b Backoff) Delay(failures int) time.Duration {
	d := b.First
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Streak counts the failures in a row. The zero value is no failure.
type Streak struct{ n int }

// Fail records a failure. It returns the failures in a row and whether
// this one is to be logged: the first, then every tenth.
func (s *Streak) Fail() (failures int, log bool) {
	s.n++
	return s.n, s.n == 1 || s.n%10 == 0
}

// Succeed ends the streak and returns how many failures it had.
func (s *Streak) Succeed() (failures int) {
	failures, s.n = s.n, 0
	return failures
}

// Loop runs a call now, then Interval after each success, and
// Backoff.Delay(failures) after each failure.
type Loop struct {
	Interval time.Duration
	Backoff  Backoff
	Logger   *slog.Logger
	// Failed and Recovered are the log messages: Failed (a warning, with
	// err and failures) when failures start and every tenth time,
	// Recovered (info, with failures) on the first success after them.
	Failed, Recovered string
}

// Run calls call until ctx ends, then returns nil. A call that fails
// because ctx ended is not counted.
func (l Loop) Run(ctx context.Context, call func(context.Context) error) error {
	var streak Streak
	delay := time.Duration(0)
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		if err := call(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures, log := streak.Fail()
			if log {
				l.Logger.Warn(l.Failed, "err", err, "failures", failures)
			}
			delay = l.Backoff.Delay(failures)
			continue
		}
		if failures := streak.Succeed(); failures > 0 {
			l.Logger.Info(l.Recovered, "failures", failures)
		}
		delay = l.Interval
	}
}
