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
	out := map[int32]enforcer.Ownership{}
	// DescribeTopics answers a missing topic with a per-topic error at
	// once (a metadata refresh would retry).
	md, err := e.admin.DescribeTopics([]string{e.ownershipTopic})
	if err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", e.ownershipTopic, err)
	}
	if len(md) != 1 || errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		return out, nil
	}
	if !errors.Is(md[0].Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("describe topic %s: %w", e.ownershipTopic, md[0].Err)
	}
	lo, err := e.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetOldest)
	if err != nil {
		return nil, fmt.Errorf("oldest offset of %s: %w", e.ownershipTopic, err)
	}
	hw, err := e.client.GetOffset(e.ownershipTopic, 0, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("newest offset of %s: %w", e.ownershipTopic, err)
	}
	if hw <= lo {
		return out, nil
	}
	consumer, err := sarama.NewConsumerFromClient(e.client)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(e.ownershipTopic, 0, lo)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", e.ownershipTopic, err)
	}
	defer pc.Close()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case m := <-pc.Messages():
			id, ok := strings.CutPrefix(string(m.Key), ownershipKeyPrefix)
			n, err := strconv.ParseInt(id, 10, 32)
			if ok && err == nil {
				if len(m.Value) == 0 {
					delete(out, int32(n))
				} else {
					var o enforcer.Ownership
					if err := json.Unmarshal(m.Value, &o); err != nil {
						return nil, fmt.Errorf("decode ownership record %s at offset %d: %w", m.Key, m.Offset, err)
					}
					out[int32(n)] = o
				}
			}
			if m.Offset >= hw-1 {
				return out, nil
			}
		case err := <-pc.Errors():
			return nil, fmt.Errorf("consume %s: %w", e.ownershipTopic, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("consume %s: offset %d not reached in time", e.ownershipTopic, hw-1)
		}
	}
}

// StoreOwnership writes this broker's record (acks=all), creating the
// topic on first use.
func (e *Enforce) StoreOwnership(ctx context.Context, o enforcer.Ownership) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.ensureOwnershipTopic(); err != nil {
		return err
	}
	value, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode ownership record: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.producer == nil {
		p, err := sarama.NewSyncProducerFromClient(e.client)
		if err != nil {
			return fmt.Errorf("producer: %w", err)
		}
		e.producer = p
	}
	_, _, err = e.producer.SendMessage(&sarama.ProducerMessage{
		Topic: e.ownershipTopic, Partition: 0,
		Key: sarama.StringEncoder(ownershipKey(o.BrokerID)), Value: sarama.ByteEncoder(value),
	})
	if err != nil {
		return fmt.Errorf("write ownership record to %s: %w", e.ownershipTopic, err)
	}
	return nil
}

func (e *Enforce) ensureOwnershipTopic() error {
	topics, err := e.client.Topics()
	if err == nil {
		for _, t := range topics {
			if t == e.ownershipTopic {
				return nil
			}
		}
	}
	rf := int16(min(3, len(e.client.Brokers())))
	compact, minISR := "compact", strconv.Itoa(int(max(1, rf-1)))
	err = e.admin.CreateTopic(e.ownershipTopic, &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: max(rf, 1),
		ConfigEntries: map[string]*string{"cleanup.policy": &compact, "min.insync.replicas": &minISR},
	}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", e.ownershipTopic, err)
	}
	// Wait for the new partition's leader so the first write finds it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := e.client.RefreshMetadata(e.ownershipTopic); err == nil {
			if _, err := e.client.Leader(e.ownershipTopic, 0); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader", e.ownershipTopic)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
