package enforcer

import (
	"fmt"
)

// ReliefConfig is the `enforcer.relief` section: the lossless rungs of
// the ladder (spec R3.8) the agent runs itself.
type ReliefConfig struct {
	// Move: move partitions between the broker's log dirs (JBOD) before
	// anything unexpired is purged (default true; false stops new moves,
	// and the throttle is restored once the moves in flight are done).
	Move *bool `yaml:"move"`
	// MoveFromPercent: a log dir at or over this usage is relieved by
	// moves (default: the first purging band's lower bound minus 10).
	MoveFromPercent float64 `yaml:"moveFromPercent"`
	// MoveTargetPercent: moves stop once the source would be under it; a
	// destination takes copies only while it stays under it (default
	// MoveFromPercent minus 5).
	MoveTargetPercent float64 `yaml:"moveTargetPercent"`
	// MoveBytesPerSecond: the broker's
	// replica.alter.log.dirs.io.max.bytes.per.second while moves run
	// (default 20 MiB/s).
	MoveBytesPerSecond int64 `yaml:"moveBytesPerSecond"`
	// MoveColdBytesPerSecond: a partition appended to at or under this
	// rate is cold and moves first (default 0: no appends seen).
	MoveColdBytesPerSecond float64 `yaml:"moveColdBytesPerSecond"`
	// MaxMoves: partitions one pass starts moving (default 20).
	MaxMoves int `yaml:"maxMoves"`
}

// DefaultMoveBytesPerSecond is the default move throttle.
const DefaultMoveBytesPerSecond = 20 << 20

// MoveEnabled reports whether moves within the broker are on.
func (c ReliefConfig) MoveEnabled() bool { return c.Move == nil || *c.Move }

// withDefaults fills the unset fields.
func (c ReliefConfig) withDefaults() ReliefConfig {
	if c.MoveBytesPerSecond == 0 {
		c.MoveBytesPerSecond = DefaultMoveBytesPerSecond
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = 20
	}
	return c
}

// validate checks the section.
func (c ReliefConfig) validate() error {
	switch {
	case c.MoveFromPercent < 0 || c.MoveFromPercent > 100:
		return fmt.Errorf("enforcer.relief.moveFromPercent: %v is not 0-100", c.MoveFromPercent)
	case c.MoveTargetPercent < 0 || c.MoveTargetPercent > 100:
		return fmt.Errorf("enforcer.relief.moveTargetPercent: %v is not 0-100", c.MoveTargetPercent)
	case c.MoveFromPercent > 0 && c.MoveTargetPercent > c.MoveFromPercent:
		return fmt.Errorf("enforcer.relief.moveTargetPercent: %v is above moveFromPercent %v", c.MoveTargetPercent, c.MoveFromPercent)
	case c.MoveBytesPerSecond < 0:
		return fmt.Errorf("enforcer.relief.moveBytesPerSecond: %d is negative", c.MoveBytesPerSecond)
	case c.MoveColdBytesPerSecond < 0:
		return fmt.Errorf("enforcer.relief.moveColdBytesPerSecond: %v is negative", c.MoveColdBytesPerSecond)
	case c.MaxMoves < 0:
		return fmt.Errorf("enforcer.relief.maxMoves: %d is negative", c.MaxMoves)
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
func (c ReliefConfig) policy(p Profile) MovePolicy {
	c = c.withDefaults()
	at := purgeAt(p)
	from := c.MoveFromPercent / 100
	if from == 0 {
		from = max(at-0.10, 0)
	}
	target := c.MoveTargetPercent / 100
	if target == 0 {
		target = max(from-0.05, 0)
	}
	if at == 0 {
		return MovePolicy{} // no rate: PlanMoves plans nothing
	}
	return MovePolicy{From: from, Target: target, PurgeAt: at, RateBytesPerSecond: c.MoveBytesPerSecond,
		ColdBytesPerSecond: c.MoveColdBytesPerSecond, MaxMoves: c.MaxMoves}
}
