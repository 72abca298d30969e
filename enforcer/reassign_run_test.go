package enforcer

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { return c.t }

// fakeReassign is a cluster of three brokers where broker 1 follows
// partitions of topic t led by broker 2, and broker 3 is empty.
type fakeReassign struct {
	*fakeConfigs
	events    *[]string
	busy      []string
	submitted []relief.Move
}

func (f *fakeReassign) ReadCluster(context.Context, int64) (relief.Cluster, error) {
	const gib = 1 << 30
	c := relief.Cluster{Brokers: []relief.Broker{{ID: 1, CapacityBytes: gib, UsedBytes: 85 * gib / 100},
		{ID: 2, CapacityBytes: gib, UsedBytes: 40 * gib / 100}, {ID: 3, CapacityBytes: gib, UsedBytes: 10 * gib / 100}}}
	for p := int32(0); p < 4; p++ {
		c.Partitions = append(c.Partitions, relief.Partition{Topic: "t", Partition: p, Replicas: []int32{2, 1}, Leader: 2,
			Sizes: map[int32]int64{1: 100 << 20, 2: 100 << 20}})
	}
	return c, nil
}
func (f *fakeReassign) AnyReassignment(context.Context) ([]string, error) { return f.busy, nil }
func (f *fakeReassign) Reassigning(_ context.Context, parts []string) ([]string, error) {
	var out []string
	for _, p := range parts {
		for _, b := range f.busy {
			if p == b {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
func (f *fakeReassign) Reassign(_ context.Context, plan relief.Plan) error {
	*f.events = append(*f.events, "reassign")
	f.submitted = append(f.submitted, plan.Moves...)
	for _, m := range plan.Moves {
		f.busy = append(f.busy, m.Topic+"/"+strconv.Itoa(int(m.Partition)))
	}
	return nil
}
func (f *fakeReassign) SetThrottleConfig(ctx context.Context, v ThrottleConfigValue) error {
	*f.events = append(*f.events, "set "+v.Key)
	return f.fakeConfigs.SetThrottleConfig(ctx, v)
}

type loggingStore struct {
	*fakeReassignStore
	events *[]string
}

func (s loggingStore) StoreReassign(ctx context.Context, c ledger.ReassignClaim) error {
	*s.events = append(*s.events, "store")
	return s.fakeReassignStore.StoreReassign(ctx, c)
}

type fakeMoveEvidence struct{ dir string }

func (e fakeMoveEvidence) ClusterID(context.Context) (string, error) { return "c", nil }
func (e fakeMoveEvidence) IdentityEvidence(context.Context, int32) (agent.IdentityEvidence, error) {
	return agent.IdentityEvidence{ClusterID: "c", NodeID: 1, LogDirs: []agent.BrokerLogDir{{Path: e.dir, TotalBytes: -1, UsableBytes: -1}}}, nil
}

type fixedSnap struct{ s *agent.Snapshot }

func (f fixedSnap) Snapshot() *agent.Snapshot { return f.s }
func (f fixedSnap) Updated() <-chan struct{}  { return nil }

func reassignFixture(t *testing.T, growth float64) (*Reassigner, *fakeReassign, *fakeReassignStore, *stepClock, *[]string, *bytes.Buffer) {
	t.Helper()
	const gib = 1 << 30
	ld := agent.LogDir{Path: "/data", BrokerID: 1, ClusterID: "c",
		Usage: agent.Usage{CapacityBytes: gib, UsedBytes: 80 * gib / 100, AvailableBytes: 20 * gib / 100, Basis: agent.CapacityConfigured}}
	snap := agent.BuildSnapshot(time.Unix(0, 0), []agent.LogDir{ld}, agent.ConfigSet{Defaults: agent.DefaultTopicConfig()}, agent.Health{})
	events := &[]string{}
	admin := &fakeReassign{fakeConfigs: &fakeConfigs{v: map[string]string{}}, events: events}
	st := &fakeReassignStore{recs: ledger.NewRecords()}
	clock := &stepClock{t: time.Unix(1000, 0)}
	var logs bytes.Buffer
	id := int32(1)
	r, err := NewReassigner(Config{Enabled: true, BrokerID: &id, Interval: 10 * time.Second,
		Protection: ProtectionConfig{LeaseDuration: time.Minute},
		Relief:     ReliefConfig{Reassign: true, ReassignBytesPerSecond: 10 << 20}},
		slog.New(slog.NewJSONHandler(&logs, nil)), prometheus.NewRegistry(),
		ReassignerDeps{Snapshots: fixedSnap{&snap}, Admin: admin, Store: loggingStore{st, events}, Evidence: fakeMoveEvidence{"/data"},
			Growth: func(*agent.Snapshot) map[string]float64 { return map[string]float64{"/data": growth} }, Clock: clock, Instance: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	return r, admin, st, clock, events, &logs
}

// R3.8: with enforcer.relief.reassign on, a log dir in the move band with
// no second dir gets a reassignment off the broker: the claim is recorded
// before any throttle value is set, followers move (leaders kept), the
// claim is renewed while Kafka reassigns and released (values removed,
// claim gone) once it is done.
func TestR3_8ReassignerClaimsBeforeSettingAndReleasesAfter(t *testing.T) {
	r, admin, st, clock, events, logs := reassignFixture(t, 0)
	ctx := context.Background()
	if err := r.Pass(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if len(*events) < 3 || (*events)[0] != "store" || !strings.HasPrefix((*events)[1], "set ") || (*events)[len(*events)-1] != "reassign" {
		t.Fatalf("order of calls %v, want the claim first, then the throttle, then the reassignment", *events)
	}
	if len(admin.submitted) == 0 {
		t.Fatal("nothing reassigned")
	}
	for _, m := range admin.submitted {
		if m.From != 1 || m.To != 3 || m.NewReplicas[0] != 2 {
			t.Errorf("move %+v: want a follower of broker 1 to broker 3, leader 2 kept", m)
		}
	}
	c, ok := st.recs.Reassigns["broker-1"]
	if !ok || len(c.Partitions) != len(admin.submitted) {
		t.Fatalf("claim %+v", st.recs.Reassigns)
	}
	if len(admin.v) == 0 {
		t.Fatal("no throttle set")
	}
	clock.t = clock.t.Add(30 * time.Second)
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := st.recs.Reassigns["broker-1"]; !got.Renewed.Equal(clock.t) {
		t.Errorf("claim not renewed while the reassignment runs: %v", got.Renewed)
	}
	admin.busy = nil // Kafka is done
	clock.t = clock.t.Add(10 * time.Second)
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.recs.Reassigns["broker-1"]; ok || len(admin.v) != 0 {
		t.Fatalf("after the reassignment: claim %v, values %v", st.recs.Reassigns, admin.v)
	}
	if !strings.Contains(logs.String(), "reassignment finished, replication throttle removed") {
		t.Errorf("no finish line:\n%s", logs)
	}
}

// R3.8: a reassignment that would end after the log dir reaches the purge
// band at its growth is not started; neither is one while another owner
// holds a claim.
func TestR3_8ReassignerSkipsTooSlowAndBusy(t *testing.T) {
	r, admin, st, _, _, logs := reassignFixture(t, 0)
	st.recs.Reassigns["cli-host"] = ledger.ReassignClaim{Owner: "cli-host", Renewed: time.Unix(1000, 0), LeaseMs: 60000}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(admin.submitted) != 0 || !strings.Contains(logs.String(), `"reason":"busy"`) {
		t.Fatalf("started while another claim is held: %v\n%s", admin.submitted, logs)
	}
	// 80% of 1 GiB growing 10 MiB/s reaches the cloud profile's purge band
	// (85%) in 5 s; the first copy takes 10 s at 10 MiB/s.
	r, admin, _, _, _, logs = reassignFixture(t, 10<<20)
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(admin.submitted) != 0 || !strings.Contains(logs.String(), `"reason":"too_slow"`) {
		t.Fatalf("started a reassignment that ends after the purge band: %v\n%s", admin.submitted, logs)
	}
}

// R3.8: a peer's replication throttle claim unrenewed for its lease is
// restored by another agent, but only once none of its partitions is
// being reassigned (lifting earlier would unthrottle the copy); a value
// an operator changed since stays.
func TestR3_8ReassignerRestoresAPeersClaimAfterTheLeaseOnceDone(t *testing.T) {
	r, admin, st, clock, _, logs := reassignFixture(t, 0)
	r.cfg.Relief.Reassign = false // only the peer's claim is in play
	ctx := context.Background()
	entries := []ledger.ThrottleEntry{{Resource: ledger.ResourceBroker, Name: "2", Key: LeaderThrottleRate, Value: "100"},
		{Resource: ledger.ResourceBroker, Name: "3", Key: FollowerThrottleRate, Value: "100"}}
	admin.v["broker/2/"+LeaderThrottleRate] = "100"
	admin.v["broker/3/"+FollowerThrottleRate] = "999" // the operator's since
	st.recs.Reassigns["cli-host"] = ledger.ReassignClaim{Owner: "cli-host", Entries: entries, Partitions: []string{"t/0"},
		Renewed: clock.t, LeaseMs: 60000}
	admin.busy = []string{"t/0"}
	for range 8 { // 80 s: past the lease, the reassignment still running
		if err := r.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		clock.t = clock.t.Add(10 * time.Second)
	}
	if _, ok := st.recs.Reassigns["cli-host"]; !ok || admin.v["broker/2/"+LeaderThrottleRate] != "100" {
		t.Fatalf("restored while its partition is still being reassigned: %v %v", st.recs.Reassigns, admin.v)
	}
	admin.busy = nil
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.recs.Reassigns["cli-host"]; ok {
		t.Fatalf("claim left once done and past the lease\n%s", logs)
	}
	if _, ok := admin.v["broker/2/"+LeaderThrottleRate]; ok || admin.v["broker/3/"+FollowerThrottleRate] != "999" {
		t.Fatalf("values after the peer's restore: %v (want the guard's gone, the operator's kept)", admin.v)
	}
}
