package kafkaadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// The ownership topic is compacted, one partition, keyed "broker-<id>";
// each value is the JSON of that broker's enforcer.Ownership. Agents read
// the whole topic (it holds one live record per broker) to learn which
// protection bindings other agents claim.

const ownershipKeyPrefix = "broker-"

func ownershipKey(id int32) string { return ownershipKeyPrefix + strconv.Itoa(int(id)) }

// LoadOwnership reads every broker's latest record. A missing topic means
// no agent ever protected anything.
func (e *Enforce) LoadOwnership(ctx context.Context) (map[int32]enforcer.Ownership, error) {
	c, err := e.src.conn()
	if err != nil {
		return nil, err
	}
	out := map[int32]enforcer.Ownership{}
	// DescribeTopics answers a missing topic with a per-topic error at
	// once (a metadata refresh would retry).
	md, err := c.admin.DescribeTopics([]string{e.ownershipTopic})
	if err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", e.ownershipTopic, err)
	}
	if len(md) != 1 || errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		return out, nil
	}
	if !errors.Is(md[0].Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("describe topic %s: %w", e.ownershipTopic, md[0].Err)
	}
	lo, err := c.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetOldest)
	if err != nil {
		return nil, fmt.Errorf("oldest offset of %s: %w", e.ownershipTopic, err)
	}
	hw, err := c.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("newest offset of %s: %w", e.ownershipTopic, err)
	}
	if hw <= lo {
		return out, nil
	}
	leader, err := c.client.Leader(e.ownershipTopic, 0)
	if err != nil {
		return nil, fmt.Errorf("leader of %s: %w", e.ownershipTopic, err)
	}
	// Plain Fetch requests: the topic is small, and a partition consumer
	// would add its subscription batching delay to every read.
	for off := lo; off < hw; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req := &sarama.FetchRequest{Version: 4, MaxWaitTime: 0, MinBytes: 1, MaxBytes: 8 << 20, Isolation: sarama.ReadUncommitted}
		req.AddBlock(e.ownershipTopic, 0, off, 4<<20, -1)
		rsp, err := leader.Fetch(req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s at %d: %w", e.ownershipTopic, off, err)
		}
		block := rsp.GetBlock(e.ownershipTopic, 0)
		if block == nil {
			return nil, fmt.Errorf("fetch %s at %d: no answer for the partition", e.ownershipTopic, off)
		}
		if !errors.Is(block.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("fetch %s at %d: %w", e.ownershipTopic, off, block.Err)
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
					o := rb.FirstOffset + r.OffsetDelta
					if o < off {
						continue
					}
					if err := applyRecord(out, r.Key, r.Value); err != nil {
						return nil, fmt.Errorf("decode ownership record %s at offset %d: %w", r.Key, o, err)
					}
				}
			}
			next = max(next, end)
		}
		if next == off {
			return nil, fmt.Errorf("fetch %s at %d: no progress before offset %d", e.ownershipTopic, off, hw)
		}
		off = next
	}
	return out, nil
}

// applyRecord folds one record into the map: the latest value per key
// wins; an empty value removes the key.
func applyRecord(out map[int32]enforcer.Ownership, key, value []byte) error {
	id, ok := strings.CutPrefix(string(key), ownershipKeyPrefix)
	n, err := strconv.ParseInt(id, 10, 32)
	if !ok || err != nil {
		return nil // not a record of ours
	}
	if len(value) == 0 {
		delete(out, int32(n))
		return nil
	}
	var o enforcer.Ownership
	if err := json.Unmarshal(value, &o); err != nil {
		return err
	}
	out[int32(n)] = o
	return nil
}

// StoreOwnership writes this broker's record (acks=all), creating the
// topic on first use.
func (e *Enforce) StoreOwnership(ctx context.Context, o enforcer.Ownership) error {
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
	value, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode ownership record: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensureProducer(); err != nil {
		return err
	}
	_, _, err = c.producer.SendMessage(&sarama.ProducerMessage{
		Topic: e.ownershipTopic, Partition: 0,
		Key: sarama.StringEncoder(ownershipKey(o.BrokerID)), Value: sarama.ByteEncoder(value),
	})
	if err != nil {
		return fmt.Errorf("write ownership record to %s: %w", e.ownershipTopic, err)
	}
	return nil
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
	if c.producer != nil {
		return nil
	}
	p, err := sarama.NewSyncProducerFromClient(c.client)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	c.producer = p
	return nil
}

func (e *Enforce) ensureOwnershipTopic(c *conn) error {
	topics, err := c.client.Topics()
	if err == nil {
		for _, t := range topics {
			if t == e.ownershipTopic {
				return nil
			}
		}
	}
	rf := int16(min(3, len(c.client.Brokers())))
	compact, minISR := "compact", strconv.Itoa(int(max(1, rf-1)))
	err = c.admin.CreateTopic(e.ownershipTopic, &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: max(rf, 1),
		ConfigEntries: map[string]*string{"cleanup.policy": &compact, "min.insync.replicas": &minISR},
	}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", e.ownershipTopic, err)
	}
	// Wait for the new partition's leader so the first write finds it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.client.RefreshMetadata(e.ownershipTopic); err == nil {
			if _, err := c.client.Leader(e.ownershipTopic, 0); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader", e.ownershipTopic)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
