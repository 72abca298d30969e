package reserve

import (
	"errors"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
)

func offline(storage, reserved int64) State {
	return State{
		Defaults: agent.DefaultTopicConfig(), DefaultPartitions: 1, DefaultReplicationFactor: 1,
		StorageBytes: storage, ReservedBytes: reserved, Topics: map[string]TopicState{},
	}
}

// R5.1, R5.2: the seed's worked examples and the special policies, through
// the calculator a request goes through.
func TestCheckPartitionBytesSeedExamples(t *testing.T) {
	idx := 10 * mib // segment.index.bytes default
	tests := []struct {
		name    string
		configs map[string]string
		rate    float64
		want    int64
		about   int64 // the seed's "about" figure: retention + one segment, index bytes on top
		basis   Basis
	}{
		{"R5.1 1 GB / 512 MB -> about 1.5 GB", map[string]string{"retention.bytes": "1073741824", "segment.bytes": "536870912"},
			0, gib + 512*mib + 2*idx*3, gib + 512*mib, BasisRetentionBytes},
		{"R5.1 50 GB / 512 MB -> about 50.5 GB", map[string]string{"retention.bytes": "53687091200", "segment.bytes": "536870912"},
			0, 50*gib + 512*mib + 2*idx*101, 50*gib + 512*mib, BasisRetentionBytes},
		{"R5.1 1 GB / 128 MB -> about 1.1 GB", map[string]string{"retention.bytes": "1073741824", "segment.bytes": "134217728"},
			0, gib + 128*mib + 2*idx*9, gib + 128*mib, BasisRetentionBytes},
		{"R5.1 small index bytes", map[string]string{"retention.bytes": "1073741824", "segment.bytes": "536870912", "segment.index.bytes": "1048576"},
			0, gib + 512*mib + 2*mib*3, gib + 512*mib, BasisRetentionBytes},
		{"R5.1 compact: flat 1 GiB, retention ignored", map[string]string{"cleanup.policy": "compact", "retention.bytes": "53687091200"},
			0, gib, gib, BasisCompactFlat},
		{"R5.1 compact,delete uses the formula", map[string]string{"cleanup.policy": "compact,delete", "retention.bytes": "1073741824", "segment.bytes": "536870912"},
			0, gib + 512*mib + 2*idx*3, gib + 512*mib, BasisRetentionBytes},
		{"R5.2 retention.bytes -1 without a rate: one segment", map[string]string{"retention.bytes": "-1", "segment.bytes": "536870912"},
			0, 512*mib + 2*idx, 512 * mib, BasisUnbounded},
		{"R5.2 retention.bytes -1 with a rate: rate x retention.ms", map[string]string{"retention.bytes": "-1", "retention.ms": "3600000", "segment.bytes": "536870912"},
			1 << 20, 3600*mib + 512*mib + 2*idx*8, 3600*mib + 512*mib, BasisWriteRateEstimate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Check(offline(1000*gib, 0), Request{Operation: CreateTopic, Topic: "t", Partitions: 1, ReplicationFactor: 1,
				Configs: tt.configs, WriteRateBytesPerSecond: tt.rate}, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if d.PartitionBytes != tt.want || d.Basis != tt.basis {
				t.Fatalf("partition bytes = %d (%s), want %d (%s)", d.PartitionBytes, d.Basis, tt.want, tt.basis)
			}
			if idxPart := d.PartitionBytes - tt.about; idxPart < 0 || idxPart > 2*idx*101 {
				t.Fatalf("partition bytes %d not about %d plus indexes", d.PartitionBytes, tt.about)
			}
			if d.Cluster.RequestedBytes != tt.want || !d.Allowed {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

// R5.3, R5.4: the cluster limit, strictly above the limit is refused and the
// message names the limit, the current and the requested figures.
func TestCheckClusterLimit(t *testing.T) {
	seg := map[string]string{"retention.bytes": "1073741824", "segment.bytes": "536870912", "segment.index.bytes": "0"}
	per := gib + 512*mib // with no index bytes
	tests := []struct {
		name       string
		storage    int64
		reserved   int64
		partitions int32
		rf         int16
		limit      float64
		allowed    bool
		after      float64
	}{
		{"R5.4 fits well", 100 * gib, 10 * gib, 2, 3, 0, true, 19},
		{"R5.4 exactly at the limit is allowed", 100 * gib, 90*gib - 6*per, 2, 3, 0, true, 90},
		{"R5.4 one byte above the limit is refused", 100 * gib, 90*gib - 6*per + 1, 2, 3, 0, false, 90.000000001},
		{"R5.4 already over the limit", 100 * gib, 95 * gib, 1, 1, 0, false, 96.5},
		{"R5.4 configurable limit", 100 * gib, 10 * gib, 10, 1, 20, false, 25},
		{"R5.4 configurable limit fits", 100 * gib, 10 * gib, 10, 1, 30, true, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Check(offline(tt.storage, tt.reserved), Request{Operation: CreateTopic, Topic: "orders",
				Partitions: tt.partitions, ReplicationFactor: tt.rf, Configs: seg}, Config{LimitPercent: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v: %+v", d.Allowed, tt.allowed, d)
			}
			if diff := d.Cluster.PercentAfter - tt.after; diff > 1e-6 || diff < -1e-6 {
				t.Fatalf("percent after = %v, want %v", d.Cluster.PercentAfter, tt.after)
			}
			if want := int64(tt.partitions) * int64(tt.rf) * per; d.Cluster.RequestedBytes != want {
				t.Fatalf("requested = %d, want %d", d.Cluster.RequestedBytes, want)
			}
			if tt.allowed {
				if d.Reason != "" {
					t.Fatalf("reason %q on an allowed request", d.Reason)
				}
				return
			}
			limit := tt.limit
			if limit == 0 {
				limit = 90
			}
			for _, want := range []string{"reserved storage limit of " + pct(limit) + "%", "cluster would be at",
				"current " + human.Bytes(tt.reserved), "requested " + human.Bytes(d.Cluster.RequestedBytes), "create topic orders"} {
				if !strings.Contains(d.Reason, want) {
					t.Errorf("reason %q lacks %q", d.Reason, want)
				}
			}
		})
	}
}

func twoBrokerState(t *testing.T) State {
	t.Helper()
	st, err := NewState(ClusterInfo{
		BrokerConfig: map[string]string{"log.segment.bytes": "536870912", "log.index.size.max.bytes": "0", "default.replication.factor": "1", "num.partitions": "1"},
		Brokers: []BrokerInfo{
			{ID: 1, LogDirs: []LogDirInfo{{Path: "/d1", TotalBytes: 10 * gib}}},
			{ID: 2, LogDirs: []LogDirInfo{{Path: "/d2", TotalBytes: 10 * gib}}},
		},
		Topics: []TopicInfo{{
			Name:       "big",
			Configs:    map[string]string{"retention.bytes": "4294967296", "segment.bytes": "536870912", "segment.index.bytes": "0"},
			Partitions: []PartitionInfo{{ID: 0, Replicas: []int32{1}}, {ID: 1, Replicas: []int32{1}}},
		}},
	}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// R5.3: per broker as well: one full broker is enough to refuse.
func TestCheckPerBroker(t *testing.T) {
	st := twoBrokerState(t)
	// broker 1 holds 2 x 4.5 GiB = 9 GiB of 10 GiB; broker 2 nothing.
	if st.Brokers[0].ReservedBytes != 9*gib || st.Brokers[1].ReservedBytes != 0 || st.ReservedBytes != 9*gib || st.StorageBytes != 20*gib {
		t.Fatalf("state %+v", st)
	}
	small := map[string]string{"retention.bytes": "536870912"} // 512 MiB + 512 MiB segment = 1 GiB
	tests := []struct {
		name     string
		req      Request
		allowed  bool
		inReason string
	}{
		{"R5.4 manual assignment on the empty broker fits", Request{Operation: CreateTopic, Topic: "a", Configs: small,
			Assignments: map[int32][]int32{0: {2}}}, true, ""},
		{"R5.4 manual assignment on the full broker is refused though the cluster fits", Request{Operation: CreateTopic, Topic: "a", Configs: small,
			Assignments: map[int32][]int32{0: {1}}}, false, "broker 1 would be at 100%"},
		{"R5.4 balanced placement: both brokers may get the partition", Request{Operation: CreateTopic, Topic: "a", Partitions: 1, Configs: small},
			false, "broker 1 would be at 100%"},
		{"R5.4 add partitions to the topic on the full broker", Request{Operation: CreatePartitions, Topic: "big", Partitions: 3},
			false, "add partitions to topic big: 1 partition(s) x 1 replica(s) x 4.50 GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Check(st, tt.req, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed || !strings.Contains(d.Reason, tt.inReason) {
				t.Fatalf("allowed=%v reason=%q, want %v with %q", d.Allowed, d.Reason, tt.allowed, tt.inReason)
			}
			if d.Cluster.OverLimit && tt.allowed {
				t.Fatal("cluster over limit on an allowed request")
			}
		})
	}
}

func TestCheckPlacementShare(t *testing.T) {
	st := twoBrokerState(t)
	st.Brokers = append(st.Brokers, BrokerState{ID: 3, StorageBytes: 10 * gib, StorageBasis: StorageLogDirs})
	d, err := Check(st, Request{Operation: CreateTopic, Topic: "x", Partitions: 4, ReplicationFactor: 2}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// 8 replicas over 3 brokers: at most ceil(8/3) = 3 on one broker.
	for _, b := range d.Brokers {
		if b.NewReplicasOnBroker != 3 {
			t.Fatalf("broker %d new replicas = %d, want 3", *b.BrokerID, b.NewReplicasOnBroker)
		}
	}
	d, err = Check(st, Request{Operation: CreateTopic, Topic: "x", Partitions: 1, ReplicationFactor: 3}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range d.Brokers {
		if b.NewReplicasOnBroker != 1 {
			t.Fatalf("broker %d new replicas = %d, want 1 (one partition)", *b.BrokerID, b.NewReplicasOnBroker)
		}
	}
}

func TestCheckInvalid(t *testing.T) {
	st := twoBrokerState(t)
	tests := []struct {
		name string
		req  Request
	}{
		{"no topic", Request{Operation: CreateTopic}},
		{"topic exists", Request{Operation: CreateTopic, Topic: "big", Partitions: 1}},
		{"unknown topic", Request{Operation: CreatePartitions, Topic: "nope", Partitions: 3}},
		{"count does not grow", Request{Operation: CreatePartitions, Topic: "big", Partitions: 2}},
		{"replication factor above broker count", Request{Operation: CreateTopic, Topic: "a", Partitions: 1, ReplicationFactor: 3}},
		{"unknown broker in assignment", Request{Operation: CreateTopic, Topic: "a", Assignments: map[int32][]int32{0: {9}}}},
		{"bad config", Request{Operation: CreateTopic, Topic: "a", Configs: map[string]string{"retention.bytes": "lots"}}},
		{"bad policy", Request{Operation: CreateTopic, Topic: "a", Configs: map[string]string{"cleanup.policy": "shred"}}},
		{"bad operation", Request{Operation: "delete_topic", Topic: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Check(st, tt.req, Config{}); !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

// Kafka's internal topics are admitted even over the limit.
func TestCheckInternalTopicAdmitted(t *testing.T) {
	d, err := Check(offline(gib, gib), Request{Operation: CreateTopic, Topic: "__consumer_offsets", Partitions: 50,
		Configs: map[string]string{"cleanup.policy": "compact"}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || !d.Cluster.OverLimit || d.Cluster.RequestedBytes != 50*gib {
		t.Fatalf("decision %+v", d)
	}
}

// R8.4: the guard's ownership topic is admitted even over the limit:
// write protection never waits for admission.
func TestCheckOwnershipTopicAdmitted(t *testing.T) {
	req := Request{Operation: CreateTopic, Topic: "__kafka_disk_guard_protection", Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{"cleanup.policy": "compact"}}
	d, err := Check(offline(gib, gib), req, Config{ExemptTopics: []string{"__kafka_disk_guard_protection"}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || !d.Cluster.OverLimit {
		t.Fatalf("R8.4/decision %+v", d)
	}
	if d, err = Check(offline(gib, gib), req, Config{}); err != nil || d.Allowed {
		t.Fatalf("admitted without being exempt: %+v %v", d, err)
	}
}

func TestNewState(t *testing.T) {
	info := ClusterInfo{
		BrokerConfig: map[string]string{"log.retention.hours": "24", "log.segment.bytes": "104857600"},
		Brokers: []BrokerInfo{
			{ID: 2, LogDirs: []LogDirInfo{{Path: "/a", TotalBytes: 5 * gib}, {Path: "/b", TotalBytes: 5 * gib,
				ReplicaBytes: map[TopicPartition]int64{{"unbounded", 0}: 3 * gib}}}},
			{ID: 1, LogDirs: []LogDirInfo{{Path: "/a", TotalBytes: 10 * gib}}},
		},
		Topics: []TopicInfo{
			{Name: "compacted", Configs: map[string]string{"cleanup.policy": "compact"},
				Partitions: []PartitionInfo{{0, []int32{1, 2}}}},
			{Name: "unbounded", Configs: map[string]string{"retention.bytes": "-1", "segment.bytes": "104857600", "segment.index.bytes": "0"},
				Partitions: []PartitionInfo{{0, []int32{2, 1}}}},
		},
	}
	t.Run("log dirs total bytes", func(t *testing.T) {
		st, err := NewState(info, Config{CompactFlatBytes: 2 * gib})
		if err != nil {
			t.Fatal(err)
		}
		if st.Defaults.RetentionMs != 24*3600*1000 || st.Defaults.SegmentBytes != 100*mib {
			t.Fatalf("defaults %+v", st.Defaults)
		}
		// broker 1: compact 2 GiB + unbounded one segment 100 MiB; broker 2: 2 GiB + 3 GiB on disk.
		want := []BrokerState{{1, 10 * gib, StorageLogDirs, 2*gib + 100*mib}, {2, 10 * gib, StorageLogDirs, 5 * gib}}
		for i, b := range st.Brokers {
			if b != want[i] {
				t.Fatalf("broker %d = %+v, want %+v", i, b, want[i])
			}
		}
		if st.ReservedBytes != 7*gib+100*mib || st.StorageBytes != 20*gib {
			t.Fatalf("totals %d / %d", st.ReservedBytes, st.StorageBytes)
		}
		if st.Topics["compacted"].ReservedBytes != 4*gib {
			t.Fatalf("compacted %d", st.Topics["compacted"].ReservedBytes)
		}
	})
	t.Run("configured capacity", func(t *testing.T) {
		st, err := NewState(info, Config{BrokerStorageBytes: 50 * gib})
		if err != nil {
			t.Fatal(err)
		}
		if st.StorageBytes != 100*gib || st.Brokers[0].StorageBasis != StorageConfigured {
			t.Fatalf("state %+v", st)
		}
	})
	t.Run("unknown storage", func(t *testing.T) {
		bad := info
		bad.Brokers = []BrokerInfo{{ID: 1, LogDirs: []LogDirInfo{{Path: "/a", TotalBytes: -1}}}}
		if _, err := NewState(bad, Config{}); !errors.Is(err, ErrNoStorage) {
			t.Fatalf("err = %v, want ErrNoStorage", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{LimitPercent: -1}, {LimitPercent: 101}, {CompactFlatBytes: -1}, {BrokerStorageBytes: -5}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}
