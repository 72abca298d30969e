package enforcer

import (
	"fmt"
)

// MoveConfig is `enforcer.relief.move`: moves of partitions between the
// broker's log dirs (JBOD) before anything unexpired is purged.
type MoveConfig struct {
	// Enabled: move partitions between the broker's log dirs (JBOD)
	// before anything unexpired is purged (default true; false stops new
	// moves, and the throttle is restored once the moves in flight are
	// done).
	Enabled *bool `yaml:"enabled"`
	// MoveFromPercent: a log dir at or over this usage is relieved by
	// moves (default: the first purging band's lower bound minus 10).
	FromPercent float64 `yaml:"fromPercent"`
	// MoveTargetPercent: moves stop once the source would be under it; a
	// destination takes copies only while it stays under it (default
	// MoveFromPercent minus 5).
	TargetPercent float64 `yaml:"targetPercent"`
	// MoveBytesPerSecond: the broker's
	// replica.alter.log.dirs.io.max.bytes.per.second while moves run
	// (default 20 MiB/s).
	BytesPerSecond int64 `yaml:"bytesPerSecond"`
	// MoveColdBytesPerSecond: a partition appended to at or under this
	// rate is cold and moves first (default 0: no appends seen).
	ColdBytesPerSecond float64 `yaml:"coldBytesPerSecond"`
	// MaxMoves: partitions one pass starts moving (default 20).
	MaxMoves int `yaml:"maxMoves"`
}

// DefaultMoveBytesPerSecond is the default move throttle.
const DefaultMoveBytesPerSecond = 20 << 20

// MoveEnabled reports whether moves within the broker are on.
func (c MoveConfig) MoveEnabled() bool { return c.Enabled == nil || *c.Enabled }

// withDefaults fills the unset fields.
func (c MoveConfig) withDefaults() MoveConfig {
	if c.BytesPerSecond == 0 {
		c.BytesPerSecond = DefaultMoveBytesPerSecond
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = 20
	}
	return c
}

// validate checks the section.
func (c MoveConfig) validate() error {
	switch {
	case c.FromPercent < 0 || c.FromPercent > 100:
		return fmt.Errorf("enforcer.relief.move.fromPercent: %v is not 0-100", c.FromPercent)
	case c.TargetPercent < 0 || c.TargetPercent > 100:
		return fmt.Errorf("enforcer.relief.move.targetPercent: %v is not 0-100", c.TargetPercent)
	case c.FromPercent > 0 && c.TargetPercent > c.FromPercent:
		return fmt.Errorf("enforcer.relief.move.targetPercent: %v is above fromPercent %v", c.TargetPercent, c.FromPercent)
	case c.BytesPerSecond < 0:
		return fmt.Errorf("enforcer.relief.move.bytesPerSecond: %d is negative", c.BytesPerSecond)
	case c.ColdBytesPerSecond < 0:
		return fmt.Errorf("enforcer.relief.move.coldBytesPerSecond: %v is negative", c.ColdBytesPerSecond)
	case c.MaxMoves < 0:
		return fmt.Errorf("enforcer.relief.move.maxMoves: %d is negative", c.MaxMoves)
	}
	return nil
}

// purgeAt is the lower bound of the profile's first band that deletes
// unexpired data (purge, purge_fraction) or protects; 0 when none (no
// disk bands: no moves).
func purgeAt(p Profile) float64 {
	for _, b := range p.Bands {
		if b.From > 0 && (b.Action == ActionPurge || b.Action == ActionPurgeFraction || b.Action == ActionProtect) {
			return b.From
		}
	}
	return 0
}

// policy is the planner's policy for the profile.
func (c MoveConfig) policy(p Profile) MovePolicy {
	c = c.withDefaults()
	at := purgeAt(p)
	from := c.FromPercent / 100
	if from == 0 {
		from = max(at-0.10, 0)
	}
	target := c.TargetPercent / 100
	if target == 0 {
		target = max(from-0.05, 0)
	}
	if at == 0 {
		return MovePolicy{} // no rate: PlanMoves plans nothing
	}
	return MovePolicy{From: from, Target: target, PurgeAt: at, RateBytesPerSecond: c.BytesPerSecond,
		ColdBytesPerSecond: c.ColdBytesPerSecond, MaxMoves: c.MaxMoves}
}
