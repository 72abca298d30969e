package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// The replication throttle kafka-reassign-partitions.sh sets: a rate on
// every broker taking part, and the replicas it applies to on each topic.
const (
	LeaderThrottleRate       = "leader.replication.throttled.rate"
	FollowerThrottleRate     = "follower.replication.throttled.rate"
	LeaderThrottledReplicas  = "leader.replication.throttled.replicas"
	FollowerThrottledReplica = "follower.replication.throttled.replicas"
)

// Relief reads what a cross-broker relief plan needs and runs a plan
// (spec R3.8). It takes the connection at each call.
type Relief struct {
	src connSource
}

// Relief returns the relief adapter over the link.
func (l *Link) Relief() *Relief { return &Relief{src: l} }

// ReadCluster reads every broker (id, rack), every partition's replicas
// and leader, and every broker's log dirs (DescribeLogDirs: partition
// sizes; total and usable bytes from Kafka 3.3). A broker's capacity is
// the sum of its log dirs' total bytes and its usage total minus usable;
// with capacityBytes > 0 every broker's capacity is that instead and its
// usage the bytes of its partitions. A broker whose log dirs do not report
// their size, or one of which is offline, has capacity 0 (unknown) and the
// bytes of its partitions as usage. Every
// per-item error code is checked.
func (r *Relief) ReadCluster(ctx context.Context, capacityBytes int64) (relief.Cluster, error) {
	var out relief.Cluster
	c, err := r.src.conn()
	if err != nil {
		return out, err
	}
	ids, racks, err := brokerRacks(c)
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	index, err := readPartitions(c, &out)
	if err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	dirs, err := c.admin.DescribeLogDirs(ids)
	if err != nil {
		return out, fmt.Errorf("describe log dirs: %w", err)
	}
	for _, id := range ids {
		out.Brokers = append(out.Brokers, brokerUsage(relief.Broker{ID: id, Rack: racks[id]}, dirs[id], capacityBytes, index, out.Partitions))
	}
	return out, nil
}

// brokerRacks returns every broker's id, sorted, and rack.
func brokerRacks(c *conn) ([]int32, map[int32]string, error) {
	brokers, _, err := c.admin.DescribeCluster()
	if err != nil {
		return nil, nil, fmt.Errorf("describe cluster: %w", err)
	}
	if len(brokers) == 0 {
		return nil, nil, errors.New("describe cluster: no brokers")
	}
	ids := make([]int32, 0, len(brokers))
	racks := map[int32]string{}
	for _, b := range brokers {
		ids = append(ids, b.ID())
		racks[b.ID()] = b.Rack()
	}
	slices.Sort(ids)
	return ids, racks, nil
}

// readPartitions appends every partition's replicas and leader to out
// and returns the index of each ("topic/partition") in out.Partitions.
func readPartitions(c *conn, out *relief.Cluster) (map[string]int, error) {
	metas, err := c.admin.DescribeTopics(nil)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	index := map[string]int{} // topic/partition -> out.Partitions index
	for _, m := range metas {
		if !errors.Is(m.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("describe topic %s: %w", m.Name, m.Err)
		}
		for _, p := range m.Partitions {
			if !errors.Is(p.Err, sarama.ErrNoError) && !errors.Is(p.Err, sarama.ErrLeaderNotAvailable) && !errors.Is(p.Err, sarama.ErrReplicaNotAvailable) {
				return nil, fmt.Errorf("describe topic %s partition %d: %w", m.Name, p.ID, p.Err)
			}
			index[tpKey(m.Name, p.ID)] = len(out.Partitions)
			out.Partitions = append(out.Partitions, relief.Partition{Topic: m.Name, Partition: p.ID,
				Replicas: slices.Clone(p.Replicas), Leader: p.Leader, Sizes: map[int32]int64{}})
		}
	}
	return index, nil
}

// brokerUsage sets b's capacity and usage from its log dirs (ds) as
// ReadCluster says, and adds each partition's size on b to partitions
// (found through index).
func brokerUsage(b relief.Broker, ds []sarama.DescribeLogDirsResponseDirMetadata, capacityBytes int64, index map[string]int, partitions []relief.Partition) relief.Broker {
	known := len(ds) > 0
	var total, usable, parts int64
	for _, d := range ds {
		if !errors.Is(d.ErrorCode, sarama.ErrNoError) {
			known = false // an offline log dir: the broker's usage is not known
			continue
		}
		if d.TotalBytes <= 0 || d.UsableBytes < 0 {
			known = false
		}
		total += d.TotalBytes
		usable += d.UsableBytes
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				parts += p.Size
				if i, ok := index[tpKey(t.Topic, p.PartitionID)]; ok {
					partitions[i].Sizes[b.ID] += p.Size
				}
			}
		}
	}
	switch {
	case capacityBytes > 0:
		b.CapacityBytes, b.UsedBytes = capacityBytes, parts
	case known:
		b.CapacityBytes, b.UsedBytes = total, total-usable
	default:
		b.UsedBytes = parts // capacity unknown: its partitions, for the report
	}
	return b
}

func tpKey(topic string, p int32) string { return topic + "/" + strconv.Itoa(int(p)) }

// ExecuteOptions configure Execute.
type ExecuteOptions struct {
	// ThrottleBytesPerSecond is the replication throttle (both rates, on
	// every broker the moves touch). Must be > 0.
	ThrottleBytesPerSecond int64
	// Poll is how often progress is read (default 2 s).
	Poll time.Duration
	// Progress, when set, is told how many moves are still in progress.
	Progress func(pending int)
	// Claim, when set, makes the throttle a ledger claim: recorded before
	// any value is set, renewed while the moves run, released in two
	// phases once they are done; an interrupted run leaves it for a peer
	// agent (after its lease, once the moves are done) or `protection
	// lift` to restore.
	Claim *ExecuteClaim
}

// ExecuteClaim names the claim Execute records.
type ExecuteClaim struct {
	Store    enforcer.ReassignStore
	Owner    string
	Instance string
	Lease    time.Duration
}

// ErrThrottleInPlace: a replication throttle is already set where the plan
// would set one (another reassignment, or an operator's): Execute refuses
// rather than change or later remove it.
var ErrThrottleInPlace = errors.New("a replication throttle is already set")

// Execute runs plan as kafka-reassign-partitions.sh --execute --throttle
// does: it refuses when a moved partition is already being reassigned or a
// throttle is already set on a broker or topic the plan touches; sets the
// throttle (rates on every broker the moves touch, the replicas on each
// topic: leader side every current replica, follower side the new ones);
// submits the reassignment (AlterPartitionReassignments) and reads back
// that Kafka took every move; waits until Kafka reports none of them in
// progress and each partition has its new replicas; then removes the
// throttle. When ctx ends first, the reassignment goes on in Kafka and the
// throttle stays (removing it would unthrottle the copy): the error says
// so, and ThrottleCommands gives what removes it.
func (r *Relief) Execute(ctx context.Context, plan relief.Plan, opts ExecuteOptions) error {
	if len(plan.Moves) == 0 {
		return nil
	}
	if opts.ThrottleBytesPerSecond <= 0 {
		return errors.New("execute: the replication throttle must be > 0 bytes/s")
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	c, err := r.src.conn()
	if err != nil {
		return err
	}
	th := throttleOf(plan)
	if opts.Claim != nil {
		recs, err := opts.Claim.Store.LoadRecords(ctx)
		if err != nil {
			return fmt.Errorf("execute: read the ledger: %w", err)
		}
		if len(recs.Reassigns) > 0 {
			return fmt.Errorf("execute: %w: %s", ErrReassignClaimed, strings.Join(OtherReassignClaims(recs, ""), "; "))
		}
	}
	if err := checkNoThrottle(c.admin, th); err != nil {
		return err
	}
	pending, err := inProgress(c, th.topics())
	if err != nil {
		return err
	}
	for _, m := range plan.Moves {
		if pending[tpKey(m.Topic, m.Partition)] {
			return fmt.Errorf("execute: %s-%d is already being reassigned", m.Topic, m.Partition)
		}
	}
	if opts.Claim != nil {
		return r.executeClaimed(ctx, c, plan, opts)
	}
	if err := th.apply(c.admin, sarama.IncrementalAlterConfigsOperationSet, opts.ThrottleBytesPerSecond); err != nil {
		// Whatever was set is removed again: nothing was moved yet.
		return errors.Join(fmt.Errorf("set replication throttle: %w", err), th.apply(c.admin, sarama.IncrementalAlterConfigsOperationDelete, 0))
	}
	if err := submit(c, plan); err != nil {
		return errors.Join(err, th.apply(c.admin, sarama.IncrementalAlterConfigsOperationDelete, 0))
	}
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for {
		left, err := remaining(c, plan)
		if err == nil && left == 0 {
			break
		}
		if err == nil && opts.Progress != nil {
			opts.Progress(left)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("execute: stopped while the reassignment goes on in Kafka with its replication throttle in place (remove it once done): %w", ctx.Err())
		case <-tick.C:
		}
	}
	if err := th.apply(c.admin, sarama.IncrementalAlterConfigsOperationDelete, 0); err != nil {
		return fmt.Errorf("the reassignment is done; remove the replication throttle: %w", err)
	}
	return nil
}

// throttle is what a plan throttles.
type throttle struct {
	brokers  []int32
	leader   map[string][]string // topic -> "partition:broker" of current replicas
	follower map[string][]string // topic -> "partition:broker" of new replicas
}

func throttleOf(plan relief.Plan) throttle {
	t := throttle{leader: map[string][]string{}, follower: map[string][]string{}}
	seen := map[int32]bool{}
	add := func(id int32) {
		if !seen[id] {
			seen[id] = true
			t.brokers = append(t.brokers, id)
		}
	}
	for _, m := range plan.Moves {
		for _, r := range m.Replicas {
			add(r)
			t.leader[m.Topic] = append(t.leader[m.Topic], fmt.Sprintf("%d:%d", m.Partition, r))
		}
		for _, r := range m.NewReplicas {
			add(r)
			if !slices.Contains(m.Replicas, r) {
				t.follower[m.Topic] = append(t.follower[m.Topic], fmt.Sprintf("%d:%d", m.Partition, r))
			}
		}
	}
	slices.Sort(t.brokers)
	return t
}

func (t throttle) topics() []string {
	var out []string
	for topic := range t.leader {
		out = append(out, topic)
	}
	sort.Strings(out)
	return out
}

// apply sets (rate > 0) or deletes the throttle; every resource is tried.
func (t throttle) apply(admin sarama.ClusterAdmin, op sarama.IncrementalAlterConfigsOperation, rate int64) error {
	var errs []error
	entry := func(v string) sarama.IncrementalAlterConfigsEntry {
		e := sarama.IncrementalAlterConfigsEntry{Operation: op}
		if op == sarama.IncrementalAlterConfigsOperationSet {
			e.Value = &v
		}
		return e
	}
	r := strconv.FormatInt(rate, 10)
	for _, id := range t.brokers {
		err := admin.IncrementalAlterConfig(sarama.BrokerResource, strconv.Itoa(int(id)),
			map[string]sarama.IncrementalAlterConfigsEntry{LeaderThrottleRate: entry(r), FollowerThrottleRate: entry(r)}, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
		}
	}
	for _, topic := range t.topics() {
		es := map[string]sarama.IncrementalAlterConfigsEntry{LeaderThrottledReplicas: entry(strings.Join(t.leader[topic], ","))}
		if f := t.follower[topic]; len(f) > 0 || op == sarama.IncrementalAlterConfigsOperationDelete {
			es[FollowerThrottledReplica] = entry(strings.Join(f, ","))
		}
		if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, es, false); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", topic, err))
		}
	}
	return errors.Join(errs...)
}

// checkNoThrottle refuses when a throttle is already set on a broker (a
// dynamic per-broker rate) or topic the plan touches.
func checkNoThrottle(admin sarama.ClusterAdmin, t throttle) error {
	var res []*sarama.ConfigResource
	for _, id := range t.brokers {
		res = append(res, &sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(id)),
			ConfigNames: []string{LeaderThrottleRate, FollowerThrottleRate}})
	}
	for _, topic := range t.topics() {
		res = append(res, &sarama.ConfigResource{Type: sarama.TopicResource, Name: topic,
			ConfigNames: []string{LeaderThrottledReplicas, FollowerThrottledReplica}})
	}
	results, err := admin.DescribeConfigs(res, sarama.DescribeConfigsOptions{})
	if err != nil {
		return fmt.Errorf("describe throttle configs: %w", err)
	}
	var set []string
	for _, r := range results {
		if !errors.Is(r.ErrorCode, sarama.ErrNoError) {
			return fmt.Errorf("describe configs %s: %w: %s", r.Name, r.ErrorCode, r.ErrorMsg)
		}
		for _, e := range r.Configs {
			dynamic := e.Source == sarama.SourceDynamicBroker || e.Source == sarama.SourceTopic
			if dynamic && e.Value != "" && slices.Contains([]string{LeaderThrottleRate, FollowerThrottleRate, LeaderThrottledReplicas, FollowerThrottledReplica}, e.Name) {
				kind := "topic"
				if r.Type == sarama.BrokerResource {
					kind = "broker"
				}
				set = append(set, fmt.Sprintf("%s %s: %s=%s", kind, r.Name, e.Name, e.Value))
			}
		}
	}
	if len(set) > 0 {
		sort.Strings(set)
		return fmt.Errorf("%w (another reassignment, or an operator's): %s", ErrThrottleInPlace, strings.Join(set, "; "))
	}
	return nil
}

// controller returns the controller broker, opened.
func controller(c *conn) (*sarama.Broker, error) {
	b, err := c.admin.Controller()
	if err != nil {
		return nil, fmt.Errorf("find the controller: %w", err)
	}
	if err := openBroker(b, c.client.Config()); err != nil {
		return nil, fmt.Errorf("connect to the controller: %w", err)
	}
	return b, nil
}

// submit sends the plan's moves in one AlterPartitionReassignments (only
// the moved partitions: Sarama's admin call would cancel every other
// partition of the topic) and reads back that Kafka took each: in
// progress towards the new replicas, or already there. Sarama does not
// expose the response's per-partition errors; the read-back covers them.
func submit(c *conn, plan relief.Plan) error {
	b, err := controller(c)
	if err != nil {
		return err
	}
	req := &sarama.AlterPartitionReassignmentsRequest{TimeoutMs: 60000}
	for _, m := range plan.Moves {
		req.AddBlock(m.Topic, m.Partition, m.NewReplicas)
	}
	rsp, err := b.AlterPartitionReassignments(req)
	if err != nil {
		return fmt.Errorf("alter partition reassignments: %w", err)
	}
	if !errors.Is(rsp.ErrorCode, sarama.ErrNoError) {
		msg := ""
		if rsp.ErrorMessage != nil {
			msg = ": " + *rsp.ErrorMessage
		}
		return fmt.Errorf("alter partition reassignments: %w%s", rsp.ErrorCode, msg)
	}
	var refused []string
	status, err := reassignments(c, plan)
	if err != nil {
		return err
	}
	metas, err := replicasNow(c, plan)
	if err != nil {
		return err
	}
	for _, m := range plan.Moves {
		k := tpKey(m.Topic, m.Partition)
		if s, ok := status[k]; ok && sameSet(targetOf(s), m.NewReplicas) {
			continue
		}
		if slices.Equal(metas[k], m.NewReplicas) {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s-%d", m.Topic, m.Partition))
	}
	if len(refused) > 0 {
		return fmt.Errorf("alter partition reassignments: Kafka did not take the moves of %s", strings.Join(refused, ", "))
	}
	return nil
}

// targetOf is where an ongoing reassignment is going: its replicas minus
// the ones being removed.
func targetOf(s *sarama.PartitionReplicaReassignmentsStatus) []int32 {
	var out []int32
	for _, r := range s.Replicas {
		if !slices.Contains(s.RemovingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// reassignments lists the ongoing reassignments of the plan's topics.
func reassignments(c *conn, plan relief.Plan) (map[string]*sarama.PartitionReplicaReassignmentsStatus, error) {
	var topics []string
	for _, m := range plan.Moves {
		if !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
	}
	return listReassignments(c, topics)
}

func listReassignments(c *conn, topics []string) (map[string]*sarama.PartitionReplicaReassignmentsStatus, error) {
	out := map[string]*sarama.PartitionReplicaReassignmentsStatus{}
	if len(topics) == 0 {
		return out, nil
	}
	b, err := controller(c)
	if err != nil {
		return nil, err
	}
	metas, err := c.admin.DescribeTopics(topics)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	req := &sarama.ListPartitionReassignmentsRequest{TimeoutMs: 60000}
	for _, m := range metas {
		var ps []int32
		for _, p := range m.Partitions {
			ps = append(ps, p.ID)
		}
		req.AddBlock(m.Name, ps)
	}
	rsp, err := b.ListPartitionReassignments(req)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	if !errors.Is(rsp.ErrorCode, sarama.ErrNoError) {
		return nil, fmt.Errorf("list partition reassignments: %w", rsp.ErrorCode)
	}
	for topic, parts := range rsp.TopicStatus {
		for p, s := range parts {
			out[tpKey(topic, p)] = s
		}
	}
	return out, nil
}

// inProgress is the set of partitions of topics being reassigned now.
func inProgress(c *conn, topics []string) (map[string]bool, error) {
	s, err := listReassignments(c, topics)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for k := range s {
		out[k] = true
	}
	return out, nil
}

// replicasNow reads the plan's partitions' replicas from the metadata.
func replicasNow(c *conn, plan relief.Plan) (map[string][]int32, error) {
	var topics []string
	for _, m := range plan.Moves {
		if !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
	}
	metas, err := c.admin.DescribeTopics(topics)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	out := map[string][]int32{}
	for _, m := range metas {
		if !errors.Is(m.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("describe topic %s: %w", m.Name, m.Err)
		}
		for _, p := range m.Partitions {
			out[tpKey(m.Name, p.ID)] = p.Replicas
		}
	}
	return out, nil
}

// remaining counts the plan's moves not yet done: still in progress, or
// not yet showing the new replicas.
func remaining(c *conn, plan relief.Plan) (int, error) {
	status, err := reassignments(c, plan)
	if err != nil {
		return 0, err
	}
	now, err := replicasNow(c, plan)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range plan.Moves {
		k := tpKey(m.Topic, m.Partition)
		if _, busy := status[k]; busy || !sameSet(now[k], m.NewReplicas) {
			n++
		}
	}
	return n, nil
}

// ThrottleCommands are the kafka-configs.sh commands that remove the
// throttle Execute sets for plan (for an operator after an interrupted
// run; kafka-reassign-partitions.sh --verify with the plan's JSON removes
// it too once the reassignment is done).
func ThrottleCommands(plan relief.Plan, bootstrap string) []string {
	t := throttleOf(plan)
	var out []string
	for _, id := range t.brokers {
		out = append(out, fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type brokers --entity-name %d --delete-config %s,%s",
			bootstrap, id, LeaderThrottleRate, FollowerThrottleRate))
	}
	for _, topic := range t.topics() {
		out = append(out, fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --delete-config %s,%s",
			bootstrap, topic, LeaderThrottledReplicas, FollowerThrottledReplica))
	}
	return out
}
