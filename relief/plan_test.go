package relief

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const gib = int64(1) << 30

func br(id int32, rack string, capGiB, usedGiB int64) Broker {
	return Broker{ID: id, Rack: rack, CapacityBytes: capGiB * gib, UsedBytes: usedGiB * gib}
}

// pt is a partition of sizeGiB on every replica.
func pt(topic string, n int32, sizeGiB int64, replicas ...int32) Partition {
	sizes := map[int32]int64{}
	for _, r := range replicas {
		sizes[r] = sizeGiB * gib
	}
	return Partition{Topic: topic, Partition: n, Replicas: replicas, Leader: replicas[0], Sizes: sizes}
}

func moves(p Plan) string {
	var s []string
	for _, m := range p.Moves {
		s = append(s, fmt.Sprintf("%s-%d:%d->%d", m.Topic, m.Partition, m.From, m.To))
	}
	return strings.Join(s, " ")
}

// R3.8: the relief plan moves followers off brokers in the band, largest
// first, onto brokers with room, keeping leaders and racks.
func TestComputeR38(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c          Cluster
		cfg        Config
		want       string
		unrelieved []int32
		after      map[int32]int64 // GiB used after, for the brokers named
	}{
		{
			name: "largest follower off the full broker onto the emptiest",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 90), br(2, "", 100, 40), br(3, "", 100, 20)},
				Partitions: []Partition{pt("a", 0, 10, 2, 1), pt("b", 0, 20, 2, 1), pt("c", 0, 5, 3, 1)},
			},
			cfg:   Config{Band: 0.85, Target: 0.75},
			want:  "b-0:1->3",
			after: map[int32]int64{1: 70, 2: 40, 3: 40},
		},
		{
			name: "leaders and preferred leaders stay",
			c: Cluster{
				Brokers: []Broker{br(1, "", 100, 90), br(2, "", 100, 10), br(3, "", 100, 10)},
				// 1 leads a; 1 is the preferred leader of b though 2 leads it now.
				Partitions: []Partition{pt("a", 0, 30, 1, 2), {Topic: "b", Partition: 0, Replicas: []int32{1, 2}, Leader: 2, Sizes: map[int32]int64{1: 30 * gib, 2: 30 * gib}}},
			},
			cfg: Config{Band: 0.85}, want: "", unrelieved: []int32{1},
		},
		{
			name: "never onto a broker that would pass the target",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 90), br(2, "", 100, 70), br(3, "", 100, 74)},
				Partitions: []Partition{pt("a", 0, 10, 2, 1), pt("b", 0, 1, 3, 1), pt("x", 0, 80, 1)},
			},
			// a (10) fits nowhere under 75%; b (1) fits on 2 only (3 holds it).
			cfg: Config{Band: 0.85, Target: 0.75}, want: "b-0:1->2", unrelieved: []int32{1},
		},
		{
			name: "same rack first, then a rack none of the other replicas is on, never a rack they are on",
			c: Cluster{
				Brokers: []Broker{br(1, "r1", 100, 90), br(2, "r2", 100, 10), br(3, "r3", 100, 50), br(4, "r1", 100, 40), br(5, "r2", 100, 0)},
				Partitions: []Partition{
					pt("a", 0, 20, 2, 1), // same rack r1: broker 4 (though 5 has more room)
					pt("b", 0, 10, 3, 1), // 4 would pass 65%: rack r2 (none of b's others), the roomier 5
				},
			},
			cfg: Config{Band: 0.85, Target: 0.65}, want: "a-0:1->4 b-0:1->5",
			after: map[int32]int64{1: 60, 4: 60, 5: 10},
		},
		{
			name: "a rack another replica is on is refused",
			c: Cluster{
				Brokers:    []Broker{br(1, "r1", 100, 90), br(2, "r2", 100, 10), br(3, "r2", 100, 0)},
				Partitions: []Partition{pt("a", 0, 20, 2, 1)},
			},
			cfg: Config{Band: 0.85}, want: "", unrelieved: []int32{1},
		},
		{
			name: "internal and excluded topics stay",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 90), br(2, "", 100, 10), br(3, "", 100, 0)},
				Partitions: []Partition{pt("__consumer_offsets", 0, 20, 2, 1), pt("keep", 0, 20, 2, 1), pt("go", 0, 5, 2, 1)},
			},
			cfg: Config{Band: 0.85, Exclude: []string{"keep"}}, want: "go-0:1->3",
		},
		{
			name: "unknown capacity: neither relieved nor a destination",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 90), {ID: 2, UsedBytes: 0}, {ID: 3, UsedBytes: 99 * gib}},
				Partitions: []Partition{pt("a", 0, 20, 3, 1)},
			},
			cfg: Config{Band: 0.85}, want: "", unrelieved: []int32{1},
		},
		{
			name: "nothing in the band: no moves",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 80), br(2, "", 100, 10)},
				Partitions: []Partition{pt("a", 0, 20, 2, 1)},
			},
			cfg: Config{Band: 0.85}, want: "",
		},
		{
			name: "max moves",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 95), br(2, "", 100, 0), br(3, "", 100, 0)},
				Partitions: []Partition{pt("a", 0, 5, 2, 1), pt("a", 1, 5, 2, 1), pt("a", 2, 5, 2, 1)},
			},
			cfg: Config{Band: 0.85, Target: 0.80, MaxMoves: 2}, want: "a-0:1->3 a-1:1->3", unrelieved: []int32{1},
		},
		{
			name: "two brokers in the band, the fullest first, one partition moved once",
			c: Cluster{
				Brokers:    []Broker{br(1, "", 100, 88), br(2, "", 100, 92), br(3, "", 100, 0), br(4, "", 100, 0)},
				Partitions: []Partition{pt("a", 0, 10, 3, 1, 2), pt("b", 0, 10, 4, 1)},
			},
			cfg: Config{Band: 0.85}, want: "a-0:2->4 b-0:1->3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.c, tc.cfg)
			if got := moves(p); got != tc.want {
				t.Errorf("moves %q, want %q", got, tc.want)
			}
			if !slices.Equal(p.Unrelieved, tc.unrelieved) {
				t.Errorf("unrelieved %v, want %v (why %v)", p.Unrelieved, tc.unrelieved, p.Why)
			}
			for _, id := range p.Unrelieved {
				if p.Why[id] == "" {
					t.Errorf("broker %d unrelieved without a reason", id)
				}
			}
			for _, b := range p.After {
				if want, ok := tc.after[b.ID]; ok && b.UsedBytes != want*gib {
					t.Errorf("broker %d after: %d GiB, want %d", b.ID, b.UsedBytes/gib, want)
				}
			}
			for _, m := range p.Moves {
				if m.NewReplicas[0] != m.Replicas[0] {
					t.Errorf("%s-%d: preferred leader changed %v -> %v", m.Topic, m.Partition, m.Replicas, m.NewReplicas)
				}
			}
		})
	}
}

func TestReassignmentJSON(t *testing.T) {
	p := Compute(Cluster{
		Brokers:    []Broker{br(1, "", 100, 90), br(2, "", 100, 10), br(3, "", 100, 0)},
		Partitions: []Partition{pt("orders", 3, 20, 2, 1)},
	}, Config{Band: 0.85})
	for _, tc := range []struct {
		rollback bool
		want     string
	}{
		{false, `{"version":1,"partitions":[{"topic":"orders","partition":3,"replicas":[2,3]}]}`},
		{true, `{"version":1,"partitions":[{"topic":"orders","partition":3,"replicas":[2,1]}]}`},
	} {
		got, err := p.ReassignmentJSON(tc.rollback)
		if err != nil || string(got) != tc.want {
			t.Errorf("rollback %v: %s %v, want %s", tc.rollback, got, err, tc.want)
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Error(err)
		}
	}
	empty, _ := Plan{}.ReassignmentJSON(false)
	if string(empty) != `{"version":1,"partitions":[]}` {
		t.Errorf("empty plan: %s", empty)
	}
}
