package simbroker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Admin is the simulated broker's admin API: enforcer.Admin answered from
// the broker's state, as the broker would answer it (per-partition
// errors included). Every method is one call of call(), which checks the
// context and holds the broker's lock: a new method of enforcer.Admin is
// one more function of that shape, its semantics in the broker's methods.
type Admin struct{ b *Broker }

var _ enforcer.Admin = (*Admin)(nil)

// call runs f on the broker under its lock, unless ctx has ended.
func call[T any](ctx context.Context, a *Admin, f func(b *Broker) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return f(a.b)
}

// Offsets answers ListOffsets: partitions the broker does not host are
// absent from the answer, as the adapter leaves them.
func (a *Admin) Offsets(ctx context.Context, parts []enforcer.TopicPartition) (map[enforcer.TopicPartition]enforcer.Offsets, error) {
	return call(ctx, a, func(b *Broker) (map[enforcer.TopicPartition]enforcer.Offsets, error) {
		out := make(map[enforcer.TopicPartition]enforcer.Offsets, len(parts))
		for _, tp := range parts {
			if p := b.partition(tp.Topic, tp.Partition); p != nil {
				out[tp] = enforcer.Offsets{LogStart: p.log.LogStartOffset(), HighWatermark: p.log.LogEndOffset()}
			}
		}
		return out, nil
	})
}

// DeleteRecords moves log start offsets, each partition with its own
// result (Broker.deleteRecords).
func (a *Admin) DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error) {
	return call(ctx, a, func(b *Broker) (map[int32]error, error) {
		out := make(map[int32]error, len(offsets))
		for p, off := range offsets {
			out[p] = b.deleteRecords(topic, p, off)
		}
		return out, nil
	})
}

func (a *Admin) TopicACLs(ctx context.Context) ([]ledger.ACL, error) {
	return call(ctx, a, func(b *Broker) ([]ledger.ACL, error) {
		return slices.Collect(maps.Keys(b.acls)), nil
	})
}

func (a *Admin) CreateACLs(ctx context.Context, acls []ledger.ACL) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		for _, x := range acls {
			b.acls[literal(x)] = true
		}
		return struct{}{}, nil
	})
	return err
}

func (a *Admin) DeleteACLs(ctx context.Context, acls []ledger.ACL) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		for _, x := range acls {
			delete(b.acls, literal(x))
		}
		return struct{}{}, nil
	})
	return err
}

func (a *Admin) DefaultProducerQuota(ctx context.Context) (int64, error) {
	return call(ctx, a, func(b *Broker) (int64, error) { return b.quota, nil })
}

func (a *Admin) SetDefaultProducerQuota(ctx context.Context, rate int64) error {
	_, err := call(ctx, a, func(b *Broker) (int64, error) { return b.setQuota(rate) })
	return err
}

func (a *Admin) RemoveDefaultProducerQuota(ctx context.Context) error {
	_, err := call(ctx, a, func(b *Broker) (int64, error) { return b.setQuota(0) })
	return err
}

// LoadRecords reads every agent's protection record and lift (the broker
// keeps the ownership topic in memory).
func (a *Admin) LoadRecords(ctx context.Context) (ledger.Records, error) {
	return call(ctx, a, func(b *Broker) (ledger.Records, error) {
		if b.ledgerLost {
			return ledger.NewRecords(), fmt.Errorf("%w: simulated", ledger.ErrLedgerMissing)
		}
		return b.records.Clone(), nil
	})
}

// StoreRecord writes an agent's record, as the topic holds it (encoded).
func (a *Admin) StoreRecord(ctx context.Context, r ledger.Record) error {
	data, err := ledger.EncodeRecord(r)
	if err != nil {
		return err
	}
	_, err = call(ctx, a, func(b *Broker) (struct{}, error) {
		b.ledgerLost = false // a write creates the topic again
		ledger.ApplyRecord(b.records, []byte(ledger.RecordKey(r.BrokerID)), data)
		return struct{}{}, nil
	})
	return err
}

// StoreLift writes a lift of an agent's claims.
func (a *Admin) StoreLift(ctx context.Context, l ledger.Lift) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		b.ledgerLost = false
		l.Topics = slices.Clone(l.Topics)
		b.records.Lifts[l.BrokerID] = l
		return struct{}{}, nil
	})
	return err
}

// LiveBrokers: the simulated cluster is this one broker.
func (a *Admin) LiveBrokers(ctx context.Context) ([]int32, error) {
	return call(ctx, a, func(b *Broker) ([]int32, error) { return []int32{b.cfg.NodeID}, nil })
}

// AllowEveryoneIfNoACLFound: the simulated broker allows nothing an ACL
// does not (Kafka's default), so protection adds no ALLOW.
func (a *Admin) AllowEveryoneIfNoACLFound(ctx context.Context) (ledger.AllowEveryone, error) {
	return call(ctx, a, func(*Broker) (ledger.AllowEveryone, error) { return ledger.AllowEveryoneFalse, nil })
}

// TopicConfigOverrides reads key as set on each topic through the admin
// API (the simulated broker's topics have no other overrides).
func (a *Admin) TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error) {
	return call(ctx, a, func(b *Broker) (map[string]*string, error) {
		out := make(map[string]*string, len(topics))
		for _, t := range topics {
			out[t] = nil
			if v, ok := b.overrides[t][key]; ok {
				out[t] = &v
			}
		}
		return out, nil
	})
}

// AlterTopicConfig sets (or, for nil, deletes) a topic's override. The
// simulated broker keeps it and has no tiered topics to apply it to.
func (a *Admin) AlterTopicConfig(ctx context.Context, topic, key string, value *string) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		if value == nil {
			delete(b.overrides[topic], key)
			return struct{}{}, nil
		}
		if b.overrides[topic] == nil {
			b.overrides[topic] = map[string]string{}
		}
		b.overrides[topic][key] = *value
		return struct{}{}, nil
	})
	return err
}

// DeleteOwnershipTopic deletes the ownership topic and every record in it:
// reads answer ledger.ErrLedgerMissing until the next write creates it
// again, empty (a fault of spec R8.7).
func (b *Broker) DeleteOwnershipTopic() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records, b.ledgerLost = ledger.NewRecords(), true
}

// WriteOwnershipValue writes a raw value under key to the ownership topic
// (garbage, or a newer record version: a fault of spec R8.7).
func (b *Broker) WriteOwnershipValue(key string, value []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ledger.ApplyRecord(b.records, []byte(key), value)
}
