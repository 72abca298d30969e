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
	if info.Topics, err = readTopics(api); err != nil {
		return info, err
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	if err := readConfigs(ctx, api, ids[0], &info); err != nil {
		return info, err
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	info.Brokers, err = readBrokers(api, ids)
	return info, err
}

// readTopics reads every topic's partitions and replicas, sorted.
func readTopics(api clusterAPI) ([]reserve.TopicInfo, error) {
	metas, err := api.DescribeTopics(nil)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	var topics []reserve.TopicInfo
	for _, m := range metas {
		if !errors.Is(m.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("describe topic %s: %w", m.Name, m.Err)
		}
		t := reserve.TopicInfo{Name: m.Name}
		for _, p := range m.Partitions {
			t.Partitions = append(t.Partitions, reserve.PartitionInfo{ID: p.ID, Replicas: append([]int32(nil), p.Replicas...)})
		}
		sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].ID < t.Partitions[j].ID })
		topics = append(topics, t)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	return topics, nil
}

// readConfigs reads the configs of broker id and of every topic of info.
func readConfigs(ctx context.Context, api clusterAPI, id int32, info *reserve.ClusterInfo) error {
	resources := []*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: strconv.Itoa(int(id))}}
	for _, t := range info.Topics {
		resources = append(resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: t.Name})
	}
	// Batched: one request per describeBatch resources, so a large cluster
	// never sends one huge DescribeConfigs.
	var results []*sarama.ConfigResourceResult
	for start := 0; start < len(resources); start += describeBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		rs, err := api.DescribeConfigs(resources[start:min(start+describeBatch, len(resources))], sarama.DescribeConfigsOptions{})
		if err != nil {
			return fmt.Errorf("describe configs: %w", err)
		}
		results = append(results, rs...)
	}
	topicConfigs := map[string]map[string]string{}
	for _, res := range results {
		if !errors.Is(res.ErrorCode, sarama.ErrNoError) {
			return fmt.Errorf("describe configs %s: %w: %s", res.Name, res.ErrorCode, res.ErrorMsg)
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
		return fmt.Errorf("describe configs: no answer for broker %d", id)
	}
	for i, t := range info.Topics {
		c, ok := topicConfigs[t.Name]
		if !ok {
			return fmt.Errorf("describe configs: no answer for topic %s", t.Name)
		}
		info.Topics[i].Configs = c
	}
	return nil
}

// readBrokers reads each broker's online log dirs and the bytes of their
// replicas (not -future ones).
func readBrokers(api clusterAPI, ids []int32) ([]reserve.BrokerInfo, error) {
	dirs, err := api.DescribeLogDirs(ids)
	if err != nil {
		return nil, fmt.Errorf("describe log dirs: %w", err)
	}
	var brokers []reserve.BrokerInfo
	for _, id := range ids {
		ds, ok := dirs[id]
		if !ok {
			return nil, fmt.Errorf("describe log dirs: no answer from broker %d", id)
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
		brokers = append(brokers, b)
	}
	return brokers, nil
}
