package simbroker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// Cluster is a simulated cluster of several brokers held in memory: no
// files, no goroutines, no clock of its own (the caller steps it), for the
// deterministic simulation (internal/simulation). Its state is what the
// guard's ledger lives on: topic ACLs with an authorizer that answers as
// Kafka's StandardAuthorizer does, the default client's producer quota,
// topic config overrides, the ownership topic as partitions of keyed
// records, and partitions led by the brokers, with their segments. Every
// broker has an admin view (ClusterAdmin: enforcer.Admin and
// enforcer.Evidence) whose calls pass through the cluster's Faults.
//
// Cluster is not safe for concurrent use: the simulation calls it from
// one goroutine.
type Cluster struct {
	cfg    ClusterConfig
	Faults *Faults

	now        time.Time
	brokers    map[int32]*simNode
	controller int32
	parts      []*simPart
	acls       map[ledger.ACL]bool
	aclGen     uint64 // counts the calls that may have changed acls
	quota      int64
	overrides  map[string]map[string]string
	own        ownershipTopic
	ownCreated int             // the ownership topic's creations so far (ownershipTopic.id)
	folded     *ledger.Records // partition 0 as last read (nil: written since)
	// cordons: each broker's dynamic cordoned.log.dirs (cordon.go).
	cordons map[int32][]string
	// relief: throttles, moves and reassignments (relief.go).
	relief *reliefState
	// Deletions: every DeleteRecords that moved a log start offset.
	Deletions []Deletion
}

// ClusterConfig describes the simulated cluster.
type ClusterConfig struct {
	ClusterID string
	Brokers   []int32
	// Capacity of each broker's one log dir, bytes.
	Capacity int64
	Topics   []ClusterTopic
	// SuperUsers bypass every ACL (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
	OwnershipTopic            string
	// HashPartitioner: records written to the ownership topic go to the
	// partition the key hashes to (the producer's default partitioner),
	// not to partition 0 (the adapter before R8.7; it now writes to
	// partition 0).
	HashPartitioner bool
}

// ClusterTopic is one topic: its partitions are led by the brokers in turn
// (replication factor 1: each broker's log dir holds the partitions it
// leads).
type ClusterTopic struct {
	Name         string
	Partitions   int32
	Config       agent.TopicConfig
	SegmentBytes int64
	// BytesPerSecond each partition's producer writes (while not refused).
	BytesPerSecond int64
}

type simNode struct {
	id    int32
	dir   string
	alive bool // registered in the cluster's metadata (not fenced)
	// fill: bytes on the log dir that are no partition's (a disk filling
	// with something else).
	fill int64
}

type simPart struct {
	topic  *ClusterTopic
	id     int32
	leader int32
	segs   []simSeg // oldest first; the last one is active
	lso    int64
	leo    int64
	dir    string // the partition's directory name (model; "": not yet)
}

type simSeg struct {
	base, bytes int64
	maxTS       time.Time
}

// batchBytes: every record batch is this large and holds one offset.
const batchBytes = 4096

type ownershipTopic struct {
	exists     bool
	id         int    // which creation of the topic (Records.Topic)
	partitions [][]kv // each partition's records, in offset order
}

type kv struct {
	key   string
	value []byte
	dec   *decoded // the value decoded (fold.go; nil: not yet)
}

// Deletion is one DeleteRecords that moved a log start offset.
type Deletion struct {
	At        time.Time
	Broker    int32 // the log dir's broker (the partition's leader)
	Topic     string
	Partition int32
	// Bytes removed, of them Unexpired not yet past retention.
	Bytes, Unexpired int64
	Tiered, Compact  bool
}

// NewCluster builds the cluster at now, every partition with one empty
// active segment.
func NewCluster(cfg ClusterConfig, now time.Time) *Cluster {
	if cfg.OwnershipTopic == "" {
		cfg.OwnershipTopic = enforcer.DefaultOwnershipTopic
	}
	c := &Cluster{cfg: cfg, Faults: &Faults{}, now: now, brokers: map[int32]*simNode{},
		acls: map[ledger.ACL]bool{}, overrides: map[string]map[string]string{}}
	for _, id := range cfg.Brokers {
		c.brokers[id] = &simNode{id: id, dir: fmt.Sprintf("/var/lib/kafka/broker-%d", id), alive: true}
	}
	c.controller = cfg.Brokers[0]
	i := 0
	for ti := range cfg.Topics {
		t := &c.cfg.Topics[ti]
		for p := range t.Partitions {
			c.parts = append(c.parts, &simPart{topic: t, id: p, leader: cfg.Brokers[i%len(cfg.Brokers)],
				segs: []simSeg{{maxTS: now}}})
			i++
		}
	}
	return c
}

// Now is the cluster's time (its last step).
func (c *Cluster) Now() time.Time { return c.now }

// Step advances the cluster to now: producers append (unless refused by
// the authorizer or throttled by the quota), segments roll, and Kafka's
// retention deletes what agent.Classify says it would (local retention
// for tiered topics, with local.retention.bytes as overridden).
func (c *Cluster) Step(now time.Time, producer string) {
	dt := now.Sub(c.now).Seconds()
	if dt <= 0 {
		return
	}
	c.now = now
	for _, p := range c.parts {
		if !c.brokers[p.leader].alive || !c.Authorize(producer, p.topic.Name, ledger.OpWrite) {
			continue
		}
		rate := float64(p.topic.BytesPerSecond)
		if c.quota > 0 {
			rate = min(rate, float64(c.quota))
		}
		p.appendBytes(int64(rate*dt)/batchBytes*batchBytes, now)
	}
	for _, p := range c.parts {
		if len(p.segs) < 2 {
			continue // retention never deletes the active segment
		}
		cfg := c.topicConfig(p.topic)
		m := agent.Classify(p.model(), cfg, now)
		n := 0
		for n < len(m.Segments)-1 && m.Segments[n].State == agent.StateEligible {
			n++
		}
		if n > 0 {
			p.segs = p.segs[n:]
			p.lso = max(p.lso, p.segs[0].base)
		}
	}
}

// topicConfig is the topic's config with the overrides set through the
// admin API (local.retention.bytes).
func (c *Cluster) topicConfig(t *ClusterTopic) agent.TopicConfig {
	cfg := t.Config
	if v, ok := c.overrides[t.Name][enforcer.LocalRetentionBytesKey]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			cfg.LocalRetentionBytes = n
		}
	}
	return cfg
}

// appendBytes appends n bytes of batches stamped now, rolling segments
// at segment.bytes.
func (p *simPart) appendBytes(n int64, now time.Time) {
	for n > 0 {
		a := &p.segs[len(p.segs)-1]
		room := (p.topic.SegmentBytes - a.bytes) / batchBytes * batchBytes
		if room <= 0 {
			p.segs = append(p.segs, simSeg{base: p.leo, maxTS: now})
			continue
		}
		take := min(room, n)
		a.bytes += take
		a.maxTS = now
		p.leo += take / batchBytes
		n -= take
	}
}

// model is the partition as agent.Classify takes it.
func (p *simPart) model() agent.Partition {
	if p.dir == "" {
		p.dir = fmt.Sprintf("%s-%d", p.topic.Name, p.id)
	}
	ap := agent.Partition{Topic: p.topic.Name, Partition: p.id, Dir: p.dir, Kind: agent.KindLive,
		LogStartOffset: p.lso, HighWatermark: p.leo, LogEndOffset: p.leo, ActiveWrittenBytes: -1}
	if len(p.segs) > 0 {
		ap.Segments = make([]agent.Segment, 0, len(p.segs))
	}
	for _, s := range p.segs {
		ap.Segments = append(ap.Segments, agent.Segment{BaseOffset: s.base, LogBytes: s.bytes, DiskBytes: s.bytes, LargestTimestampMs: s.maxTS.UnixMilli()})
		ap.DiskBytes += s.bytes
	}
	return ap
}

// size is the partition's bytes on disk (model().DiskBytes).
func (p *simPart) size() int64 {
	var n int64
	for _, s := range p.segs {
		n += s.bytes
	}
	return n
}

// Usage is the broker's log dir usage (0-1).
func (c *Cluster) Usage(broker int32) float64 {
	return float64(c.usedBytes(broker)) / float64(c.cfg.Capacity)
}

func (c *Cluster) usedBytes(broker int32) int64 {
	n := c.brokers[broker].fill
	for _, p := range c.parts {
		if p.leader == broker {
			for _, s := range p.segs {
				n += s.bytes
			}
		}
	}
	return n
}

// Burst appends bytes stamped now to the partitions of topic the broker
// leads: a producer's burst.
func (c *Cluster) Burst(broker int32, topic string, bytes int64) {
	var led []*simPart
	for _, p := range c.parts {
		if p.leader == broker && p.topic.Name == topic {
			led = append(led, p)
		}
	}
	for _, p := range led {
		p.appendBytes(bytes/int64(len(led))/batchBytes*batchBytes, c.now)
	}
}

// Expire removes every closed segment of topic, as retention would once
// its data is old enough.
func (c *Cluster) Expire(topic string) {
	for _, p := range c.parts {
		if p.topic.Name == topic && len(p.segs) > 1 {
			p.segs = p.segs[len(p.segs)-1:]
			p.lso = max(p.lso, p.segs[0].base)
		}
	}
}

// SetFill puts bytes on the broker's disk that are no partition's.
func (c *Cluster) SetFill(broker int32, bytes int64) { c.brokers[broker].fill = max(bytes, 0) }

// Fill is the broker's fill.
func (c *Cluster) Fill(broker int32) int64 { return c.brokers[broker].fill }

// SetAlive registers (true) or fences (false) the broker: a fenced broker
// is missing from the metadata, its partitions are led by nobody.
func (c *Cluster) SetAlive(broker int32, alive bool) { c.brokers[broker].alive = alive }

// Alive reports whether the broker is registered.
func (c *Cluster) Alive(broker int32) bool { return c.brokers[broker].alive }

// MoveController moves the active controller to the next broker.
func (c *Cluster) MoveController() {
	i := slices.Index(c.cfg.Brokers, c.controller)
	c.controller = c.cfg.Brokers[(i+1)%len(c.cfg.Brokers)]
}

// Controller is the active controller's id.
func (c *Cluster) Controller() int32 { return c.controller }

// Snapshot is the agent's view of the broker's log dir at the cluster's
// time, as a scan would publish it.
func (c *Cluster) Snapshot(broker int32) *agent.Snapshot {
	n := c.brokers[broker]
	ld := agent.LogDir{Path: n.dir, BrokerID: broker, ClusterID: c.cfg.ClusterID}
	led := 0
	for _, p := range c.parts {
		if p.leader == broker {
			led++
		}
	}
	if led > 0 {
		ld.Partitions = make([]*agent.Partition, 0, led)
	}
	for _, p := range c.parts {
		if p.leader == broker {
			m := p.model()
			ld.Partitions = append(ld.Partitions, &m)
			ld.DiskBytes += m.DiskBytes
		}
	}
	ld.OtherBytes = n.fill
	ld.DiskBytes += n.fill
	used := uint64(ld.DiskBytes)
	ld.Usage = agent.Usage{CapacityBytes: uint64(c.cfg.Capacity), UsedBytes: used,
		AvailableBytes: uint64(max(c.cfg.Capacity-int64(used), 0)), Basis: agent.CapacityConfigured}
	s := agent.BuildSnapshot(c.now, []agent.LogDir{ld}, c.Configs(), agent.Health{LastFullScan: c.now})
	return &s
}

// Configs are the topic configs as the guard fetches them, at the
// cluster's time; tiered partitions report everything but the active
// segment uploaded.
func (c *Cluster) Configs() agent.ConfigSet {
	cs := agent.ConfigSet{Topics: map[string]agent.TopicConfig{}, Defaults: agent.DefaultTopicConfig(), Time: c.now,
		Fetched: map[string]time.Time{}, Remote: map[agent.TopicPartition]agent.RemoteOffsets{}, RemoteTime: c.now}
	for i := range c.cfg.Topics {
		t := &c.cfg.Topics[i]
		cs.Topics[t.Name], cs.Fetched[t.Name] = c.topicConfig(t), c.now
	}
	for _, p := range c.parts {
		if p.topic.Config.RemoteStorage {
			cs.Remote[agent.TopicPartition{Topic: p.topic.Name, Partition: p.id}] = agent.RemoteOffsets{
				HighestUploaded: p.segs[len(p.segs)-1].base - 1, LocalLogStart: p.lso, LogStart: 0, Time: c.now}
		}
	}
	return cs
}

// Authorize answers as Kafka's StandardAuthorizer: super users bypass;
// a matching DENY wins; a matching ALLOW (ALL, the operation, or for
// DESCRIBE one of READ, WRITE, DELETE, ALTER) allows; with no ACL on the
// resource at all, allow.everyone.if.no.acl.found decides.
func (c *Cluster) Authorize(principal, topic, op string) bool {
	return Authorizer{ACLs: c.acls, SuperUsers: c.cfg.SuperUsers, AllowEveryone: c.cfg.AllowEveryoneIfNoACLFound}.Authorize(principal, topic, op)
}

// Authorizer is Kafka's StandardAuthorizer over any set of bindings, as
// Cluster.Authorize answers.
type Authorizer struct {
	ACLs       map[ledger.ACL]bool
	SuperUsers []string
	// AllowEveryone: allow.everyone.if.no.acl.found.
	AllowEveryone bool
}

// Authorize is Cluster.Authorize over z's bindings.
func (z Authorizer) Authorize(principal, topic, op string) bool {
	if slices.Contains(z.SuperUsers, principal) {
		return true
	}
	anyOnResource, allowed := false, false
	for a := range z.ACLs {
		if !aclMatches(a, topic) {
			continue
		}
		anyOnResource = true
		if a.Principal != principal && a.Principal != ledger.AnyPrincipal {
			continue
		}
		opMatch := a.Operation == op || a.Operation == ledger.OpAll
		if a.Permission == ledger.PermDeny && opMatch {
			return false
		}
		if a.Permission == ledger.PermAllow && (opMatch || op == ledger.OpDescribe &&
			slices.Contains([]string{ledger.OpRead, ledger.OpWrite, ledger.OpDelete, "ALTER"}, a.Operation)) {
			allowed = true
		}
	}
	return allowed || !anyOnResource && z.AllowEveryone
}

// ACLGeneration changes whenever the bindings may have changed (a call
// to CreateACLs or DeleteACLs took effect).
func (c *Cluster) ACLGeneration() uint64 { return c.aclGen }

// ACLs is every binding on the cluster.
func (c *Cluster) ACLs() map[ledger.ACL]bool { return maps.Clone(c.acls) }

// Quota is the default client's producer_byte_rate (0: none).
func (c *Cluster) Quota() int64 { return c.quota }

// Override is a topic's config override (ok false: not set).
func (c *Cluster) Override(topic, key string) (string, bool) {
	v, ok := c.overrides[topic][key]
	return v, ok
}

// Topics are the cluster's topics.
func (c *Cluster) Topics() []ClusterTopic { return slices.Clone(c.cfg.Topics) }

// Led lists the topics with a partition the broker leads.
func (c *Cluster) Led(broker int32) []string {
	var out []string
	for _, p := range c.parts {
		if p.leader == broker && !slices.Contains(out, p.topic.Name) {
			out = append(out, p.topic.Name)
		}
	}
	return out
}

// Ownership faults.

// DeleteOwnershipTopic deletes the ownership topic with its records.
func (c *Cluster) DeleteOwnershipTopic() { c.own, c.folded = ownershipTopic{}, nil }

// RecreateOwnershipTopic deletes the ownership topic and creates it again
// empty with n partitions (as infrastructure-as-code would).
func (c *Cluster) RecreateOwnershipTopic(n int) {
	c.ownCreated++
	c.own, c.folded = ownershipTopic{exists: true, id: c.ownCreated, partitions: make([][]kv, n)}, nil
}

// AppendOwnershipRecord writes a raw record to the ownership topic's
// partition 0 (creating the topic): garbage, or a newer version.
func (c *Cluster) AppendOwnershipRecord(key string, value []byte) {
	c.ensureOwnership()
	c.own.partitions[0] = append(compacted(c.own.partitions[0], key), kv{key: key, value: slices.Clone(value)})
	c.folded = nil
}

// Records reads the ownership topic as an agent (or protection status)
// would, without faults: the simulation's own view of the ledger. It is
// the fold kept until the next write, not a copy: read-only.
func (c *Cluster) Records() (ledger.Records, error) {
	f, err := c.fold()
	if err != nil {
		return ledger.NewRecords(), err
	}
	return *f, nil
}

// Partition0 folds the ownership topic's partition 0 whatever its
// partition count: what the agents wrote to a reshaped topic (they write
// to partition 0 explicitly), readable by none of them.
func (c *Cluster) Partition0() ledger.Records {
	out := ledger.NewRecords()
	if c.own.exists && len(c.own.partitions) > 0 {
		for i := range c.own.partitions[0] {
			c.own.partitions[0][i].apply(out)
		}
	}
	return out
}

// OwnershipPartitions is the ownership topic's partition count (0:
// missing).
func (c *Cluster) OwnershipPartitions() int { return len(c.own.partitions) }

func (c *Cluster) ensureOwnership() {
	if !c.own.exists {
		c.ownCreated++
		c.own, c.folded = ownershipTopic{exists: true, id: c.ownCreated, partitions: make([][]kv, 1)}, nil
	}
}

// reshaped refuses a write to an ownership topic with more than one
// partition, as the adapter does (ledger.ErrLedgerLost: it checks the
// partition count before each write, internal/kafkaadmin); with
// HashPartitioner (an adapter before that check) the write goes on.
func (c *Cluster) reshaped() error {
	if n := len(c.own.partitions); n > 1 && !c.cfg.HashPartitioner {
		return fmt.Errorf("%w: topic has %d partitions, want 1", ledger.ErrLedgerLost, n)
	}
	return nil
}

func (c *Cluster) produce(key string, value []byte) {
	c.ensureOwnership()
	p := 0
	if c.cfg.HashPartitioner && len(c.own.partitions) > 1 {
		h := fnv.New32a()
		h.Write([]byte(key))
		p = int(h.Sum32() % uint32(len(c.own.partitions)))
	}
	c.own.partitions[p] = append(compacted(c.own.partitions[p], key), kv{key: key, value: slices.Clone(value)})
	c.folded = nil
}

// compacted is the partition as compaction leaves it when key is written
// again: of its earlier values only the latest is still there (the
// simulation compacts at once, all but the newest segment).
func compacted(part []kv, key string) []kv {
	last := -1
	for i, r := range part {
		if r.key == key {
			last = i
		}
	}
	out := part[:0]
	for i, r := range part {
		if r.key != key || i == last {
			out = append(out, r)
		}
	}
	return out
}

// readOwnership reads the ownership topic as the adapter does: verified
// first (missing: ledger.ErrLedgerMissing; more than one partition:
// ledger.ErrLedgerLost), then partition 0 folded by
// ledger.ApplyRecord (an undecodable value is skipped and counted).
// The fold is kept until the next write; each read gets its own copy.
func (c *Cluster) readOwnership() (ledger.Records, error) {
	f, err := c.fold()
	if err != nil {
		return ledger.NewRecords(), err
	}
	out := f.Clone()
	out.Topic = "topic-" + strconv.Itoa(c.own.id)
	for id, r := range out.Agents {
		// A fresh copy of what the enforcer could change in place.
		r.Why, r.LogDirs, r.Owned, r.Configs = slices.Clone(r.Why), slices.Clone(r.LogDirs), slices.Clone(r.Owned), slices.Clone(r.Configs)
		for i := range r.Owned {
			r.Owned[i].Topics = slices.Clone(r.Owned[i].Topics)
		}
		out.Agents[id] = r
	}
	for id, l := range out.Lifts {
		l.Topics = slices.Clone(l.Topics)
		out.Lifts[id] = l
	}
	return out, nil
}

// fold is the ownership topic's partition 0 folded, verified as
// readOwnership says; kept until the next write (read-only).
func (c *Cluster) fold() (*ledger.Records, error) {
	if !c.own.exists {
		return nil, fmt.Errorf("%w: %s", ledger.ErrLedgerMissing, c.cfg.OwnershipTopic)
	}
	if n := len(c.own.partitions); n != 1 {
		return nil, fmt.Errorf("%w: topic %s has %d partitions, want 1", ledger.ErrLedgerLost, c.cfg.OwnershipTopic, n)
	}
	if c.folded == nil {
		out := ledger.NewRecords()
		for i := range c.own.partitions[0] {
			c.own.partitions[0][i].apply(out)
		}
		c.folded = &out
	}
	return c.folded, nil
}

// ClusterAdmin is one broker's admin view of the cluster: what an agent
// on that broker (or an operator's command) reaches through the admin
// API. Who names the caller for the fault injector and the simulation's
// bookkeeping ("agent-1", "operator").
type ClusterAdmin struct {
	c      *Cluster
	broker int32
	Who    string
	// OnCall, when set, is told of every call that took effect.
	OnCall func(who, method string, arg any)
}

var (
	_ enforcer.Admin    = (*ClusterAdmin)(nil)
	_ enforcer.Evidence = (*ClusterAdmin)(nil)
	_ enforcer.Preparer = (*ClusterAdmin)(nil)
)

// Cluster is the cluster the view is of.
func (a *ClusterAdmin) Cluster() *Cluster { return a.c }

// Admin is the admin view of broker id for who.
func (c *Cluster) Admin(broker int32, who string) *ClusterAdmin {
	return &ClusterAdmin{c: c, broker: broker, Who: who}
}

// Errors of the simulated cluster.
var (
	ErrNotLeader = errors.New("NOT_LEADER_OR_FOLLOWER: the partition's leader is not available")
	ErrNoBroker  = errors.New("BROKER_NOT_AVAILABLE: no such broker in the simulated cluster")
)

func (a *ClusterAdmin) took(method string, arg any) {
	if a.OnCall != nil {
		a.OnCall(a.Who, method, arg)
	}
}

func (a *ClusterAdmin) Offsets(ctx context.Context, parts []enforcer.TopicPartition) (map[enforcer.TopicPartition]enforcer.Offsets, error) {
	if err := a.c.Faults.before(ctx, a.Who, "Offsets"); err != nil {
		return nil, err
	}
	out := map[enforcer.TopicPartition]enforcer.Offsets{}
	for _, tp := range parts {
		if p := a.c.part(tp.Topic, tp.Partition); p != nil {
			if !a.c.brokers[p.leader].alive {
				return nil, fmt.Errorf("list offsets of %s-%d: %w", tp.Topic, tp.Partition, ErrNotLeader)
			}
			out[tp] = enforcer.Offsets{LogStart: p.lso, HighWatermark: p.leo}
		}
	}
	return out, a.c.Faults.after(a.Who, "Offsets")
}

func (c *Cluster) part(topic string, id int32) *simPart {
	for _, p := range c.parts {
		if p.topic.Name == topic && p.id == id {
			return p
		}
	}
	return nil
}

func (a *ClusterAdmin) DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error) {
	if err := a.c.Faults.before(ctx, a.Who, "DeleteRecords"); err != nil {
		return nil, err
	}
	out := map[int32]error{}
	for _, id := range slices.Sorted(maps.Keys(offsets)) {
		out[id] = a.c.deleteRecords(topic, id, offsets[id])
	}
	a.took("DeleteRecords", topic)
	return out, a.c.Faults.after(a.Who, "DeleteRecords")
}

func (c *Cluster) deleteRecords(topic string, id int32, off int64) error {
	p := c.part(topic, id)
	if p == nil {
		return ErrUnknownTopicOrPartition
	}
	if !c.brokers[p.leader].alive {
		return ErrNotLeader
	}
	cfg := c.topicConfig(p.topic)
	d := Deletion{At: c.now, Broker: p.leader, Topic: topic, Partition: id, Tiered: cfg.Tiered(topic),
		Compact: cfg.CleanupPolicy.Compact && !cfg.CleanupPolicy.Delete}
	if d.Compact {
		c.Deletions = append(c.Deletions, d)
		return ErrPolicyViolation
	}
	if off == -1 {
		off = p.leo
	}
	if off < 0 || off > p.leo {
		return ErrOffsetOutOfRange
	}
	if off <= p.lso {
		if d.Tiered {
			c.Deletions = append(c.Deletions, d) // asked for, if a no-op
		}
		return nil
	}
	m := agent.Classify(p.model(), cfg, c.now)
	p.lso = off
	n := 0
	for n < len(p.segs)-1 && p.segs[n+1].base <= off {
		d.Bytes += p.segs[n].bytes
		if m.Segments[n].State != agent.StateEligible {
			d.Unexpired += p.segs[n].bytes
		}
		n++
	}
	p.segs = p.segs[n:]
	c.Deletions = append(c.Deletions, d)
	return nil
}

func (a *ClusterAdmin) TopicACLs(ctx context.Context) ([]ledger.ACL, error) {
	if err := a.c.Faults.before(ctx, a.Who, "TopicACLs"); err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Keys(a.c.acls))
	slices.SortFunc(out, func(x, y ledger.ACL) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Operation, y.Operation),
			cmp.Compare(x.Permission, y.Permission), cmp.Compare(x.Pattern, y.Pattern), cmp.Compare(x.Host, y.Host))
	})
	return out, a.c.Faults.after(a.Who, "TopicACLs")
}

func (a *ClusterAdmin) CreateACLs(ctx context.Context, acls []ledger.ACL) error {
	if err := a.c.Faults.before(ctx, a.Who, "CreateACLs"); err != nil {
		return err
	}
	for _, x := range acls {
		x = literal(x)
		if x.Host == "" {
			x.Host = ledger.AnyHost
		}
		a.c.acls[x] = true
	}
	a.c.aclGen++
	a.took("CreateACLs", acls)
	return a.c.Faults.after(a.Who, "CreateACLs")
}

func (a *ClusterAdmin) DeleteACLs(ctx context.Context, acls []ledger.ACL) error {
	if err := a.c.Faults.before(ctx, a.Who, "DeleteACLs"); err != nil {
		return err
	}
	for _, x := range acls {
		x = literal(x)
		if x.Host == "" {
			x.Host = ledger.AnyHost
		}
		delete(a.c.acls, x)
	}
	a.c.aclGen++
	a.took("DeleteACLs", acls)
	return a.c.Faults.after(a.Who, "DeleteACLs")
}

func (a *ClusterAdmin) DefaultProducerQuota(ctx context.Context) (int64, error) {
	if err := a.c.Faults.before(ctx, a.Who, "DefaultProducerQuota"); err != nil {
		return 0, err
	}
	return a.c.quota, a.c.Faults.after(a.Who, "DefaultProducerQuota")
}

func (a *ClusterAdmin) SetDefaultProducerQuota(ctx context.Context, rate int64) error {
	if err := a.c.Faults.before(ctx, a.Who, "SetDefaultProducerQuota"); err != nil {
		return err
	}
	if rate <= 0 {
		return fmt.Errorf("%w: producer_byte_rate %d", ErrInvalidRequest, rate)
	}
	a.c.quota = rate
	a.took("SetDefaultProducerQuota", rate)
	return a.c.Faults.after(a.Who, "SetDefaultProducerQuota")
}

func (a *ClusterAdmin) RemoveDefaultProducerQuota(ctx context.Context) error {
	if err := a.c.Faults.before(ctx, a.Who, "RemoveDefaultProducerQuota"); err != nil {
		return err
	}
	a.c.quota = 0
	a.took("RemoveDefaultProducerQuota", nil)
	return a.c.Faults.after(a.Who, "RemoveDefaultProducerQuota")
}

// LoadRecords reads the ownership topic as the adapter does
// (readOwnership).
func (a *ClusterAdmin) LoadRecords(ctx context.Context) (ledger.Records, error) {
	if err := a.c.Faults.before(ctx, a.Who, "LoadRecords"); err != nil {
		return ledger.NewRecords(), err
	}
	recs, err := a.c.readOwnership()
	if err != nil {
		return recs, err
	}
	return recs, a.c.Faults.after(a.Who, "LoadRecords")
}

func (a *ClusterAdmin) StoreRecord(ctx context.Context, r ledger.Record) error {
	data, err := ledger.EncodeRecord(r)
	if err != nil {
		return err
	}
	if err := a.c.Faults.before(ctx, a.Who, "StoreRecord"); err != nil {
		return err
	}
	if err := a.c.reshaped(); err != nil {
		return err
	}
	a.c.produce(ledger.RecordKey(r.BrokerID), data)
	return a.c.Faults.after(a.Who, "StoreRecord")
}

func (a *ClusterAdmin) StoreLift(ctx context.Context, l ledger.Lift) error {
	data, err := ledger.EncodeLift(l)
	if err != nil {
		return err
	}
	if err := a.c.Faults.before(ctx, a.Who, "StoreLift"); err != nil {
		return err
	}
	if err := a.c.reshaped(); err != nil {
		return err
	}
	a.c.produce(ledger.LiftKey(l.BrokerID), data)
	return a.c.Faults.after(a.Who, "StoreLift")
}

// Prepare creates the ownership topic when missing, as the adapter does
// before an enforcing agent's first pass.
func (a *ClusterAdmin) Prepare(ctx context.Context) error {
	if err := a.c.Faults.before(ctx, a.Who, "Prepare"); err != nil {
		return err
	}
	a.c.ensureOwnership()
	return a.c.Faults.after(a.Who, "Prepare")
}

// DeleteLift withdraws the lift of a broker's claims (a tombstone), as
// kafka-disk-guard protection resume does.
func (a *ClusterAdmin) DeleteLift(ctx context.Context, broker int32) error {
	if err := a.c.Faults.before(ctx, a.Who, "DeleteLift"); err != nil {
		return err
	}
	if err := a.c.reshaped(); err != nil {
		return err
	}
	a.c.produce(ledger.LiftKey(broker), nil)
	return a.c.Faults.after(a.Who, "DeleteLift")
}

func (a *ClusterAdmin) LiveBrokers(ctx context.Context) ([]int32, error) {
	if err := a.c.Faults.before(ctx, a.Who, "LiveBrokers"); err != nil {
		return nil, err
	}
	var out []int32
	for _, id := range a.c.cfg.Brokers {
		if a.c.brokers[id].alive {
			out = append(out, id)
		}
	}
	return out, a.c.Faults.after(a.Who, "LiveBrokers")
}

func (a *ClusterAdmin) AllowEveryoneIfNoACLFound(ctx context.Context) (ledger.AllowEveryone, error) {
	if err := a.c.Faults.before(ctx, a.Who, "AllowEveryoneIfNoACLFound"); err != nil {
		return ledger.AllowEveryoneUnknown, err
	}
	v := ledger.AllowEveryoneFalse
	if a.c.cfg.AllowEveryoneIfNoACLFound {
		v = ledger.AllowEveryoneTrue
	}
	return v, a.c.Faults.after(a.Who, "AllowEveryoneIfNoACLFound")
}

func (a *ClusterAdmin) TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error) {
	if err := a.c.Faults.before(ctx, a.Who, "TopicConfigOverrides"); err != nil {
		return nil, err
	}
	out := map[string]*string{}
	for _, t := range topics {
		if !slices.ContainsFunc(a.c.cfg.Topics, func(x ClusterTopic) bool { return x.Name == t }) {
			continue
		}
		out[t] = nil
		if v, ok := a.c.overrides[t][key]; ok {
			out[t] = &v
		}
	}
	return out, a.c.Faults.after(a.Who, "TopicConfigOverrides")
}

func (a *ClusterAdmin) AlterTopicConfig(ctx context.Context, topic, key string, value *string) error {
	if err := a.c.Faults.before(ctx, a.Who, "AlterTopicConfig"); err != nil {
		return err
	}
	if value == nil {
		delete(a.c.overrides[topic], key)
	} else {
		if a.c.overrides[topic] == nil {
			a.c.overrides[topic] = map[string]string{}
		}
		a.c.overrides[topic][key] = *value
	}
	a.took("AlterTopicConfig", [2]any{topic, value})
	return a.c.Faults.after(a.Who, "AlterTopicConfig")
}

// Evidence: the cluster's id, the broker's log dir, every right.

func (a *ClusterAdmin) ClusterID(ctx context.Context) (string, error) {
	if err := a.c.Faults.before(ctx, a.Who, "ClusterID"); err != nil {
		return "", err
	}
	return a.c.cfg.ClusterID, a.c.Faults.after(a.Who, "ClusterID")
}

func (a *ClusterAdmin) BrokerLogDirs(ctx context.Context, node int32) ([]agent.BrokerLogDir, error) {
	if err := a.c.Faults.before(ctx, a.Who, "BrokerLogDirs"); err != nil {
		return nil, err
	}
	n := a.c.brokers[node]
	if n == nil || !n.alive {
		return nil, fmt.Errorf("broker %d: %w", node, ErrNoBroker)
	}
	d := agent.BrokerLogDir{Path: n.dir, TotalBytes: -1, UsableBytes: -1}
	for _, p := range a.c.parts {
		if p.leader == node {
			d.Partitions = append(d.Partitions, agent.TopicPartition{Topic: p.topic.Name, Partition: p.id})
		}
	}
	return []agent.BrokerLogDir{d}, a.c.Faults.after(a.Who, "BrokerLogDirs")
}

func (a *ClusterAdmin) Rights(ctx context.Context, q rights.Query) (rights.Report, error) {
	return everyRight(ctx, q)
}
