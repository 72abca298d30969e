package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func identityDir(path, cluster string, node int32, total uint64, parts ...string) LogDir {
	d := LogDir{Path: path, ClusterID: cluster, BrokerID: node, Filesystem: Filesystem{Known: true, TotalBytes: total}}
	for _, name := range parts {
		topic, part, kind, ok := ParsePartitionDirName(name)
		if !ok {
			panic(name)
		}
		d.Partitions = append(d.Partitions, &Partition{Topic: topic, Partition: part, Kind: kind, Dir: name})
	}
	return d
}

func tps(names ...string) []TopicPartition {
	var out []TopicPartition
	for _, n := range names {
		topic, part, _, ok := ParsePartitionDirName(n)
		if !ok {
			panic(n)
		}
		out = append(out, TopicPartition{Topic: topic, Partition: part})
	}
	return out
}

// manyParts names n partitions of topic t.
func manyParts(t string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", t, i)
	}
	return out
}

func TestCheckIdentity(t *testing.T) {
	const gib = 1 << 30
	ev := IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{
		{Path: "/var/lib/kafka/data-0", TotalBytes: 100 * gib, Partitions: tps("orders-0", "orders-1", "payments-0")},
		{Path: "/var/lib/kafka/data-1", TotalBytes: 100 * gib, Partitions: tps("orders-2", "clicks-0"), Future: tps("payments-1")},
	}}
	kubelet := "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/pvc-%d/mount/kafka-log1"
	tests := []struct {
		name   string
		dirs   []LogDir
		ev     IdentityEvidence
		want   []IdentityReason
		by     []string
		detail string
	}{
		{"R7.1/same paths (a VM)",
			[]LogDir{identityDir("/var/lib/kafka/data-0", "prod", 1, 100*gib), identityDir("/var/lib/kafka/data-1", "prod", 1, 100*gib)},
			ev, []IdentityReason{IdentityConfirmed, IdentityConfirmed}, []string{"path", "path"}, ""},
		{"R7.1/kubelet paths matched by partitions, -future included",
			[]LogDir{
				identityDir(fmt.Sprintf(kubelet, 1), "prod", 1, 100*gib, "clicks-0", "orders-2", "payments-1.0123456789abcdef0123456789abcdef-future"),
				identityDir(fmt.Sprintf(kubelet, 0), "prod", 1, 100*gib, "orders-0", "orders-1", "payments-0"),
			},
			ev, []IdentityReason{IdentityConfirmed, IdentityConfirmed}, []string{"partitions", "partitions"}, ""},
		{"R7.1/a partition created since the scan is tolerated",
			[]LogDir{identityDir(fmt.Sprintf(kubelet, 0), "prod", 1, 100*gib, "orders-0", "orders-1")},
			ev, []IdentityReason{IdentityConfirmed}, []string{"partitions"}, ""},
		{"R7.1/another cluster's volume (a DR cluster with the same topics)",
			[]LogDir{identityDir(fmt.Sprintf(kubelet, 0), "dr", 1, 100*gib, "orders-0", "orders-1", "payments-0")},
			ev, []IdentityReason{IdentityOtherCluster}, nil, "names cluster dr, connected to prod"},
		{"R7.1/another node's volume holding the same replicas (RF=3)",
			[]LogDir{identityDir(fmt.Sprintf(kubelet, 0), "prod", 2, 100*gib, "orders-0", "orders-1", "payments-0")},
			ev, []IdentityReason{IdentityOtherNode}, nil, "names node 2, guarding node 1"},
		{"R7.1/meta.properties without cluster.id",
			[]LogDir{identityDir("/var/lib/kafka/data-0", "", 1, 100*gib)},
			ev, []IdentityReason{IdentityNoMeta}, nil, "no cluster.id"},
		{"R7.1/unreadable log dir",
			[]LogDir{func() LogDir { d := identityDir("/x", "prod", 1, gib); d.Err = errors.New("gone"); return d }()},
			ev, []IdentityReason{IdentityUnreadable}, nil, "gone"},
		{"R7.1/same partitions on a filesystem of another size",
			[]LogDir{identityDir(fmt.Sprintf(kubelet, 0), "prod", 1, 50*gib, "orders-0", "orders-1", "payments-0")},
			ev, []IdentityReason{IdentityNotConfirmed}, nil, "reports no log dir with its 3 partitions"},
		{"R7.1/partitions the broker does not place here",
			[]LogDir{identityDir(fmt.Sprintf(kubelet, 0), "prod", 1, 100*gib, "orders-0", "x-0", "x-1", "x-2", "x-3")},
			ev, []IdentityReason{IdentityNotConfirmed}, nil, "closest: /var/lib/kafka/data-0 shares 1 partitions, 6 differ"},
		{"R7.1/DescribeLogDirs refused or empty",
			[]LogDir{identityDir("/var/lib/kafka/data-0", "prod", 1, 100*gib, "orders-0")},
			IdentityEvidence{ClusterID: "prod", NodeID: 1}, []IdentityReason{IdentityNotConfirmed}, nil, "its log dirs: )"},
		{"R7.1/the broker has the dir offline",
			[]LogDir{identityDir("/var/lib/kafka/data-0", "prod", 1, 100*gib)},
			IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{{Path: "/var/lib/kafka/data-0", TotalBytes: -1, Err: errors.New("KAFKA_STORAGE_ERROR")}}},
			[]IdentityReason{IdentityBrokerOffline}, []string{"path"}, "offline"},
		{"R7.1/empty dirs matched by size, only when unambiguous",
			[]LogDir{identityDir("/pod/a", "prod", 1, 10*gib), identityDir("/pod/b", "prod", 1, 20*gib)},
			IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{{Path: "/k/0", TotalBytes: 10 * gib}, {Path: "/k/1", TotalBytes: 30 * gib}}},
			[]IdentityReason{IdentityConfirmed, IdentityNotConfirmed}, []string{"size", ""}, ""},
		{"R7.1/two empty broker dirs of one size: ambiguous",
			[]LogDir{identityDir("/pod/a", "prod", 1, 10*gib)},
			IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{{Path: "/k/0", TotalBytes: 10 * gib}, {Path: "/k/1", TotalBytes: 10 * gib}}},
			[]IdentityReason{IdentityNotConfirmed}, nil, ""},
		{"R7.1/a broker dir confirms one guard dir only",
			[]LogDir{identityDir("/pod/a", "prod", 1, 100*gib, "orders-0", "orders-1", "payments-0"), identityDir("/pod/b", "prod", 1, 100*gib, "orders-0", "orders-1", "payments-0")},
			ev, []IdentityReason{IdentityConfirmed, IdentityNotConfirmed}, []string{"partitions", ""}, ""},
		{"R7.1/drift bound: 5% of a large dir",
			[]LogDir{identityDir("/pod/a", "prod", 1, 100*gib, manyParts("big", 97)...)},
			IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{{Path: "/k/0", TotalBytes: 100 * gib, Partitions: tps(manyParts("big", 102)...)}}},
			[]IdentityReason{IdentityConfirmed}, []string{"partitions"}, ""},
		{"R7.1/drift bound exceeded",
			[]LogDir{identityDir("/pod/a", "prod", 1, 100*gib, manyParts("big", 90)...)},
			IdentityEvidence{ClusterID: "prod", NodeID: 1, LogDirs: []BrokerLogDir{{Path: "/k/0", TotalBytes: 100 * gib, Partitions: tps(manyParts("big", 100)...)}}},
			[]IdentityReason{IdentityNotConfirmed}, nil, "shares 90 partitions, 10 differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckIdentity(tt.dirs, tt.ev)
			if len(got) != len(tt.dirs) {
				t.Fatalf("%d results for %d dirs", len(got), len(tt.dirs))
			}
			for i, r := range got {
				if r.Path != tt.dirs[i].Path || r.Reason != tt.want[i] || r.Confirmed() != (tt.want[i] == IdentityConfirmed) {
					t.Errorf("dir %d: %+v, want reason %q", i, r, tt.want[i])
				}
				if tt.by != nil && r.MatchedBy != tt.by[i] {
					t.Errorf("dir %d matched by %q, want %q", i, r.MatchedBy, tt.by[i])
				}
				if r.Confirmed() && r.BrokerPath == "" {
					t.Errorf("dir %d confirmed without a broker path", i)
				}
			}
			if tt.detail != "" && !strings.Contains(got[0].Detail, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", got[0].Detail, tt.detail)
			}
		})
	}
}

func TestGuardedNode(t *testing.T) {
	dirs := []LogDir{
		{Path: "/a", ClusterID: "prod", BrokerID: 1},
		{Path: "/b", ClusterID: "dr", BrokerID: 2},
		{Path: "/c", ClusterID: "prod", BrokerID: 1},
		{Path: "/d", ClusterID: "prod", BrokerID: 3, Err: errors.New("unreadable")},
	}
	if id, err := GuardedNode(dirs, "prod", -1); err != nil || id != 1 {
		t.Errorf("GuardedNode = %d, %v; want 1", id, err)
	}
	if id, err := GuardedNode(dirs, "prod", 7); err != nil || id != 7 {
		t.Errorf("configured: %d, %v", id, err)
	}
	if _, err := GuardedNode(dirs, "other", -1); err == nil || !strings.Contains(err.Error(), "no log dir names cluster other") {
		t.Errorf("no dir of the cluster: %v", err)
	}
	dirs[1].ClusterID = "prod"
	if _, err := GuardedNode(dirs, "prod", -1); !errors.Is(err, ErrIdentityAmbiguous) || !strings.Contains(err.Error(), "[1 2]") {
		t.Errorf("two nodes: %v", err)
	}
}
