package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// ClusterAdmin is the part of sarama.ClusterAdmin the cluster reader uses.
type ClusterAdmin interface {
	DescribeCluster() ([]*sarama.Broker, int32, error)
	DescribeTopics(topics []string) ([]*sarama.TopicMetadata, error)
	DescribeConfigs(resources []*sarama.ConfigResource, options sarama.DescribeConfigsOptions) ([]*sarama.ConfigResourceResult, error)
	DescribeLogDirs(brokerIDs []int32) (map[int32][]sarama.DescribeLogDirsResponseDirMetadata, error)
}

// ClusterReader reads every topic's configs and replica placement and
// every broker's log dirs: reserve.ClusterSource over the admin API.
// DescribeLogDirs v4 (Kafka 3.3+) gives each log dir's total bytes; the
// Sarama config's Version must be at least V3_3_0_0 for it.
// Like every adapter it takes the connection at each call
// (ErrNotConnected without one).
type ClusterReader struct {
	api func() (clusterAPI, error)
}

// ClusterReader returns a reader over the link.
func (l *Link) ClusterReader() *ClusterReader {
	return &ClusterReader{api: func() (clusterAPI, error) {
		c, err := l.conn()
		if err != nil {
			return nil, err
		}
		return saramaAPI{c.admin}, nil
	}}
}

// NewClusterReader returns a reader over an admin the caller owns (tests).
func NewClusterReader(admin ClusterAdmin) *ClusterReader {
	return &ClusterReader{api: func() (clusterAPI, error) { return saramaAPI{admin}, nil }}
}

// clusterAPI is ClusterAdmin with DescribeCluster reduced to broker ids
// (a sarama.Broker's id cannot be set outside Sarama: this keeps the reader
// testable with a fake).
type clusterAPI interface {
	brokerIDs() ([]int32, error)
	DescribeTopics(topics []string) ([]*sarama.TopicMetadata, error)
	DescribeConfigs(resources []*sarama.ConfigResource, options sarama.DescribeConfigsOptions) ([]*sarama.ConfigResourceResult, error)
	DescribeLogDirs(brokerIDs []int32) (map[int32][]sarama.DescribeLogDirsResponseDirMetadata, error)
}

type saramaAPI struct{ ClusterAdmin }

func (s saramaAPI) brokerIDs() ([]int32, error) {
	brokers, _, err := s.DescribeCluster()
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID())
	}
	return ids, nil
}

var _ reserve.ClusterSource = (*ClusterReader)(nil)

// ReadCluster implements reserve.ClusterSource. Every per-item error code is
// checked: a topic, config resource or broker that did not answer fails
// the read, so a decision never rests on a partial view.
func (r *ClusterReader) ReadCluster(ctx context.Context) (reserve.ClusterInfo, error) {
	var info reserve.ClusterInfo
	api, err := r.api()
	if err != nil {
		return info, err
	}
	ids, err := api.brokerIDs()
	if err != nil {
		return info, fmt.Errorf("describe cluster: %w", err)
	}
	if len(ids) == 0 {
		return info, errors.New("describe cluster: no brokers")
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if err := ctx.Err(); err != nil {
		return info, err
	}

	metas, err := api.DescribeTopics(nil)
	if err != nil {
		return info, fmt.Errorf("describe topics: %w", err)
	}
	resources := []*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: strconv.Itoa(int(ids[0]))}}
	for _, m := range metas {
		if !errors.Is(m.Err, sarama.ErrNoError) {
			return info, fmt.Errorf("describe topic %s: %w", m.Name, m.Err)
		}
		t := reserve.TopicInfo{Name: m.Name}
		for _, p := range m.Partitions {
			t.Partitions = append(t.Partitions, reserve.PartitionInfo{ID: p.ID, Replicas: append([]int32(nil), p.Replicas...)})
		}
		sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].ID < t.Partitions[j].ID })
		info.Topics = append(info.Topics, t)
		resources = append(resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: m.Name})
	}
	sort.Slice(info.Topics, func(i, j int) bool { return info.Topics[i].Name < info.Topics[j].Name })
	if err := ctx.Err(); err != nil {
		return info, err
	}

	// Batched: one request per describeBatch resources, so a large cluster
	// never sends one huge DescribeConfigs.
	var results []*sarama.ConfigResourceResult
	for start := 0; start < len(resources); start += describeBatch {
		if err := ctx.Err(); err != nil {
			return info, err
		}
		rs, err := api.DescribeConfigs(resources[start:min(start+describeBatch, len(resources))], sarama.DescribeConfigsOptions{})
		if err != nil {
			return info, fmt.Errorf("describe configs: %w", err)
		}
		results = append(results, rs...)
	}
	topicConfigs := map[string]map[string]string{}
	for _, res := range results {
		if !errors.Is(res.ErrorCode, sarama.ErrNoError) {
			return info, fmt.Errorf("describe configs %s: %w: %s", res.Name, res.ErrorCode, res.ErrorMsg)
		}
		m := make(map[string]string, len(res.Configs))
		for _, e := range res.Configs {
			m[e.Name] = e.Value
		}
		switch res.Type {
		case sarama.BrokerResource:
			info.BrokerConfig = m
		case sarama.TopicResource:
			topicConfigs[res.Name] = m
		}
	}
	if info.BrokerConfig == nil {
		return info, fmt.Errorf("describe configs: no answer for broker %d", ids[0])
	}
	for i, t := range info.Topics {
		c, ok := topicConfigs[t.Name]
		if !ok {
			return info, fmt.Errorf("describe configs: no answer for topic %s", t.Name)
		}
		info.Topics[i].Configs = c
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}

	dirs, err := api.DescribeLogDirs(ids)
	if err != nil {
		return info, fmt.Errorf("describe log dirs: %w", err)
	}
	for _, id := range ids {
		ds, ok := dirs[id]
		if !ok {
			return info, fmt.Errorf("describe log dirs: no answer from broker %d", id)
		}
		b := reserve.BrokerInfo{ID: id}
		for _, d := range ds {
			if !errors.Is(d.ErrorCode, sarama.ErrNoError) {
				// An offline log dir holds nothing Kafka can place; skip it.
				continue
			}
			ld := reserve.LogDirInfo{Path: d.Path, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes, ReplicaBytes: map[reserve.TopicPartition]int64{}}
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					if p.IsTemporary {
						continue // a -future replica moving between log dirs
					}
					ld.ReplicaBytes[reserve.TopicPartition{Topic: t.Topic, Partition: p.PartitionID}] = p.Size
				}
			}
			b.LogDirs = append(b.LogDirs, ld)
		}
		info.Brokers = append(info.Brokers, b)
	}
	return info, nil
}
