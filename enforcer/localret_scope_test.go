package enforcer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// replicaAdmin is the fake admin with the cluster's metadata of replicas.
type replicaAdmin struct {
	*fakeAdmin
	replicas map[string]TopicReplicas
	asked    [][]string
}

func (r *replicaAdmin) TopicReplicas(_ context.Context, topics []string) (map[string]TopicReplicas, error) {
	r.asked = append(r.asked, topics)
	out := map[string]TopicReplicas{}
	for _, t := range topics {
		if v, ok := r.replicas[t]; ok {
			out[t] = v
		}
	}
	return out, nil
}

// R7.4: the plan's lowering names its cluster-wide reach, from the
// cluster's metadata: observe mode's "would lower local retention" line
// and enforcing's "local retention lowered" line say how many replicas on
// how many brokers the topic's value reaches, beside this broker's bytes.
func TestR7_4LoweringNamesItsClusterWideReach(t *testing.T) {
	for _, enforcing := range []bool{false, true} {
		var logs bytes.Buffer
		f := &replicaAdmin{fakeAdmin: newFakeAdmin(tieredSnap(870)),
			replicas: map[string]TopicReplicas{"tiered": {Partitions: 2, Replicas: 6, Brokers: 3}}}
		clock := &clockAt{t0}
		src := &staticSource{snap: tieredSnap(870), ch: make(chan struct{}, 1)}
		cfg := Config{Enabled: enforcing, Interval: time.Second, BrokerID: new(int32(1)), Purge: lenientPurge}
		e, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry(),
			Deps{Snapshots: src, Admin: f, Clock: clock, Evidence: newFakeEvidence(tieredSnap(870))})
		if err != nil {
			t.Fatal(err)
		}
		passAt(t, e, clock, tieredSnap(870))
		msg := map[bool]string{false: `msg="would lower local retention"`, true: `msg="local retention lowered"`}[enforcing]
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, msg) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("R7.4/enforcing=%v: no %s line in\n%s", enforcing, msg, logs.String())
		}
		for _, w := range []string{"topic=tiered", "scope=cluster", "replicas=6", "brokers=3", "bytes="} {
			if !strings.Contains(line, w) {
				t.Errorf("R7.4/enforcing=%v: %q missing from %s", enforcing, w, line)
			}
		}
		if len(f.asked) == 0 || !strings.Contains(strings.Join(f.asked[0], ","), "tiered") {
			t.Errorf("R7.4/replicas asked for %v", f.asked)
		}
	}
}

// R7.4: protection status shows each lowered topic's replicas cluster-wide.
func TestR7_4StatusShowsClusterWideReach(t *testing.T) {
	recs := ledger.NewRecords()
	recs.Agents[1] = Record{BrokerID: 1, Owned: []Owned{{Kind: OwnedTopicConfig, Topic: "tiered", Key: LocalRetentionBytesKey, Value: "400"}}}
	st := ledger.BuildStatus(ledger.StatusInput{Records: recs, Now: t0, TopicConfigs: map[string]*string{"tiered": strPtr("400")},
		Replicas: map[string]TopicReplicas{"tiered": {Partitions: 2, Replicas: 6, Brokers: 3}}})
	if len(st.Brokers) != 1 || len(st.Brokers[0].Configs) != 1 {
		t.Fatalf("status %+v", st)
	}
	if r := st.Brokers[0].Configs[0].Replicas; r == nil || r.Replicas != 6 || r.Brokers != 3 {
		t.Fatalf("R7.4/status replicas %+v, want 6 on 3 brokers", r)
	}
}
