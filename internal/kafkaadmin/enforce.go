package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// Enforce is the enforcer's admin API on Sarama (it implements
// enforcer.Admin). It holds no Sarama handle: every method takes the
// connection from its Link at the call, and answers ErrNotConnected
// without one, so a method added later is covered as well. Every RPC's
// per-item error codes are checked: a nil RPC error is not success.
type Enforce struct {
	src            connSource
	ownershipTopic string
	// owned is the Link NewEnforce made; Close closes it.
	owned *Link
	// writing holds the one ownership record write in flight (capacity 1):
	// writes go out in order, and a caller waits for its turn only as long
	// as its context allows.
	writing chan struct{}
	// topicReady: the ownership topic is known to exist.
	topicReady atomic.Bool
	// ledger: the ownership topic as last read (incremental reads).
	ledger ledgerCache
}

var _ enforcer.Admin = (*Enforce)(nil)

// Enforce returns the enforcer's admin API over the link; ownershipTopic
// is the compacted topic holding each agent's protection record.
func (l *Link) Enforce(ownershipTopic string) *Enforce {
	return &Enforce{src: l, ownershipTopic: ownershipTopic, writing: make(chan struct{}, 1)}
}

// NewEnforce connects to the cluster at once with a Sarama configuration
// of the caller's (tests); Close releases the connection. cfg should
// authenticate as a super user (the ACL calls and DeleteRecords need it).
func NewEnforce(addrs []string, cfg *sarama.Config, ownershipTopic string) (*Enforce, error) {
	l := &Link{attempted: make(chan struct{}), up: make(chan struct{}),
		dial: func(Config) (*conn, error) { return dialSarama(addrs, cfg) }}
	if err := l.Connect(); err != nil {
		return nil, err
	}
	e := l.Enforce(ownershipTopic)
	e.owned = l
	return e, nil
}

// Close releases the connection NewEnforce opened. For an Enforce from
// Link.Enforce it does nothing: the Link owns the connection.
func (e *Enforce) Close() error {
	if e.owned == nil {
		return nil
	}
	return e.owned.Close()
}

// Offsets asks each partition's leader for the log start offset and the
// high watermark (ListOffsets earliest and latest, read_uncommitted).
func (e *Enforce) Offsets(ctx context.Context, parts []enforcer.TopicPartition) (map[enforcer.TopicPartition]enforcer.Offsets, error) {
	c, err := e.src.conn()
	if err != nil {
		return nil, err
	}
	out, stale, err := e.offsets(ctx, c, parts)
	if err != nil || len(stale) == 0 {
		return out, err
	}
	// Leaders moved (a reassignment, a failover) since the client's last
	// metadata: refresh those topics and ask their new leaders once.
	var topics []string
	for _, tp := range stale {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	err = c.client.RefreshMetadata(topics...)
	if err == nil {
		var again map[enforcer.TopicPartition]enforcer.Offsets
		if again, _, err = e.offsets(ctx, c, stale); err == nil {
			maps.Copy(out, again)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("list offsets: no leader answered for %d partition(s): %v", len(stale), err)
	}
	return out, nil
}

// offsets asks each partition's leader as the client knows it; stale
// lists the partitions whose leader it does not know or that answered
// NOT_LEADER_OR_FOLLOWER.
func (e *Enforce) offsets(ctx context.Context, c *conn, parts []enforcer.TopicPartition) (map[enforcer.TopicPartition]enforcer.Offsets, []enforcer.TopicPartition, error) {
	var stale []enforcer.TopicPartition
	byLeader := map[*sarama.Broker][]enforcer.TopicPartition{}
	var errs []error
	for _, tp := range parts {
		b, err := c.client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			errs = append(errs, fmt.Errorf("leader of %s-%d: %w", tp.Topic, tp.Partition, err))
			stale = append(stale, tp)
			continue
		}
		byLeader[b] = append(byLeader[b], tp)
	}
	out := make(map[enforcer.TopicPartition]enforcer.Offsets, len(parts))
	for b, tps := range byLeader {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var res [2]*sarama.OffsetResponse
		for i, at := range []int64{sarama.OffsetOldest, sarama.OffsetNewest} {
			req := sarama.NewOffsetRequest(c.client.Config().Version)
			for _, tp := range tps {
				req.AddBlock(tp.Topic, tp.Partition, at, 1)
			}
			r, err := b.GetAvailableOffsets(req)
			if err != nil {
				// One unreachable leader holds only its own partitions:
				// they are left out of the answer (spec R8.4).
				errs = append(errs, fmt.Errorf("list offsets on broker %d: %w", b.ID(), err))
				break
			}
			res[i] = r
		}
		if res[0] == nil || res[1] == nil {
			continue
		}
		for _, tp := range tps {
			lo, hi := res[0].GetBlock(tp.Topic, tp.Partition), res[1].GetBlock(tp.Topic, tp.Partition)
			if lo == nil || hi == nil {
				errs = append(errs, fmt.Errorf("list offsets %s-%d: no answer", tp.Topic, tp.Partition))
				continue
			}
			if !errors.Is(lo.Err, sarama.ErrNoError) || !errors.Is(hi.Err, sarama.ErrNoError) {
				errs = append(errs, fmt.Errorf("list offsets %s-%d: %w", tp.Topic, tp.Partition, errors.Join(kerr(lo.Err), kerr(hi.Err))))
				if errors.Is(lo.Err, sarama.ErrNotLeaderForPartition) || errors.Is(hi.Err, sarama.ErrNotLeaderForPartition) {
					stale = append(stale, tp)
				}
				continue
			}
			out[tp] = enforcer.Offsets{LogStart: lo.Offset, HighWatermark: hi.Offset}
		}
	}
	if len(out) == 0 && len(errs) > 0 && len(stale) == 0 {
		return nil, nil, errors.Join(errs...)
	}
	// Partitions with an error are simply absent: the enforcer leaves them.
	return out, stale, nil
}

func kerr(k sarama.KError) error {
	if errors.Is(k, sarama.ErrNoError) {
		return nil
	}
	return k
}

// DeleteRecords sends DeleteRecords to each partition's leader and returns
// every partition's own result.
func (e *Enforce) DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error) {
	c, err := e.src.conn()
	if err != nil {
		return nil, err
	}
	out := make(map[int32]error, len(offsets))
	byLeader := map[*sarama.Broker]map[int32]int64{}
	for p, off := range offsets {
		b, err := c.client.Leader(topic, p)
		if err != nil {
			out[p] = fmt.Errorf("leader: %w", err)
			continue
		}
		if byLeader[b] == nil {
			byLeader[b] = map[int32]int64{}
		}
		byLeader[b][p] = off
	}
	timeout := c.client.Config().Admin.Timeout
	for b, offs := range byLeader {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req := &sarama.DeleteRecordsRequest{
			Version: 1,
			Topics:  map[string]*sarama.DeleteRecordsRequestTopic{topic: {PartitionOffsets: offs}},
			Timeout: timeout,
		}
		if c.client.Config().Version.IsAtLeast(sarama.V2_6_0_0) {
			req.Version = 2
		}
		rsp, err := b.DeleteRecords(req)
		if err != nil {
			for p := range offs {
				out[p] = fmt.Errorf("delete records on broker %d: %w", b.ID(), err)
			}
			continue
		}
		rt := rsp.Topics[topic]
		for p := range offs {
			var rp *sarama.DeleteRecordsResponsePartition
			if rt != nil {
				rp = rt.Partitions[p]
			}
			switch {
			case rp == nil:
				out[p] = errors.New("no result for the partition")
			case !errors.Is(rp.Err, sarama.ErrNoError):
				out[p] = rp.Err
			default:
				out[p] = nil
			}
		}
	}
	return out, nil
}

// viaController runs a request that the metadata's controller answers
// (ACLs, client quotas, topic descriptions). When an attempt fails on the
// connection it asks the cluster again which broker that is and retries,
// up to controllerAttempts in all: the cached "controller" may be a broker
// that stopped, and KRaft names a random live broker, which for a session
// timeout after a shutdown may still be the stopped one (a rolling
// restart). A Kafka error code is an answer, not a connection failure: it
// is returned as is.
func (c *conn) viaController(f func() error) error {
	var err error
	for attempt := range controllerAttempts {
		if attempt > 0 {
			// Best effort: the refresh itself may meet the stopped
			// broker; the next attempt may still reach a live one (a
			// request any broker answers goes to a random one).
			_, _ = c.client.RefreshController()
		}
		err = f()
		var kerr sarama.KError
		if err == nil || errors.As(err, &kerr) {
			return err
		}
	}
	return err
}

// controllerAttempts bounds viaController: with one stopped broker of
// three still named, all attempts land on it about once in 240 calls.
const controllerAttempts = 5
