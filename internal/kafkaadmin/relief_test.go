package kafkaadmin

import (
	"slices"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// The throttle a plan sets is kafka-reassign-partitions.sh's: rates on
// every broker of the old and new replicas, on each topic the leader side
// on every current replica and the follower side on the new ones.
func TestThrottleOfR38(t *testing.T) {
	plan := relief.Plan{Moves: []relief.Move{
		{Topic: "a", Partition: 0, From: 1, To: 3, Replicas: []int32{2, 1}, NewReplicas: []int32{2, 3}},
		{Topic: "a", Partition: 4, From: 1, To: 5, Replicas: []int32{4, 1}, NewReplicas: []int32{4, 5}},
		{Topic: "b", Partition: 1, From: 2, To: 3, Replicas: []int32{1, 2}, NewReplicas: []int32{1, 3}},
	}}
	th := throttleOf(plan)
	if want := []int32{1, 2, 3, 4, 5}; !slices.Equal(th.brokers, want) {
		t.Errorf("brokers %v, want %v", th.brokers, want)
	}
	if got, want := strings.Join(th.leader["a"], ","), "0:2,0:1,4:4,4:1"; got != want {
		t.Errorf("a leader throttled replicas %q, want %q", got, want)
	}
	if got, want := strings.Join(th.follower["a"], ","), "0:3,4:5"; got != want {
		t.Errorf("a follower throttled replicas %q, want %q", got, want)
	}
	if got, want := strings.Join(th.follower["b"], ","), "1:3"; got != want {
		t.Errorf("b follower throttled replicas %q, want %q", got, want)
	}
	cmds := ThrottleCommands(plan, "k:9092")
	if len(cmds) != 7 || !strings.Contains(cmds[0], "--entity-type brokers --entity-name 1 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate") ||
		!strings.Contains(cmds[6], "--entity-type topics --entity-name b --delete-config leader.replication.throttled.replicas,follower.replication.throttled.replicas") {
		t.Errorf("commands:\n%s", strings.Join(cmds, "\n"))
	}
}
