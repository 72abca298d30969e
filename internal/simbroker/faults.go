package simbroker

import (
	"context"
	"errors"
	"fmt"
)

// CallPhase is when a fault hook is asked about a call: before it takes
// effect, or after (it took effect; an error then is a reply lost, a
// timeout after the broker acted).
type CallPhase int

// Call phases.
const (
	Before CallPhase = iota
	After
)

func (p CallPhase) String() string {
	if p == Before {
		return "before"
	}
	return "after"
}

// Faults decides the fate of the simulated cluster's admin calls: every
// ClusterAdmin method asks it once before taking effect and once after.
// The zero value injects nothing.
type Faults struct {
	// Hook, when set, is asked about each call: a non-nil error fails the
	// call (before: nothing happened; after: it happened and the caller is
	// told it failed).
	Hook func(who, method string, phase CallPhase) error
}

// ErrInjected marks an error the fault injector made up; a timeout wraps
// context.DeadlineExceeded too.
var ErrInjected = errors.New("injected fault")

// Injected is a made-up error for method: a broker error, or (timeout) a
// deadline that passed.
func Injected(method string, phase CallPhase, timeout bool) error {
	if timeout {
		return fmt.Errorf("%s: %w (%s): %w", method, ErrInjected, phase, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %w (%s): REQUEST_TIMED_OUT or NOT_CONTROLLER", method, ErrInjected, phase)
}

func (f *Faults) before(ctx context.Context, who, method string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f == nil || f.Hook == nil {
		return nil
	}
	return f.Hook(who, method, Before)
}

func (f *Faults) after(who, method string) error {
	if f == nil || f.Hook == nil {
		return nil
	}
	return f.Hook(who, method, After)
}
