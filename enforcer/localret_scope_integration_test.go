//go:build integration

package enforcer_test

import (
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// R7.4 on a real 3-node cluster: the replicas a lowered local retention
// reaches, as the plan and `protection status` name them, are the
// cluster's metadata: every replica of every partition, on every broker
// holding one (not only the guarded broker's partitions).
func TestR7_4TopicReplicasFromTheClusterMetadata(t *testing.T) {
	c := sharedCluster(t)
	c.CreateTopicAssigned(t, "reach-spread", [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	c.CreateTopicAssigned(t, "reach-one", [][]int32{{2}, {2}}, nil)
	admin := clusterAdmin(t, c, "__kdg_test_reach")
	got, err := admin.TopicReplicas(t.Context(), []string{"reach-spread", "reach-one", "reach-missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]enforcer.TopicReplicas{
		"reach-spread": {Partitions: 3, Replicas: 6, Brokers: 3},
		"reach-one":    {Partitions: 2, Replicas: 2, Brokers: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("R7.4/replicas %+v, want %+v (a missing topic left out)", got, want)
	}
	for topic, w := range want {
		if got[topic] != w {
			t.Errorf("R7.4/%s: %+v, want %+v", topic, got[topic], w)
		}
	}
}
