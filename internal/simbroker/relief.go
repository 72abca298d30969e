package simbroker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// The relief rungs' side of the simulated cluster (spec R3.8): broker and
// topic throttle configs, moves between a broker's log dirs
// (AlterReplicaLogDirs) and reassignments across brokers
// (AlterPartitionReassignments, ListPartitionReassignments). A move or a
// reassignment is in flight until its end time passes on the cluster's
// clock; the bytes do not move (the partitions' data stays where the
// cluster model keeps it): what is modelled is the need for a throttle
// and the claims' life around it. For the reassignment planner every
// partition has two replicas, its leader and the next broker, until a
// reassignment changes them. Calls pass through their own Faults (set
// with SetReliefHook), so a simulation adds them without moving the fault
// stream of the other calls.

type reliefState struct {
	faults   Faults
	duration func(kind string) time.Duration
	broker   map[int32]map[string]string  // dynamic broker configs
	topic    map[string]map[string]string // throttle keys of topics
	replicas map[string][]int32           // "topic/partition": replicas after a reassignment
	reassign map[string]inFlight          // ongoing reassignments
	moves    map[int32]map[string]inFlight
	jbod     map[int32]bool // brokers with a second log dir for moves
	// claims: the throttle claims as last folded, from the ownership
	// partition as claimsSig describes it.
	claims    ledger.Records
	claimsSig claimsSig
}

type inFlight struct {
	target []int32 // a reassignment's new replicas
	end    time.Time
}

func (c *Cluster) rs() *reliefState {
	if c.relief == nil {
		c.relief = &reliefState{broker: map[int32]map[string]string{}, topic: map[string]map[string]string{},
			replicas: map[string][]int32{}, reassign: map[string]inFlight{}, moves: map[int32]map[string]inFlight{},
			jbod: map[int32]bool{}, duration: func(string) time.Duration { return time.Minute }}
	}
	return c.relief
}

// SetReliefHook sets the fault hook of the relief calls.
func (c *Cluster) SetReliefHook(h func(who, method string, phase CallPhase) error) {
	c.rs().faults.Hook = h
}

// SetReliefDuration sets how long a move ("move") or a reassignment
// ("reassign") takes, asked at each start.
func (c *Cluster) SetReliefDuration(f func(kind string) time.Duration) { c.rs().duration = f }

// SetJBOD gives broker id a second log dir (its spare one) that moves may
// go to.
func (c *Cluster) SetJBOD(id int32) { c.rs().jbod[id] = true }

// BrokerConfig is broker id's dynamic value of key.
func (c *Cluster) BrokerConfig(id int32, key string) (string, bool) {
	v, ok := c.rs().broker[id][key]
	return v, ok
}

// TopicThrottle is topic's value of a throttle key.
func (c *Cluster) TopicThrottle(topic, key string) (string, bool) {
	v, ok := c.rs().topic[topic][key]
	return v, ok
}

// ThrottleValues is every broker's dynamic throttle values ("broker id
// key" -> value) and every topic's ("topic name key").
func (c *Cluster) ThrottleValues() map[string]string {
	out := map[string]string{}
	r := c.rs()
	for id, m := range r.broker {
		for k, v := range m {
			out[fmt.Sprintf("broker %d %s", id, k)] = v
		}
	}
	for t, m := range r.topic {
		for k, v := range m {
			out["topic "+t+" "+k] = v
		}
	}
	return out
}

// SetThrottleValue sets (or with set false deletes) a broker's
// (resource ledger.ResourceBroker) or topic's config, as an operator's
// kafka-configs.sh does: no faults.
func (c *Cluster) SetThrottleValue(resource, name, key, value string, set bool) {
	r := c.rs()
	var m map[string]string
	switch resource {
	case ledger.ResourceBroker:
		n, _ := strconv.Atoi(name)
		if r.broker[int32(n)] == nil {
			r.broker[int32(n)] = map[string]string{}
		}
		m = r.broker[int32(n)]
	default:
		if r.topic[name] == nil {
			r.topic[name] = map[string]string{}
		}
		m = r.topic[name]
	}
	if set {
		m[key] = value
	} else {
		delete(m, key)
	}
}

// MovesInFlight is how many moves between broker id's log dirs run now.
func (c *Cluster) MovesInFlight(id int32) int {
	n := 0
	for _, f := range c.rs().moves[id] {
		if c.now.Before(f.end) {
			n++
		}
	}
	return n
}

// Reassigning lists the partitions being reassigned now.
func (c *Cluster) Reassigning() []string {
	c.settle()
	return slices.Sorted(maps.Keys(c.rs().reassign))
}

// settle ends the reassignments whose time has come.
func (c *Cluster) settle() {
	r := c.rs()
	for k, f := range r.reassign {
		if !c.now.Before(f.end) {
			r.replicas[k] = f.target
			delete(r.reassign, k)
		}
	}
}

// replicasOf is a partition's replicas: its leader and the next broker,
// unless a reassignment changed them.
func (c *Cluster) replicasOf(p *simPart) []int32 {
	if rs, ok := c.rs().replicas[p.topic.Name+"/"+strconv.Itoa(int(p.id))]; ok {
		return slices.Clone(rs)
	}
	ids := slices.Clone(c.cfg.Brokers)
	slices.Sort(ids)
	i := slices.Index(ids, p.leader)
	return []int32{p.leader, ids[(i+1)%len(ids)]}
}

// ReliefSnapshot is base (broker id's snapshot, Cluster.Snapshot) with
// its second log dir when it has one (SetJBOD): the copies being moved
// into it as -future logs.
func (c *Cluster) ReliefSnapshot(id int32, base *agent.Snapshot) *agent.Snapshot {
	if !c.rs().jbod[id] || base == nil {
		return base
	}
	spare := agent.LogDir{Path: c.SpareLogDir(id), BrokerID: id, ClusterID: c.cfg.ClusterID}
	for k, f := range c.rs().moves[id] {
		if !c.now.Before(f.end) {
			continue
		}
		topic, part := splitTP(k)
		spare.Partitions = append(spare.Partitions, &agent.Partition{Topic: topic, Partition: part, Kind: agent.KindFuture, DiskBytes: 1 << 20})
		spare.DiskBytes += 1 << 20
	}
	spare.Usage = agent.Usage{CapacityBytes: uint64(c.cfg.Capacity), UsedBytes: uint64(spare.DiskBytes),
		AvailableBytes: uint64(c.cfg.Capacity - spare.DiskBytes), Basis: agent.CapacityConfigured}
	s := *base
	s.LogDirs = append(slices.Clone(base.LogDirs), spare)
	return &s
}

func splitTP(k string) (string, int32) {
	i := strings.LastIndexByte(k, '/')
	n, _ := strconv.Atoi(k[i+1:])
	return k[:i], int32(n)
}

// ReliefAdmin is an agent's (or an operator's) view of the relief calls:
// enforcer.MoveAdmin, enforcer.ReassignAdmin, the claim stores and the
// move evidence.
type ReliefAdmin struct {
	c   *Cluster
	Who string
}

var (
	_ enforcer.MoveAdmin     = (*ReliefAdmin)(nil)
	_ enforcer.ReassignAdmin = (*ReliefAdmin)(nil)
	_ enforcer.ThrottleStore = (*ReliefAdmin)(nil)
	_ enforcer.ReassignStore = (*ReliefAdmin)(nil)
	_ enforcer.MoveEvidence  = (*ReliefAdmin)(nil)
)

// ReliefAdmin is who's view of the relief calls.
func (c *Cluster) ReliefAdmin(who string) *ReliefAdmin { return &ReliefAdmin{c: c, Who: who} }

// do runs f between the relief hook's two questions.
func (a *ReliefAdmin) do(ctx context.Context, method string, f func() error) error {
	if err := a.c.rs().faults.before(ctx, a.Who, method); err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	return a.c.rs().faults.after(a.Who, method)
}

func (a *ReliefAdmin) ClusterID(ctx context.Context) (string, error) {
	return a.c.cfg.ClusterID, a.do(ctx, "ClusterID", func() error { return nil })
}

func (a *ReliefAdmin) IdentityEvidence(ctx context.Context, node int32) (agent.IdentityEvidence, error) {
	ev := agent.IdentityEvidence{ClusterID: a.c.cfg.ClusterID, NodeID: node}
	err := a.do(ctx, "IdentityEvidence", func() error {
		n := a.c.brokers[node]
		if n == nil || !n.alive {
			return fmt.Errorf("broker %d: %w", node, ErrNoBroker)
		}
		d := agent.BrokerLogDir{Path: n.dir, TotalBytes: -1, UsableBytes: -1}
		for _, p := range a.c.parts {
			if p.leader == node {
				d.Partitions = append(d.Partitions, agent.TopicPartition{Topic: p.topic.Name, Partition: p.id})
			}
		}
		ev.LogDirs = append(ev.LogDirs, d)
		if a.c.rs().jbod[node] {
			s := agent.BrokerLogDir{Path: a.c.SpareLogDir(node), TotalBytes: -1, UsableBytes: -1}
			for k, f := range a.c.rs().moves[node] {
				if a.c.now.Before(f.end) {
					t, p := splitTP(k)
					s.Future = append(s.Future, agent.TopicPartition{Topic: t, Partition: p})
				}
			}
			ev.LogDirs = append(ev.LogDirs, s)
		}
		return nil
	})
	return ev, err
}

func (a *ReliefAdmin) LoadRecords(ctx context.Context) (ledger.Records, error) {
	var recs ledger.Records
	err := a.do(ctx, "LoadRecords", func() error {
		var err error
		recs, err = a.c.readThrottleClaims()
		return err
	})
	if recs.Throttles == nil {
		recs = ledger.NewRecords()
	}
	return recs, err
}

func (a *ReliefAdmin) store(ctx context.Context, method, key string, value []byte) error {
	return a.do(ctx, method, func() error {
		if !a.c.own.exists {
			return fmt.Errorf("%s: the ownership topic does not exist: %w", method, ErrNoBroker)
		}
		a.c.produce(key, value)
		return nil
	})
}

func (a *ReliefAdmin) StoreThrottle(ctx context.Context, c ledger.ThrottleClaim) error {
	v, err := ledger.EncodeThrottle(c)
	if err != nil {
		return err
	}
	return a.store(ctx, "StoreThrottle", ledger.ThrottleKey(c.BrokerID), v)
}

func (a *ReliefAdmin) DeleteThrottle(ctx context.Context, broker int32) error {
	return a.store(ctx, "DeleteThrottle", ledger.ThrottleKey(broker), nil)
}

func (a *ReliefAdmin) StoreReassign(ctx context.Context, c ledger.ReassignClaim) error {
	v, err := ledger.EncodeReassign(c)
	if err != nil {
		return err
	}
	return a.store(ctx, "StoreReassign", ledger.ReassignKey(c.Owner), v)
}

func (a *ReliefAdmin) DeleteReassign(ctx context.Context, owner string) error {
	return a.store(ctx, "DeleteReassign", ledger.ReassignKey(owner), nil)
}

// Move starts moves between broker's log dirs (AlterReplicaLogDirs).
func (a *ReliefAdmin) Move(ctx context.Context, broker int32, moves []enforcer.Move) (map[string]error, error) {
	out := map[string]error{}
	err := a.do(ctx, "Move", func() error {
		r := a.c.rs()
		if !r.jbod[broker] {
			return fmt.Errorf("broker %d has one log dir", broker)
		}
		if r.moves[broker] == nil {
			r.moves[broker] = map[string]inFlight{}
		}
		for _, m := range moves {
			k := m.Topic + "/" + strconv.Itoa(int(m.Partition))
			if m.To != a.c.SpareLogDir(broker) {
				out[k] = fmt.Errorf("KAFKA_STORAGE_ERROR: no log dir %s", m.To)
				continue
			}
			r.moves[broker][k] = inFlight{end: a.c.now.Add(r.duration("move"))}
		}
		return nil
	})
	return out, err
}

func (a *ReliefAdmin) Throttle(ctx context.Context, broker int32) (string, bool, error) {
	return a.ThrottleConfig(ctx, ledger.ResourceBroker, strconv.Itoa(int(broker)), enforcer.ThrottleKey)
}

func (a *ReliefAdmin) SetThrottle(ctx context.Context, broker int32, value string, set bool) error {
	return a.SetThrottleConfig(ctx, enforcer.ThrottleConfigValue{Resource: ledger.ResourceBroker, Name: strconv.Itoa(int(broker)),
		Key: enforcer.ThrottleKey, Value: value, Set: set})
}

func (a *ReliefAdmin) ThrottleConfig(ctx context.Context, resource, name, key string) (string, bool, error) {
	var v string
	var ok bool
	err := a.do(ctx, "DescribeConfigs", func() error {
		if resource == ledger.ResourceBroker {
			n, err := strconv.Atoi(name)
			if err != nil {
				return err
			}
			v, ok = a.c.BrokerConfig(int32(n), key)
			return nil
		}
		v, ok = a.c.TopicThrottle(name, key)
		return nil
	})
	return v, ok, err
}

func (a *ReliefAdmin) SetThrottleConfig(ctx context.Context, v enforcer.ThrottleConfigValue) error {
	return a.do(ctx, "IncrementalAlterConfigs", func() error {
		a.c.SetThrottleValue(v.Resource, v.Name, v.Key, v.Value, v.Set)
		return nil
	})
}

// ReadCluster is what relief.Compute plans from: every broker's usage,
// every partition's replicas (two each) and sizes.
func (a *ReliefAdmin) ReadCluster(ctx context.Context, capacityBytes int64) (relief.Cluster, error) {
	var out relief.Cluster
	err := a.do(ctx, "ReadCluster", func() error {
		a.c.settle()
		ids := slices.Clone(a.c.cfg.Brokers)
		slices.Sort(ids)
		for _, id := range ids {
			out.Brokers = append(out.Brokers, relief.Broker{ID: id, CapacityBytes: a.c.cfg.Capacity,
				UsedBytes: int64(a.c.Usage(id) * float64(a.c.cfg.Capacity))})
		}
		for _, p := range a.c.parts {
			rs := a.c.replicasOf(p)
			size := p.size()
			sizes := map[int32]int64{}
			for _, r := range rs {
				sizes[r] = size
			}
			out.Partitions = append(out.Partitions, relief.Partition{Topic: p.topic.Name, Partition: p.id,
				Replicas: rs, Leader: p.leader, Sizes: sizes})
		}
		return nil
	})
	return out, err
}

func (a *ReliefAdmin) AnyReassignment(ctx context.Context) ([]string, error) {
	var out []string
	err := a.do(ctx, "ListPartitionReassignments", func() error {
		out = a.c.Reassigning()
		return nil
	})
	return out, err
}

func (a *ReliefAdmin) Reassigning(ctx context.Context, parts []string) ([]string, error) {
	var out []string
	err := a.do(ctx, "ListPartitionReassignments", func() error {
		busy := a.c.Reassigning()
		for _, p := range parts {
			if slices.Contains(busy, p) {
				out = append(out, p)
			}
		}
		return nil
	})
	return out, err
}

// ErrReassignmentInProgress is Kafka's REASSIGNMENT_IN_PROGRESS.
var ErrReassignmentInProgress = errors.New("REASSIGNMENT_IN_PROGRESS")

func (a *ReliefAdmin) Reassign(ctx context.Context, plan relief.Plan) error {
	return a.do(ctx, "AlterPartitionReassignments", func() error {
		a.c.settle()
		r := a.c.rs()
		var errs []error
		for _, m := range plan.Moves {
			k := m.Topic + "/" + strconv.Itoa(int(m.Partition))
			if _, busy := r.reassign[k]; busy {
				errs = append(errs, fmt.Errorf("%s: %w", k, ErrReassignmentInProgress))
				continue
			}
			r.reassign[k] = inFlight{target: slices.Clone(m.NewReplicas), end: a.c.now.Add(r.duration("reassign"))}
		}
		return errors.Join(errs...)
	})
}

// ThrottleClaims reads the throttle claims of the ownership topic
// without faults (for the simulation's invariants).
func (c *Cluster) ThrottleClaims() (ledger.Records, error) { return c.readThrottleClaims() }

// readThrottleClaims is readOwnership for the relief rungs, which read
// only the throttle claims: the agents' records are not decoded (the
// simulation's time goes there otherwise), so Agents and Lifts are empty.
func (c *Cluster) readThrottleClaims() (ledger.Records, error) {
	if !c.own.exists {
		return ledger.NewRecords(), fmt.Errorf("%w: %s", ledger.ErrLedgerMissing, c.cfg.OwnershipTopic)
	}
	if n := len(c.own.partitions); n != 1 {
		return ledger.NewRecords(), fmt.Errorf("%w: topic %s has %d partitions, want 1", ledger.ErrLedgerLost, c.cfg.OwnershipTopic, n)
	}
	part := c.own.partitions[0]
	r := c.rs()
	sig := partSig(part)
	if len(part) > 0 && r.claimsSig == sig {
		return r.claims.Clone(), nil // unchanged since
	}
	out := ledger.NewRecords()
	for i := range part {
		if kv := &part[i]; strings.HasPrefix(kv.key, ledger.ThrottleKeyPrefix) || strings.HasPrefix(kv.key, ledger.ReassignKeyPrefix) {
			kv.apply(out)
		}
	}
	if len(part) > 0 {
		r.claims, r.claimsSig = out, sig
	}
	return out.Clone(), nil
}

// claimsSig tells whether the ownership partition was written since: a
// write appends its record last (a fresh copy of the value) after
// dropping the key's older one, in the same backing array.
type claimsSig struct {
	first   *kv
	n       int
	lastKey string
	lastVal *byte
}

func partSig(part []kv) claimsSig {
	if len(part) == 0 {
		return claimsSig{}
	}
	last := part[len(part)-1]
	var v *byte
	if len(last.value) > 0 {
		v = &last.value[0]
	}
	return claimsSig{first: &part[0], n: len(part), lastKey: last.key, lastVal: v}
}
