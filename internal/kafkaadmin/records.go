package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The ownership topic is compacted, one partition (a total order of
// writes, which the lift protocol relies on), replicated min(3, brokers)
// times. Its keys and values are the ledger's (enforcer/ledger):
// "broker-<id>" holds that broker agent's record, "lift-broker-<id>" the
// latest lift of its claims. Agents read it from where their last read
// ended: it holds one live record per broker and key.

// ledgerCache is what the last read of the ownership topic left: the
// records and the offset to read on from, so a pass reads only what was
// written since (a full read at start, after a gap, or when the topic was
// recreated).
type ledgerCache struct {
	mu      sync.Mutex
	valid   bool
	topicID sarama.Uuid
	next    int64
	recs    ledger.Records
}

// LoadRecords reads every record and lift to the topic's end (the high
// watermark when asked, so a write acknowledged before the call is seen).
// The topic is verified first (spec R8.7): missing, with more than one
// partition, or not compacted, it is the ledger lost
// (ledger.ErrLedgerLost), never "no records". A record that does not
// decode is skipped and counted in Records.Undecodable (its broker's
// claims untouchable) until a decodable one replaces it. Reads are
// incremental: from the offset the last read ended at.
func (e *Enforce) LoadRecords(ctx context.Context) (ledger.Records, error) {
	c, err := e.src.conn()
	if err != nil {
		return ledger.NewRecords(), err
	}
	// DescribeTopics answers a missing topic with a per-topic error at
	// once (a metadata refresh would retry).
	var md []*sarama.TopicMetadata
	err = c.viaController(func() error {
		var err error
		md, err = c.admin.DescribeTopics([]string{e.ownershipTopic})
		return err
	})
	if err != nil {
		return ledger.NewRecords(), fmt.Errorf("describe topic %s: %w", e.ownershipTopic, err)
	}
	if len(md) != 1 || errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		e.topicReady.Store(false) // the guard creates it again (Prepare, or its next write)
		return ledger.NewRecords(), fmt.Errorf("%w: %s", ledger.ErrLedgerMissing, e.ownershipTopic)
	}
	if !errors.Is(md[0].Err, sarama.ErrNoError) {
		return ledger.NewRecords(), fmt.Errorf("describe topic %s: %w", e.ownershipTopic, md[0].Err)
	}
	if n := len(md[0].Partitions); n != 1 {
		return ledger.NewRecords(), partitionsLost(e.ownershipTopic, n)
	}
	policy, err := e.ownershipCleanupPolicy(ctx, c)
	if err != nil {
		return ledger.NewRecords(), fmt.Errorf("describe configs of topic %s: %w", e.ownershipTopic, err)
	}
	if !slices.Contains(strings.Split(policy, ","), "compact") {
		return ledger.NewRecords(), fmt.Errorf("%w: topic %s has cleanup.policy %q, want compact", ledger.ErrLedgerLost, e.ownershipTopic, policy)
	}
	if err := c.client.RefreshMetadata(e.ownershipTopic); err != nil {
		return ledger.NewRecords(), fmt.Errorf("metadata of %s: %w", e.ownershipTopic, err)
	}
	lo, err := c.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetOldest)
	if err != nil {
		return ledger.NewRecords(), fmt.Errorf("oldest offset of %s: %w", e.ownershipTopic, err)
	}
	hw, err := c.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetNewest)
	if err != nil {
		return ledger.NewRecords(), fmt.Errorf("newest offset of %s: %w", e.ownershipTopic, err)
	}
	e.ledger.mu.Lock()
	defer e.ledger.mu.Unlock()
	out, from := ledger.NewRecords(), lo
	if l := &e.ledger; l.valid && l.topicID == md[0].Uuid && l.next >= lo && l.next <= hw {
		out, from = l.recs.Clone(), l.next
	}
	if err := e.fetchRecords(ctx, c, out, from, hw); err != nil {
		e.ledger.valid = false
		return ledger.NewRecords(), err
	}
	if md[0].Uuid != (sarama.Uuid{}) {
		out.Topic = md[0].Uuid.String()
	}
	l := &e.ledger
	l.valid, l.topicID, l.next, l.recs = true, md[0].Uuid, max(hw, from), out.Clone()
	return out, nil
}

const cleanupPolicyKey = "cleanup.policy"

// fetchRecords folds the records at offsets [from, hw) into out.
func (e *Enforce) fetchRecords(ctx context.Context, c *conn, out ledger.Records, from, hw int64) error {
	if hw <= from {
		return nil
	}
	leader, err := c.client.Leader(e.ownershipTopic, 0)
	if err != nil {
		return fmt.Errorf("leader of %s: %w", e.ownershipTopic, err)
	}
	// Plain Fetch requests: the topic is small, and a partition consumer
	// would add its subscription batching delay to every read.
	for off := from; off < hw; {
		if err := ctx.Err(); err != nil {
			return err
		}
		req := &sarama.FetchRequest{Version: 4, MaxWaitTime: 0, MinBytes: 1, MaxBytes: 64 << 20, Isolation: sarama.ReadUncommitted}
		req.AddBlock(e.ownershipTopic, 0, off, 16<<20, -1)
		rsp, err := leader.Fetch(req)
		if err != nil {
			return fmt.Errorf("fetch %s at %d: %w", e.ownershipTopic, off, err)
		}
		block := rsp.GetBlock(e.ownershipTopic, 0)
		if block == nil {
			return fmt.Errorf("fetch %s at %d: no answer for the partition", e.ownershipTopic, off)
		}
		if !errors.Is(block.Err, sarama.ErrNoError) {
			return fmt.Errorf("fetch %s at %d: %w", e.ownershipTopic, off, block.Err)
		}
		next := off
		for _, rs := range block.RecordsSet {
			rb := rs.RecordBatch
			if rb == nil {
				continue
			}
			end := rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			if rb.PartialTrailingRecord && len(rb.Records) == 0 {
				continue
			}
			if !rb.Control {
				for _, r := range rb.Records {
					if rb.FirstOffset+r.OffsetDelta < off {
						continue
					}
					ledger.ApplyRecord(out, r.Key, r.Value)
				}
			}
			next = max(next, end)
		}
		if next == off {
			return fmt.Errorf("fetch %s at %d: no progress before offset %d", e.ownershipTopic, off, hw)
		}
		off = next
	}
	return nil
}

// StoreRecord writes this agent's record (acks=all), creating the topic
// on first use. It returns when the write is acknowledged or ctx ends,
// whichever comes first; the write goes on in the background after ctx
// ends (bounded by the producer's timeouts), and the next write waits for
// it, so records are written in order.
func (e *Enforce) StoreRecord(ctx context.Context, r ledger.Record) error {
	value, err := ledger.EncodeRecord(r)
	if err != nil {
		return fmt.Errorf("encode protection record: %w", err)
	}
	return e.produce(ctx, ledger.RecordKey(r.BrokerID), value)
}

// StoreLift writes a lift of a broker's claims (acks=all).
func (e *Enforce) StoreLift(ctx context.Context, l ledger.Lift) error {
	value, err := ledger.EncodeLift(l)
	if err != nil {
		return fmt.Errorf("encode lift: %w", err)
	}
	return e.produce(ctx, ledger.LiftKey(l.BrokerID), value)
}

// DeleteLift withdraws the lift of a broker's claims (a tombstone): its
// agent may protect again in the current episode
// (kafka-disk-guard protection resume).
func (e *Enforce) DeleteLift(ctx context.Context, broker int32) error {
	return e.produce(ctx, ledger.LiftKey(broker), nil)
}

// produce writes one record to the ownership topic, one write at a time.
func (e *Enforce) produce(ctx context.Context, key string, value []byte) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case e.writing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("write %s to %s: an earlier write is still in flight: %w", key, e.ownershipTopic, ctx.Err())
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-e.writing }()
		done <- e.send(c, key, value)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("write %s to %s: %w (the write goes on)", key, e.ownershipTopic, ctx.Err())
	}
}

func (e *Enforce) send(c *conn, key string, value []byte) error {
	if err := e.ensureOwnershipTopic(c); err != nil {
		return err
	}
	if err := e.onePartition(c, true); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	msg := &sarama.ProducerMessage{Topic: e.ownershipTopic, Partition: 0, Key: sarama.StringEncoder(key)}
	if value != nil {
		msg.Value = sarama.ByteEncoder(value)
	}
	if err := c.sendMessage(msg); err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			e.topicReady.Store(false) // deleted behind the guard's back: create it again
		}
		return fmt.Errorf("write %s to %s: %w", key, e.ownershipTopic, err)
	}
	// The producer refreshes its metadata when a write is retried (the
	// topic recreated under it): a write that reached a reshaped topic's
	// partition 0 is one no agent reads, so it is no write.
	if err := e.onePartition(c, false); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// onePartition checks the ownership topic's partition count in the
// producer's metadata (refreshed first when refresh is set: one Metadata
// request for one topic, so a topic reshaped since this pass's read is
// seen): with more than one partition, a write to partition 0 lands where
// no agent reads (they refuse the topic, spec R8.7), so it is refused
// with ErrLedgerLost, never taken for written (found by the simulation,
// class ledger_reshape: a claim made in the pass where the topic was
// reshaped was lost).
func (e *Enforce) onePartition(c *conn, refresh bool) error {
	if refresh {
		if err := c.client.RefreshMetadata(e.ownershipTopic); err != nil {
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				e.topicReady.Store(false)
			}
			return fmt.Errorf("metadata of %s: %w", e.ownershipTopic, err)
		}
	}
	parts, err := c.client.Partitions(e.ownershipTopic)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", e.ownershipTopic, err)
	}
	if n := len(parts); n != 1 {
		return partitionsLost(e.ownershipTopic, n)
	}
	return nil
}

// partitionsLost is the ledger lost to a topic with n partitions.
func partitionsLost(topic string, n int) error {
	return fmt.Errorf("%w: topic %s has %d partitions, want 1 (a total order of writes)", ledger.ErrLedgerLost, topic, n)
}

// Prepare creates the ownership topic when missing and the producer that
// writes to it, so the first protection waits for neither.
func (e *Enforce) Prepare(ctx context.Context) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.ensureOwnershipTopic(c); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ensureProducer()
}

func (c *conn) ensureProducer() error {
	if c.closed {
		return ErrNotConnected
	}
	if c.producer != nil {
		return nil
	}
	// The client's config names the manual partitioner (dialSarama).
	p, err := sarama.NewSyncProducerFromClient(c.client)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	c.producer = p
	return nil
}

// ownershipCleanupPolicy reads the ownership topic's cleanup.policy. The
// controller already knows the topic; the broker that answers may not yet
// (a topic just created reaches each broker through the metadata log), so
// an unknown topic there is asked again for a moment.
func (e *Enforce) ownershipCleanupPolicy(ctx context.Context, c *conn) (string, error) {
	var policy string
	describe := func() error {
		entries, err := c.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: e.ownershipTopic, ConfigNames: []string{cleanupPolicyKey}})
		for _, en := range entries {
			if en.Name == cleanupPolicyKey {
				policy = en.Value
			}
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		err := c.viaController(describe)
		if err == nil || !unknownTopic(err) || attempt == 9 {
			return policy, err
		}
		select {
		case <-ctx.Done():
			return policy, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unknownTopic reports whether err is Kafka's UNKNOWN_TOPIC_OR_PARTITION,
// as an error or inside a DescribeConfigs answer.
func unknownTopic(err error) bool {
	var derr *sarama.DescribeConfigError
	return errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.As(err, &derr) && derr.Err == sarama.ErrUnknownTopicOrPartition
}

func (e *Enforce) ensureOwnershipTopic(c *conn) error {
	if e.topicReady.Load() {
		return nil
	}
	// Asked of the cluster, not the client's metadata cache: a topic
	// deleted behind the guard's back stays in the cache for a while.
	var md []*sarama.TopicMetadata
	err := c.viaController(func() error {
		var err error
		md, err = c.admin.DescribeTopics([]string{e.ownershipTopic})
		return err
	})
	if err == nil && len(md) == 1 && errors.Is(md[0].Err, sarama.ErrNoError) {
		e.topicReady.Store(true)
		return nil
	}
	// RF 3 where the cluster has 3 brokers, min.insync.replicas one less:
	// writes go on with one broker down.
	rf := int16(min(3, len(c.client.Brokers())))
	// Compaction never touches the active segment: with Kafka's default
	// segment.ms (7 days) and segment.bytes (1 GiB) a topic this small
	// would never roll one, and superseded records would pile up. A
	// segment rolls every hour instead, and is cleanable at once.
	compact, minISR := "compact", strconv.Itoa(int(max(1, rf-1)))
	segmentMs, dirty := strconv.Itoa(int(time.Hour/time.Millisecond)), "0.1"
	err = c.admin.CreateTopic(e.ownershipTopic, &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: max(rf, 1),
		ConfigEntries: map[string]*string{cleanupPolicyKey: &compact, "min.insync.replicas": &minISR,
			"segment.ms": &segmentMs, "min.cleanable.dirty.ratio": &dirty},
	}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", e.ownershipTopic, err)
	}
	// Wait for the new partition's leader so the first write finds it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.client.RefreshMetadata(e.ownershipTopic); err == nil {
			if _, err := c.client.Leader(e.ownershipTopic, 0); err == nil {
				e.topicReady.Store(true)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader", e.ownershipTopic)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// LiveBrokers lists the brokers of the cluster's metadata: in KRaft, the
// registered brokers that are not fenced.
func (e *Enforce) LiveBrokers(ctx context.Context) ([]int32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	api := clientAPI{e.src}
	if err := api.ready(); err != nil {
		return nil, err
	}
	// One topic named: an empty list would mean every topic.
	req := sarama.NewMetadataRequest(api.version(), []string{e.ownershipTopic})
	req.AllowAutoTopicCreation = false
	rsp, err := api.metadata(req)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := make([]int32, 0, len(rsp.Brokers))
	for _, br := range rsp.Brokers {
		out = append(out, br.ID())
	}
	return out, nil
}

// The authorizer's setting, reported by DescribeConfigs as a sensitive
// entry without a value when set (it is not a config Kafka defines), and
// absent when not set.
const allowEveryoneKey = "allow.everyone.if.no.acl.found"

// AllowEveryoneIfNoACLFound reads a broker's allow.everyone.if.no.acl.found:
// absent means unset, Kafka's default false; present with a value, that
// value; present and hidden, unknown.
func (e *Enforce) AllowEveryoneIfNoACLFound(ctx context.Context) (ledger.AllowEveryone, error) {
	c, err := e.src.conn()
	if err != nil {
		return ledger.AllowEveryoneUnknown, err
	}
	if err := ctx.Err(); err != nil {
		return ledger.AllowEveryoneUnknown, err
	}
	// Any broker that answers: each reports its own static config.
	var entries []sarama.ConfigEntry
	var errs []error
	for _, b := range c.client.Brokers() {
		entries, err = c.admin.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(b.ID()))})
		if err == nil {
			break
		}
		errs = append(errs, fmt.Errorf("describe configs of broker %d: %w", b.ID(), err))
	}
	if entries == nil {
		if len(errs) == 0 {
			errs = append(errs, errors.New("no broker known"))
		}
		return ledger.AllowEveryoneUnknown, errors.Join(errs...)
	}
	for _, en := range entries {
		if en.Name != allowEveryoneKey {
			continue
		}
		if v, err := strconv.ParseBool(en.Value); err == nil && !en.Sensitive {
			if v {
				return ledger.AllowEveryoneTrue, nil
			}
			return ledger.AllowEveryoneFalse, nil
		}
		return ledger.AllowEveryoneUnknown, nil
	}
	return ledger.AllowEveryoneFalse, nil
}

// sendMessage writes msg with the connection's producer (made when
// missing). The producer stays open while the write is in flight, even
// when the connection is closed meanwhile (a reconnect, the end of Run):
// the last write to return on a closed connection closes it.
func (c *conn) sendMessage(msg *sarama.ProducerMessage) error {
	c.mu.Lock()
	if err := c.ensureProducer(); err != nil {
		c.mu.Unlock()
		return err
	}
	p := c.producer
	c.sending++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sending--
		if c.closed && c.sending == 0 && c.producer != nil {
			_ = c.producer.Close()
			c.producer = nil
		}
	}()
	_, _, err := p.SendMessage(msg)
	return err
}
