package enforcer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// A seeded simulation of the move throttle claim (spec R3.8 with R8.1,
// R8.5, R8.6): three brokers with two log dirs each, one mover per
// broker, an operator who sets the brokers' throttle, a fault injector
// (a call fails before or after taking effect), agents killed and
// restarted from nothing, the clock jumping, disks filling and draining.
// Invariant: once the faults stop and the disks calm down, within a lease
// and three passes every broker's throttle is the operator's last value
// (or none) and no claim is left; and no value the operator set is ever
// replaced by anything but the guard's own rate while a claim made after
// it is held.

var throttleSeed = flag.Int64("throttle-seed", -1, "run one seed of TestR3_8ThrottleClaimSimulation")

type throttleWorld struct {
	rng    *rand.Rand
	now    time.Time
	faults bool
	// Each broker's own dynamic throttle, the operator's last value, the
	// ledger's claims, and moves in flight (passes left).
	value, op map[int32]*string
	claims    map[int32]ledger.ThrottleClaim
	inFlight  map[int32]int
	full      map[int32]bool
	trace     []string
}

var errInjected = errors.New("injected fault")

// fault decides a call's fate: before (fails, no effect), after (takes
// effect, then fails), or none.
func (w *throttleWorld) fault() (before, after bool) {
	if !w.faults {
		return false, false
	}
	switch r := w.rng.IntN(20); {
	case r == 0:
		return true, false
	case r == 1:
		return false, true
	}
	return false, false
}

// simAgent is one broker's mover and its view of the world.
type simAgent struct {
	w  *throttleWorld
	id int32
}

func (a simAgent) Now() time.Time { return a.w.now }
func (a simAgent) Snapshot() *agent.Snapshot {
	used := uint64(600)
	if a.w.full[a.id] {
		used = 800
	}
	p := fmt.Sprintf("/b%d", a.id)
	return &agent.Snapshot{Time: a.w.now, Defaults: agent.DefaultTopicConfig(), LogDirs: []agent.LogDir{
		{Path: p + "/a", BrokerID: a.id, ClusterID: "c", Usage: agent.Usage{CapacityBytes: 1000 * mib, UsedBytes: used * mib},
			Partitions: []*agent.Partition{{Topic: "t", Kind: agent.KindLive, DiskBytes: 150 * mib}}},
		{Path: p + "/b", BrokerID: a.id, ClusterID: "c", Usage: agent.Usage{CapacityBytes: 1000 * mib, UsedBytes: 100 * mib}},
	}}
}
func (a simAgent) Updated() <-chan struct{}                  { return nil }
func (a simAgent) ClusterID(context.Context) (string, error) { return "c", nil }
func (a simAgent) IdentityEvidence(context.Context, int32) (agent.IdentityEvidence, error) {
	p := fmt.Sprintf("/b%d", a.id)
	b := agent.BrokerLogDir{Path: p + "/b"}
	if a.w.inFlight[a.id] > 0 {
		b.Future = []agent.TopicPartition{{Topic: "t"}}
	}
	a0 := agent.BrokerLogDir{Path: p + "/a", Partitions: []agent.TopicPartition{{Topic: "t"}}}
	return agent.IdentityEvidence{ClusterID: "c", NodeID: a.id, LogDirs: []agent.BrokerLogDir{a0, b}}, nil
}
func (a simAgent) Move(_ context.Context, id int32, ms []Move) (map[string]error, error) {
	before, after := a.w.fault()
	if before {
		return nil, errInjected
	}
	a.w.inFlight[id] = 1 + a.w.rng.IntN(3)
	if after {
		return nil, errInjected
	}
	return map[string]error{}, nil
}
func (a simAgent) Throttle(_ context.Context, id int32) (string, bool, error) {
	if before, _ := a.w.fault(); before {
		return "", false, errInjected
	}
	if v := a.w.value[id]; v != nil {
		return *v, true, nil
	}
	return "", false, nil
}
func (a simAgent) SetThrottle(_ context.Context, id int32, v string, set bool) error {
	before, after := a.w.fault()
	if before {
		return errInjected
	}
	if set {
		a.w.value[id] = &v
	} else {
		a.w.value[id] = nil
	}
	a.w.trace = append(a.w.trace, fmt.Sprintf("agent %d sets broker %d to %s", a.id, id, ledger.ShowValue(a.w.value[id])))
	if after {
		return errInjected
	}
	return nil
}
func (a simAgent) LoadRecords(context.Context) (Records, error) {
	if before, _ := a.w.fault(); before {
		return ledger.NewRecords(), errInjected
	}
	rs := ledger.NewRecords()
	for k, v := range a.w.claims {
		rs.Throttles[k] = v
	}
	return rs, nil
}
func (a simAgent) StoreThrottle(_ context.Context, c ledger.ThrottleClaim) error {
	before, after := a.w.fault()
	if before {
		return errInjected
	}
	a.w.claims[c.BrokerID] = c
	a.w.trace = append(a.w.trace, fmt.Sprintf("agent %d claims broker %d: value %s orig %s releasing %v", a.id, c.BrokerID, c.Value, ledger.ShowValue(c.Orig), c.Releasing))
	if after {
		return errInjected
	}
	return nil
}
func (a simAgent) DeleteThrottle(_ context.Context, id int32) error {
	before, after := a.w.fault()
	if before {
		return errInjected
	}
	delete(a.w.claims, id)
	a.w.trace = append(a.w.trace, fmt.Sprintf("agent %d removes broker %d's claim", a.id, id))
	if after {
		return errInjected
	}
	return nil
}

func runThrottleSeed(seed int64) error {
	w := &throttleWorld{rng: rand.New(rand.NewPCG(uint64(seed), 22)), now: time.Unix(1.8e9, 0), faults: true,
		value: map[int32]*string{}, op: map[int32]*string{}, claims: map[int32]ledger.ThrottleClaim{},
		inFlight: map[int32]int{}, full: map[int32]bool{}}
	movers := map[int32]*Mover{}
	start := func(id int32) {
		b := id
		a := simAgent{w, id}
		mv, err := NewMover(Config{Enabled: true, BrokerID: &b}, slog.New(slog.NewTextHandler(io.Discard, nil)),
			prometheus.NewRegistry(), MoverDeps{Snapshots: a, Admin: a, Store: a, Evidence: a, Clock: a, Instance: strconv.Itoa(int(id))})
		if err != nil {
			panic(err)
		}
		movers[id] = mv
	}
	for id := int32(1); id <= 3; id++ {
		start(id)
	}
	pass := func(id int32) {
		if movers[id] != nil {
			movers[id].Pass(context.Background()) //nolint:errcheck // faults are expected
		}
		if w.inFlight[id] > 0 {
			if w.inFlight[id]--; w.inFlight[id] == 0 {
				w.full[id] = false // the swap frees the source
			}
		}
	}
	for step := 0; step < 200; step++ {
		id := int32(1 + w.rng.IntN(3))
		switch r := w.rng.IntN(100); {
		case r < 55:
			pass(id)
		case r < 62:
			movers[id] = nil // killed
			w.trace = append(w.trace, fmt.Sprintf("agent %d killed", id))
		case r < 72:
			if movers[id] == nil {
				start(id)
				w.trace = append(w.trace, fmt.Sprintf("agent %d restarted", id))
			}
		case r < 80:
			// The operator sets a value of its own (or removes it).
			if w.rng.IntN(3) == 0 {
				w.value[id], w.op[id] = nil, nil
			} else {
				v := strconv.Itoa(1000 + w.rng.IntN(1000))
				w.value[id], w.op[id] = &v, &v
			}
			w.trace = append(w.trace, fmt.Sprintf("operator sets broker %d to %s", id, ledger.ShowValue(w.op[id])))
		case r < 90:
			w.full[id] = !w.full[id]
		case r < 95:
			w.now = w.now.Add(time.Duration(w.rng.IntN(90)) * time.Second) // a jump, up to more than a lease
		default:
			w.now = w.now.Add(10 * time.Second)
		}
	}
	// Quiet: no faults, calm disks, every agent back (a killed one may
	// stay dead: a peer restores its claim after the lease).
	w.faults = false
	dead := int32(1 + w.rng.IntN(3))
	for id := int32(1); id <= 3; id++ {
		w.full[id] = false
		if movers[id] == nil && id != dead {
			start(id)
		}
	}
	lease := DefaultLeaseDuration
	for t := time.Duration(0); t <= lease+3*DefaultInterval+30*time.Second; t += DefaultInterval {
		w.now = w.now.Add(DefaultInterval)
		for id := int32(1); id <= 3; id++ {
			pass(id)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if ledger.ShowValue(w.value[id]) != ledger.ShowValue(w.op[id]) {
			return fmt.Errorf("broker %d's throttle is %s, the operator's %s; last steps:\n%s", id, ledger.ShowValue(w.value[id]), ledger.ShowValue(w.op[id]),
				strings.Join(w.trace[max(0, len(w.trace)-25):], "\n"))
		}
	}
	if len(w.claims) > 0 {
		return fmt.Errorf("claims left: %v", w.claims)
	}
	return nil
}

func TestR3_8ThrottleClaimSimulation(t *testing.T) {
	seeds := 500
	if testing.Short() {
		seeds = 200
	}
	first := int64(0)
	if *throttleSeed >= 0 {
		first, seeds = *throttleSeed, 1
	}
	start := time.Now()
	for seed := first; seed < first+int64(seeds); seed++ {
		if err := runThrottleSeed(seed); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./enforcer -run TestR3_8ThrottleClaimSimulation -throttle-seed=%d", seed, err, seed)
		}
	}
	t.Logf("%d seeds in %s", seeds, time.Since(start).Round(time.Millisecond))
}
