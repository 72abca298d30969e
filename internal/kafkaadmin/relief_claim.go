package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// The replication throttle of a reassignment as a ledger claim (spec
// R3.8): the config reads and writes enforcer.ThrottleConfigAdmin names,
// and the claim's entries for a plan.

var _ enforcer.ReassignAdmin = (*Relief)(nil)

// Reassign submits plan's moves (AlterPartitionReassignments, only the
// moved partitions) and reads back that Kafka took each.
func (r *Relief) Reassign(ctx context.Context, plan relief.Plan) error {
	c, err := r.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return submit(c, plan)
}

func configResource(resource, name string) (sarama.ConfigResourceType, sarama.ConfigSource, error) {
	switch resource {
	case ledger.ResourceBroker:
		return sarama.BrokerResource, sarama.SourceDynamicBroker, nil
	case ledger.ResourceTopic:
		return sarama.TopicResource, sarama.SourceTopic, nil
	}
	return 0, 0, fmt.Errorf("unknown config resource %q (%s)", resource, name)
}

// ThrottleConfig reads the resource's own dynamic value of key (a
// broker's per-broker value, not the cluster default; a topic override).
func (r *Relief) ThrottleConfig(ctx context.Context, resource, name, key string) (string, bool, error) {
	typ, src, err := configResource(resource, name)
	if err != nil {
		return "", false, err
	}
	c, err := r.src.conn()
	if err != nil {
		return "", false, err
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	res, err := c.admin.DescribeConfig(sarama.ConfigResource{Type: typ, Name: name, ConfigNames: []string{key}})
	if err != nil {
		return "", false, fmt.Errorf("describe %s of %s %s: %w", key, resource, name, err)
	}
	for _, e := range res {
		if e.Name == key && e.Source == src {
			return e.Value, true, nil
		}
	}
	return "", false, nil
}

// SetThrottleConfig sets the resource's key, or deletes it (Set false).
func (r *Relief) SetThrottleConfig(ctx context.Context, tv enforcer.ThrottleConfigValue) error {
	resource, name, key := tv.Resource, tv.Name, tv.Key
	typ, _, err := configResource(resource, name)
	if err != nil {
		return err
	}
	c, err := r.src.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e := sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
	if tv.Set {
		v := tv.Value
		e = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := c.admin.IncrementalAlterConfig(typ, name, map[string]sarama.IncrementalAlterConfigsEntry{key: e}, false); err != nil {
		return fmt.Errorf("alter %s of %s %s: %w", key, resource, name, err)
	}
	return nil
}

// ThrottleEntries are the config values a plan's replication throttle
// sets (enforcer.ReassignEntries).
func ThrottleEntries(plan relief.Plan, rate int64) []ledger.ThrottleEntry {
	return enforcer.ReassignEntries(plan, rate)
}

// PlanClaim is cl's replication throttle claim for plan at rate.
func (cl *ExecuteClaim) PlanClaim(plan relief.Plan, rate int64, now time.Time) ledger.ReassignClaim {
	c := ledger.ReassignClaim{Owner: cl.Owner, Instance: cl.Instance, Entries: ThrottleEntries(plan, rate),
		Since: now, Renewed: now, LeaseMs: cl.Lease.Milliseconds()}
	for _, m := range plan.Moves {
		c.Partitions = append(c.Partitions, tpKey(m.Topic, m.Partition))
		c.Moves = append(c.Moves, fmt.Sprintf("%s/%d %d -> %d", m.Topic, m.Partition, m.From, m.To))
	}
	return c
}

// ErrReassignClaimed: another owner holds a replication throttle claim
// (a reassignment by an agent or an operator's command is running, or
// its throttle is not yet restored): only one runs at a time.
var ErrReassignClaimed = errors.New("another reassignment holds a replication throttle claim")

// OtherReassignClaims lists the claims of owners other than owner.
func OtherReassignClaims(recs ledger.Records, owner string) []string {
	var out []string
	for o, c := range recs.Reassigns {
		if o != owner {
			out = append(out, fmt.Sprintf("%s (instance %s, since %s)", o, c.Instance, c.Since.UTC().Format(time.RFC3339)))
		}
	}
	slices.Sort(out)
	return out
}

// AnyReassignment reports whether Kafka is reassigning any partition of
// the cluster now (ListPartitionReassignments of every partition).
func (r *Relief) AnyReassignment(ctx context.Context) ([]string, error) {
	c, err := r.src.conn()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	metas, err := c.admin.ListTopics()
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	topics := make([]string, 0, len(metas))
	for t := range metas {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	s, err := listReassignments(c, topics)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// Reassigning returns which of parts ("topic/partition") Kafka is
// reassigning now.
func (r *Relief) Reassigning(ctx context.Context, parts []string) ([]string, error) {
	c, err := r.src.conn()
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, p := range parts {
		if i := strings.LastIndexByte(p, '/'); i > 0 && !slices.Contains(topics, p[:i]) {
			topics = append(topics, p[:i])
		}
	}
	s, err := listReassignments(c, topics)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range parts {
		if _, ok := s[p]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// releaseWait bounds how long Execute retries the throttle's release
// while the brokers still read the old values back.
const releaseWait = 30 * time.Second

// executeClaimed is Execute with the throttle as a ledger claim.
func (r *Relief) executeClaimed(ctx context.Context, c *conn, plan relief.Plan, opts ExecuteOptions) error {
	cl := opts.Claim
	claim := cl.PlanClaim(plan, opts.ThrottleBytesPerSecond, time.Now())
	// Recorded before any value is set: a crash in between leaves a claim
	// whose restore finds nothing of the guard's in place.
	if err := cl.Store.StoreReassign(ctx, claim); err != nil {
		return fmt.Errorf("record the replication throttle claim: %w", err)
	}
	undo := func(err error) error {
		// Nothing moved yet: the throttle goes again, with its claim.
		rel := enforcer.ReassignRelease{Admin: r, Store: cl.Store, Claim: claim, Instance: cl.Instance}
		return errors.Join(err, enforcer.ReleaseReassignWithin(context.WithoutCancel(ctx), rel, releaseWait))
	}
	if err := enforcer.SetReplicationThrottle(ctx, r, claim.Entries); err != nil {
		return undo(fmt.Errorf("set replication throttle: %w", err))
	}
	if err := submit(c, plan); err != nil {
		return undo(err)
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
		if now := time.Now(); cl.Lease > 0 && now.Sub(claim.Renewed) > cl.Lease/3 {
			claim.Renewed = now
			if err := cl.Store.StoreReassign(ctx, claim); err != nil && ctx.Err() == nil {
				// Not fatal: the next poll renews again; a claim gone
				// unrenewed for its lease waits for the moves to end.
				claim.Renewed = now.Add(-cl.Lease)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("execute: stopped while the reassignment goes on in Kafka with its replication throttle in place "+
				"(claimed as %s: a guard agent restores it once the moves are done and the claim's lease has passed; `protection lift --all` now): %w",
				ledger.ReassignKey(cl.Owner), ctx.Err())
		case <-tick.C:
		}
	}
	rel := enforcer.ReassignRelease{Admin: r, Store: cl.Store, Claim: claim, Instance: cl.Instance}
	if err := enforcer.ReleaseReassignWithin(ctx, rel, releaseWait); err != nil {
		return fmt.Errorf("the reassignment is done; remove the replication throttle (its claim stays releasing: `protection lift --all` or a guard agent removes it): %w", err)
	}
	return nil
}
