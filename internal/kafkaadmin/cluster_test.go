package kafkaadmin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// fakeAdmin answers the four admin calls from fixed data.
type fakeAdmin struct {
	brokers   []int32
	topics    []*sarama.TopicMetadata
	configs   []*sarama.ConfigResourceResult
	logDirs   map[int32][]sarama.DescribeLogDirsResponseDirMetadata
	configErr error
}

func (f *fakeAdmin) brokerIDs() ([]int32, error) { return f.brokers, nil }

func (f *fakeAdmin) DescribeTopics([]string) ([]*sarama.TopicMetadata, error) { return f.topics, nil }

func (f *fakeAdmin) DescribeConfigs([]*sarama.ConfigResource, sarama.DescribeConfigsOptions) ([]*sarama.ConfigResourceResult, error) {
	return f.configs, f.configErr
}

func (f *fakeAdmin) DescribeLogDirs([]int32) (map[int32][]sarama.DescribeLogDirsResponseDirMetadata, error) {
	return f.logDirs, nil
}

func good() *fakeAdmin {
	return &fakeAdmin{
		brokers: []int32{2, 1},
		topics: []*sarama.TopicMetadata{{Name: "orders", Partitions: []*sarama.PartitionMetadata{
			{ID: 1, Replicas: []int32{2, 1}}, {ID: 0, Replicas: []int32{1, 2}, Err: sarama.ErrLeaderNotAvailable}}}},
		configs: []*sarama.ConfigResourceResult{
			{Type: sarama.BrokerResource, Name: "1", Configs: []sarama.ConfigEntry{{Name: "log.segment.bytes", Value: "1048576"}}},
			{Type: sarama.TopicResource, Name: "orders", Configs: []sarama.ConfigEntry{{Name: "retention.bytes", Value: "100"}}},
		},
		logDirs: map[int32][]sarama.DescribeLogDirsResponseDirMetadata{
			1: {{Path: "/a", TotalBytes: 1000, UsableBytes: 600, Topics: []sarama.DescribeLogDirsResponseTopic{{Topic: "orders",
				Partitions: []sarama.DescribeLogDirsResponsePartition{{PartitionID: 0, Size: 10}, {PartitionID: 1, Size: 99, IsTemporary: true}}}}}},
			2: {{Path: "/a", TotalBytes: 2000}, {Path: "/offline", ErrorCode: sarama.ErrKafkaStorageError}},
		},
	}
}

func reader(api clusterAPI) *ClusterReader {
	return &ClusterReader{api: func() (clusterAPI, error) { return api, nil }}
}

// batchingAdmin answers DescribeConfigs for exactly the resources asked
// and records each request's size.
type batchingAdmin struct {
	*fakeAdmin
	sizes []int
}

func (b *batchingAdmin) DescribeConfigs(rs []*sarama.ConfigResource, _ sarama.DescribeConfigsOptions) ([]*sarama.ConfigResourceResult, error) {
	b.sizes = append(b.sizes, len(rs))
	out := make([]*sarama.ConfigResourceResult, 0, len(rs))
	for _, r := range rs {
		out = append(out, &sarama.ConfigResourceResult{Type: r.Type, Name: r.Name})
	}
	return out, nil
}

// Topic configs are read in batches of describeBatch resources: a large
// cluster never gets one DescribeConfigs naming every topic.
func TestReadClusterBatchesConfigs(t *testing.T) {
	f := &batchingAdmin{fakeAdmin: good()}
	f.topics = nil
	for i := range 450 {
		f.topics = append(f.topics, &sarama.TopicMetadata{Name: fmt.Sprintf("t%03d", i)})
	}
	info, err := reader(f).ReadCluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Topics) != 450 {
		t.Fatalf("%d topics", len(info.Topics))
	}
	// 450 topics and one broker resource.
	if want := []int{describeBatch, describeBatch, 51}; !slices.Equal(f.sizes, want) {
		t.Fatalf("DescribeConfigs request sizes %v, want %v", f.sizes, want)
	}
}

func TestReadCluster(t *testing.T) {
	info, err := reader(good()).ReadCluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Brokers) != 2 || info.Brokers[0].ID != 1 || info.Brokers[1].ID != 2 {
		t.Fatalf("brokers %+v", info.Brokers)
	}
	if d := info.Brokers[0].LogDirs[0]; d.TotalBytes != 1000 || d.ReplicaBytes[reserve.TopicPartition{Topic: "orders", Partition: 0}] != 10 || len(d.ReplicaBytes) != 1 {
		t.Fatalf("broker 1 log dir %+v (future replicas must be left out)", d)
	}
	if len(info.Brokers[1].LogDirs) != 1 {
		t.Fatalf("offline log dir kept: %+v", info.Brokers[1].LogDirs)
	}
	if info.BrokerConfig["log.segment.bytes"] != "1048576" || info.Topics[0].Configs["retention.bytes"] != "100" {
		t.Fatalf("configs %+v %+v", info.BrokerConfig, info.Topics)
	}
	if p := info.Topics[0].Partitions; p[0].ID != 0 || p[1].ID != 1 || p[0].Replicas[0] != 1 {
		t.Fatalf("partitions %+v (partition errors keep their replicas)", p)
	}
}

// Every per-item error code fails the read: no decision on a partial view.
func TestReadClusterItemErrors(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(*fakeAdmin)
		want  string
	}{
		{"topic error", func(f *fakeAdmin) { f.topics[0].Err = sarama.ErrTopicAuthorizationFailed }, "describe topic orders"},
		{"config resource error", func(f *fakeAdmin) {
			f.configs[1].ErrorCode, f.configs[1].ErrorMsg = sarama.ErrTopicAuthorizationFailed, "denied"
		}, "describe configs orders"},
		{"config request error", func(f *fakeAdmin) { f.configErr = errors.New("eof") }, "describe configs: eof"},
		{"no broker config", func(f *fakeAdmin) { f.configs = f.configs[1:] }, "no answer for broker 1"},
		{"no topic config", func(f *fakeAdmin) { f.configs = f.configs[:1] }, "no answer for topic orders"},
		{"broker missing from log dirs", func(f *fakeAdmin) { delete(f.logDirs, 2) }, "no answer from broker 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			tt.spoil(f)
			_, err := reader(f).ReadCluster(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
