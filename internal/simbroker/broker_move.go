package simbroker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// What the mover (moves within a broker, spec R3.8) asks of the single
// simulated broker: its log dirs' identity, the broker's move throttle
// (replica.alter.log.dirs.io.max.bytes.per.second), the throttle claims
// in the ownership topic, and AlterReplicaLogDirs. The simulated broker
// does not copy replicas: it refuses every move (REPLICA_NOT_AVAILABLE),
// so the demo shows the moves the guard would make in observe mode and
// runs --enforce with moves off.

var (
	_ enforcer.MoveAdmin     = (*Admin)(nil)
	_ enforcer.ThrottleStore = (*Admin)(nil)
	_ enforcer.MoveEvidence  = (*Evidence)(nil)
)

// spareDirectoryID is the spare log dir's directory.id.
const spareDirectoryID = "c3BhcmUtbG9nLWRpci0xAA"

// ErrMoveUnsupported: the simulated broker does not move replicas
// between its log dirs.
var ErrMoveUnsupported = fmt.Errorf("REPLICA_NOT_AVAILABLE: the simulated broker does not move replicas between log dirs")

func (e *Evidence) IdentityEvidence(ctx context.Context, node int32) (agent.IdentityEvidence, error) {
	id, err := e.ClusterID(ctx)
	if err != nil {
		return agent.IdentityEvidence{}, err
	}
	dirs, err := e.BrokerLogDirs(ctx, node)
	if err != nil {
		return agent.IdentityEvidence{}, err
	}
	return agent.IdentityEvidence{ClusterID: id, NodeID: node, LogDirs: dirs}, nil
}

func (a *Admin) Move(ctx context.Context, broker int32, moves []enforcer.Move) (map[string]error, error) {
	return call(ctx, a, func(b *Broker) (map[string]error, error) {
		if broker != b.cfg.NodeID {
			return nil, fmt.Errorf("broker %d: %w", broker, ErrNoBroker)
		}
		out := make(map[string]error, len(moves))
		for _, m := range moves {
			out[m.Topic+"/"+strconv.Itoa(int(m.Partition))] = ErrMoveUnsupported
		}
		return out, nil
	})
}

func (a *Admin) Throttle(ctx context.Context, broker int32) (string, bool, error) {
	type v struct {
		s   string
		set bool
	}
	r, err := call(ctx, a, func(b *Broker) (v, error) {
		if broker != b.cfg.NodeID {
			return v{}, fmt.Errorf("broker %d: %w", broker, ErrNoBroker)
		}
		if b.throttle == nil {
			return v{}, nil
		}
		return v{*b.throttle, true}, nil
	})
	return r.s, r.set, err
}

func (a *Admin) SetThrottle(ctx context.Context, broker int32, value string, set bool) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		if broker != b.cfg.NodeID {
			return struct{}{}, fmt.Errorf("broker %d: %w", broker, ErrNoBroker)
		}
		b.throttle = nil
		if set {
			b.throttle = &value
		}
		return struct{}{}, nil
	})
	return err
}

// StoreThrottle writes a broker's throttle claim, as the topic holds it.
func (a *Admin) StoreThrottle(ctx context.Context, c ledger.ThrottleClaim) error {
	data, err := ledger.EncodeThrottle(c)
	if err != nil {
		return err
	}
	_, err = call(ctx, a, func(b *Broker) (struct{}, error) {
		b.ledgerLost = false
		ledger.ApplyRecord(b.records, []byte(ledger.ThrottleKey(c.BrokerID)), data)
		return struct{}{}, nil
	})
	return err
}

// DeleteThrottle removes it (a tombstone).
func (a *Admin) DeleteThrottle(ctx context.Context, broker int32) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		ledger.ApplyRecord(b.records, []byte(ledger.ThrottleKey(broker)), nil)
		return struct{}{}, nil
	})
	return err
}
