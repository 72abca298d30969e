package kafkaadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

var _ enforcer.ReplicaAdmin = (*Enforce)(nil)

// TopicReplicas reads the topics' replica assignment from one Metadata
// request naming them (a topic the cluster does not have is left out): how
// many replicas each has, on how many brokers.
func (e *Enforce) TopicReplicas(ctx context.Context, topics []string) (map[string]ledger.TopicReplicas, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	api := clientAPI{e.src}
	if err := api.ready(); err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		return map[string]ledger.TopicReplicas{}, nil // an empty list would mean every topic
	}
	req := sarama.NewMetadataRequest(api.version(), topics)
	req.AllowAutoTopicCreation = false
	rsp, err := api.metadata(req)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := make(map[string]ledger.TopicReplicas, len(topics))
	for _, t := range rsp.Topics {
		if !errors.Is(t.Err, sarama.ErrNoError) {
			continue
		}
		brokers := map[int32]bool{}
		r := ledger.TopicReplicas{Partitions: len(t.Partitions)}
		for _, p := range t.Partitions {
			r.Replicas += len(p.Replicas)
			for _, b := range p.Replicas {
				brokers[b] = true
			}
		}
		r.Brokers = len(brokers)
		out[t.Name] = r
	}
	return out, nil
}
