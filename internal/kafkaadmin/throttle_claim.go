package kafkaadmin

import (
	"context"
	"fmt"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// StoreThrottle writes a broker's throttle claim to the ownership topic
// (acks=all; key ledger.ThrottleKey).
func (e *Enforce) StoreThrottle(ctx context.Context, c ledger.ThrottleClaim) error {
	value, err := ledger.EncodeThrottle(c)
	if err != nil {
		return fmt.Errorf("encode throttle claim: %w", err)
	}
	return e.produce(ctx, ledger.ThrottleKey(c.BrokerID), value)
}

// DeleteThrottle removes a broker's throttle claim (a tombstone), once
// the operator's value is back.
func (e *Enforce) DeleteThrottle(ctx context.Context, broker int32) error {
	return e.produce(ctx, ledger.ThrottleKey(broker), nil)
}

// LogDirMoves is the move adapter over the same connection (the
// operator's commands restore throttle claims with it).
func (e *Enforce) LogDirMoves() *LogDirMoves { return &LogDirMoves{src: e.src} }

// StoreReassign writes a replication throttle claim (acks=all; key
// ledger.ReassignKey).
func (e *Enforce) StoreReassign(ctx context.Context, c ledger.ReassignClaim) error {
	value, err := ledger.EncodeReassign(c)
	if err != nil {
		return fmt.Errorf("encode replication throttle claim: %w", err)
	}
	return e.produce(ctx, ledger.ReassignKey(c.Owner), value)
}

// DeleteReassign removes owner's replication throttle claim (a
// tombstone), once every value is restored.
func (e *Enforce) DeleteReassign(ctx context.Context, owner string) error {
	return e.produce(ctx, ledger.ReassignKey(owner), nil)
}

// Relief is the relief adapter over the same connection (the operator's
// commands restore replication throttle claims with it).
func (e *Enforce) Relief() *Relief { return &Relief{src: e.src} }
