package reserve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// ClusterSource reads what the cluster-wide reservation needs from the
// Kafka admin API. internal/kafkaadmin implements it with Sarama.
type ClusterSource interface {
	ReadCluster(ctx context.Context) (ClusterInfo, error)
}

// ClusterInfo is the raw answer of the admin API.
type ClusterInfo struct {
	Brokers []BrokerInfo
	Topics  []TopicInfo
	// BrokerConfig is one broker's configuration (log.* defaults,
	// default.replication.factor, num.partitions), effective values.
	BrokerConfig map[string]string
}

// BrokerInfo is one broker and its log dirs (DescribeLogDirs).
type BrokerInfo struct {
	ID      int32
	LogDirs []LogDirInfo
}

// LogDirInfo is one log dir as DescribeLogDirs v4 reports it.
type LogDirInfo struct {
	Path string
	// TotalBytes is the size of the log dir's volume; -1 when the broker
	// does not report it (DescribeLogDirs before v4).
	TotalBytes  int64
	UsableBytes int64
	// ReplicaBytes is the size on disk of each replica in the log dir.
	ReplicaBytes map[TopicPartition]int64
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// TopicInfo is one topic: its effective configs and replica placement.
type TopicInfo struct {
	Name       string
	Configs    map[string]string
	Partitions []PartitionInfo
}

// PartitionInfo is one partition's replica placement (broker ids).
type PartitionInfo struct {
	ID       int32
	Replicas []int32
}

// Storage bases: where a broker's storage figure comes from.
const (
	StorageLogDirs    = "log_dirs"   // sum of DescribeLogDirs total bytes
	StorageConfigured = "configured" // Config.BrokerStorageBytes
	StorageGiven      = "given"      // offline figures
)

// State is the cluster's reserved space: per broker and in total.
type State struct {
	// Defaults is the topic config a new topic gets.
	Defaults agent.TopicConfig
	// DefaultReplicationFactor and DefaultPartitions answer -1 in a request.
	DefaultReplicationFactor int16
	DefaultPartitions        int32
	// Brokers sorted by id; empty for offline figures.
	Brokers []BrokerState
	// Topics by name.
	Topics map[string]TopicState
	// Cluster totals: the sums over Brokers, or given figures offline.
	StorageBytes  int64
	ReservedBytes int64
}

// BrokerState is one broker's storage and reserved bytes.
type BrokerState struct {
	ID            int32  `json:"broker_id"`
	StorageBytes  int64  `json:"storage_bytes"`
	StorageBasis  string `json:"storage_basis"`
	ReservedBytes int64  `json:"reserved_bytes"`
}

// TopicState is an existing topic.
type TopicState struct {
	Name       string
	Config     agent.TopicConfig
	Partitions []PartitionInfo
	// ReservedBytes over all its replicas.
	ReservedBytes int64
}

// ErrNoStorage means a broker's storage is unknown: it reports no total
// bytes and no capacity is configured.
var ErrNoStorage = errors.New("broker storage unknown")

// NewState computes the reserved space of every replica in the cluster.
// A replica of a topic with retention.bytes = -1 counts what the formula
// gives for one segment, or its current size on disk when that is larger
// (the admin API knows no write rate).
func NewState(info ClusterInfo, cfg Config) (State, error) {
	cfg = cfg.WithDefaults()
	defaults, err := agent.BrokerDefaults(info.BrokerConfig)
	if err != nil {
		return State{}, err
	}
	st := State{
		Defaults:                 defaults,
		DefaultReplicationFactor: 1,
		DefaultPartitions:        1,
		Topics:                   make(map[string]TopicState, len(info.Topics)),
	}
	if v, err := strconv.ParseInt(info.BrokerConfig["default.replication.factor"], 10, 16); err == nil && v > 0 {
		st.DefaultReplicationFactor = int16(v)
	}
	if v, err := strconv.ParseInt(info.BrokerConfig["num.partitions"], 10, 32); err == nil && v > 0 {
		st.DefaultPartitions = int32(v)
	}

	replicaBytes := map[int32]map[TopicPartition]int64{}
	byID := map[int32]int{}
	for _, b := range info.Brokers {
		bs := BrokerState{ID: b.ID}
		sizes := map[TopicPartition]int64{}
		var total int64
		known := len(b.LogDirs) > 0
		for _, d := range b.LogDirs {
			if d.TotalBytes <= 0 {
				known = false
			}
			total += d.TotalBytes
			for tp, n := range d.ReplicaBytes {
				sizes[tp] += n
			}
		}
		switch {
		case cfg.BrokerStorageBytes > 0:
			bs.StorageBytes, bs.StorageBasis = cfg.BrokerStorageBytes, StorageConfigured
		case known:
			bs.StorageBytes, bs.StorageBasis = total, StorageLogDirs
		default:
			return State{}, fmt.Errorf("broker %d: %w: no log dir total bytes (DescribeLogDirs v4) and no configured capacity", b.ID, ErrNoStorage)
		}
		replicaBytes[b.ID] = sizes
		byID[b.ID] = len(st.Brokers)
		st.Brokers = append(st.Brokers, bs)
	}

	for _, t := range info.Topics {
		c, err := agent.ApplyTopicConfigs(agent.DefaultTopicConfig(), t.Configs)
		if err != nil {
			return State{}, fmt.Errorf("topic %s: %w", t.Name, err)
		}
		ts := TopicState{Name: t.Name, Config: c, Partitions: t.Partitions}
		per, basis := Partition(PartitionInput{Topic: t.Name, Config: c, CompactFlatBytes: cfg.CompactFlatBytes})
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				n := per
				if basis == BasisUnbounded {
					n = max(n, replicaBytes[r][TopicPartition{t.Name, p.ID}])
				}
				ts.ReservedBytes += n
				if i, ok := byID[r]; ok {
					st.Brokers[i].ReservedBytes += n
				}
			}
		}
		st.Topics[t.Name] = ts
	}
	sort.Slice(st.Brokers, func(i, j int) bool { return st.Brokers[i].ID < st.Brokers[j].ID })
	for _, b := range st.Brokers {
		st.StorageBytes += b.StorageBytes
		st.ReservedBytes += b.ReservedBytes
	}
	return st, nil
}
