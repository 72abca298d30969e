package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// R3.8: the plan's report: every broker before and after, the moves, the
// brokers left over the target and why, the reassignment and rollback JSON.
func TestWritePlanR38(t *testing.T) {
	const gib = int64(1) << 30
	c := relief.Cluster{
		Brokers: []relief.Broker{
			{ID: 1, Rack: "a", CapacityBytes: 100 * gib, UsedBytes: 90 * gib},
			{ID: 2, Rack: "b", CapacityBytes: 100 * gib, UsedBytes: 95 * gib},
			{ID: 3, Rack: "a", CapacityBytes: 100 * gib, UsedBytes: 10 * gib},
			{ID: 4},
		},
		Partitions: []relief.Partition{
			{Topic: "orders", Partition: 0, Replicas: []int32{2, 1}, Leader: 2, Sizes: map[int32]int64{1: 20 * gib, 2: 20 * gib}},
		},
	}
	p := relief.Compute(c, relief.Config{Band: 0.85, Target: 0.75})
	var b bytes.Buffer
	if err := writePlan(&b, p, 85, 75); err != nil {
		t.Fatal(err)
	}
	// Columns compared with their spacing collapsed.
	got := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"relief plan: brokers at or above 85% give up replicas until at or under 75%",
		"1       a     100.00 GiB  90.00 GiB   90.0%      70.00 GiB   70.0%",
		"3       a     100.00 GiB  10.00 GiB   10.0%      30.00 GiB   30.0%",
		"4       -     unknown     0 B         -          0 B         -",
		"orders  0          1     3   20.00 GiB  [2 1]     [2 3]",
		"broker 2 stays over 75%: it leads (or is the preferred leader of) every replica it holds",
		`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3]}]}`,
		`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,1]}]}`,
	} {
		if want = strings.Join(strings.Fields(want), " "); !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	path := filepath.Join(t.TempDir(), "relief.json")
	if err := writePlanFiles(path, p); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{path: `"replicas":[2,3]`, strings.TrimSuffix(path, ".json") + ".rollback.json": `"replicas":[2,1]`} {
		if raw, err := os.ReadFile(f); err != nil || !strings.Contains(string(raw), want) {
			t.Errorf("%s: %s %v, want %s", f, raw, err, want)
		}
	}
}

func TestFirstPurgeBand(t *testing.T) {
	for _, tc := range []struct {
		profile string
		want    float64
	}{{enforcer.ProfileCloud, 0.85}, {enforcer.ProfileLocal, 0.83}} {
		if got, ok := firstPurgeBand(enforcer.Config{Profile: tc.profile}); !ok || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.profile, got, ok, tc.want)
		}
	}
	if _, ok := firstPurgeBand(enforcer.Config{Profile: enforcer.ProfileServerless}); ok {
		t.Error("serverless has no purge band")
	}
}
