package enforcer

import (
	"log/slog"
	"time"
)

// Events: what the enforcer decides and does, typed, for a reader that
// tells a person (the demo) without parsing log text. Each is attached to
// the log record that reports it, under EventKey; it renders as nothing
// (an empty group), so the log reads as before. A handler finds it with
// Event.

// EventKey is the attribute key of an event in a log record.
const EventKey = "event"

// BandChange: a log dir entered a band (logged as "band changed").
type BandChange struct {
	LogDir string
	Band   Band
	// FromBand: the band before ("" at the log dir's first pass).
	FromBand string
	// Usage: the log dir's usage ratio.
	Usage float64
}

// DeletionDone: records deleted from one partition, or planned in observe
// mode (DryRun); Err: the deletion failed.
type DeletionDone struct {
	Deletion
	DryRun bool
	Err    error
}

// ProtectionChange: write protection switched on (On) or off, on one
// topic (strategy acl: its bindings) or for every producer (strategy
// quota: the default producer_byte_rate); planned in observe mode
// (DryRun); Err: the change failed.
type ProtectionChange struct {
	On               bool
	DryRun           bool
	Strategy         string
	Topic            string
	ACLs             []ACL
	ProducerByteRate int64
	Err              error
}

// CordonDone: a log dir appended to its broker's cordoned.log.dirs
// (Cordon) or subtracted from it (KIP-1066, spec R3.8); planned in
// observe mode (DryRun); Err: the change failed.
type CordonDone struct {
	CordonChange
	Cordon bool
	DryRun bool
	Err    error
}

// MoveDone: a partition's move to another log dir of the broker started
// (AlterReplicaLogDirs), or planned in observe mode (DryRun), with the
// copy's expected duration at the throttle (Duration, for the whole
// batch); Err: the broker refused it.
type MoveDone struct {
	Move
	DryRun   bool
	Duration time.Duration
	Err      error
}

// LogValue renders the event as nothing: the record's other attributes
// say the same for the log.
func (BandChange) LogValue() slog.Value { return slog.GroupValue() }

// LogValue renders the event as nothing (see BandChange.LogValue).
func (CordonDone) LogValue() slog.Value { return slog.GroupValue() }

// LogValue renders the event as nothing (see BandChange.LogValue).
func (MoveDone) LogValue() slog.Value { return slog.GroupValue() }

// LogValue renders the event as nothing (see BandChange.LogValue).
func (DeletionDone) LogValue() slog.Value { return slog.GroupValue() }

// LogValue renders the event as nothing (see BandChange.LogValue).
func (ProtectionChange) LogValue() slog.Value { return slog.GroupValue() }

// eventAttr attaches ev to a log record.
func eventAttr(ev slog.LogValuer) slog.Attr { return slog.Any(EventKey, ev) }

// Event returns the event a log record attribute carries (nil: none): a
// BandChange, DeletionDone, ProtectionChange, CordonDone or MoveDone. Call it on the attribute
// as the record holds it, before resolving its value.
func Event(a slog.Attr) any {
	if a.Key != EventKey || a.Value.Kind() != slog.KindLogValuer {
		return nil
	}
	switch ev := a.Value.Any().(type) {
	case BandChange, DeletionDone, ProtectionChange, CordonDone, MoveDone:
		return ev
	}
	return nil
}
