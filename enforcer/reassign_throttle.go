package enforcer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The replication throttle of a cross-broker reassignment (spec R3.8) as
// a ledger claim: what sets it, what restores it. Shared by the agent's
// reassigner, `relief plan --execute`, a peer after the lease and
// `protection lift`.

// Replication throttle keys (kafka-reassign-partitions.sh --throttle).
const (
	LeaderThrottleRate        = "leader.replication.throttled.rate"
	FollowerThrottleRate      = "follower.replication.throttled.rate"
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ThrottleConfigAdmin reads and writes one resource's own dynamic config
// value (a broker's, not the cluster default; a topic's override).
type ThrottleConfigAdmin interface {
	// ThrottleConfig reads the value (set false: none).
	ThrottleConfig(ctx context.Context, resource, name, key string) (value string, set bool, err error)
	// SetThrottleConfig sets the value, or deletes it when Set is false.
	SetThrottleConfig(ctx context.Context, v ThrottleConfigValue) error
}

// ThrottleConfigValue is a throttle config value to set (Set) or delete
// (Set false) on a resource: ledger.ResourceBroker (Name the broker id)
// or ledger.ResourceTopic.
type ThrottleConfigValue struct {
	Resource, Name, Key string
	Value               string
	Set                 bool
}

// ErrReplicationThrottleInPlace: a replication throttle is already set
// where a reassignment would set one (another reassignment's, or an
// operator's): the guard neither changes nor later removes it, so it
// starts no reassignment there.
var ErrReplicationThrottleInPlace = errors.New("a replication throttle is already set")

// CheckNoReplicationThrottle reads every entry's resource and fails with
// ErrReplicationThrottleInPlace when one already has a value.
func CheckNoReplicationThrottle(ctx context.Context, a ThrottleConfigAdmin, entries []ledger.ThrottleEntry) error {
	var set []string
	for _, e := range entries {
		v, ok, err := a.ThrottleConfig(ctx, e.Resource, e.Name, e.Key)
		if err != nil {
			return err
		}
		if ok && v != "" {
			set = append(set, fmt.Sprintf("%s %s: %s=%s", e.Resource, e.Name, e.Key, v))
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("%w (another reassignment's, or an operator's): %v", ErrReplicationThrottleInPlace, set)
	}
	return nil
}

// SetReplicationThrottle sets every entry's value (the claim recorded
// first); every entry is tried.
func SetReplicationThrottle(ctx context.Context, a ThrottleConfigAdmin, entries []ledger.ThrottleEntry) error {
	var errs []error
	for _, e := range entries {
		if err := a.SetThrottleConfig(ctx, ThrottleConfigValue{Resource: e.Resource, Name: e.Name, Key: e.Key, Value: e.Value, Set: true}); err != nil {
			errs = append(errs, fmt.Errorf("set %s: %w", e, err))
		}
	}
	return errors.Join(errs...)
}

// RestoreReplicationThrottle puts each entry's original value back where
// the value in place is still the guard's, and reads it back; a value in
// place other than the guard's is an operator's and stays (spec R8.6).
// Every entry is tried; nil means none of the guard's values is left.
func RestoreReplicationThrottle(ctx context.Context, a ThrottleConfigAdmin, c ledger.ReassignClaim) error {
	if c.Undecodable {
		return errors.New("the claim does not decode (a newer guard's): left alone")
	}
	var errs []error
	for _, e := range c.Entries {
		if err := restoreEntry(ctx, a, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func restoreEntry(ctx context.Context, a ThrottleConfigAdmin, e ledger.ThrottleEntry) error {
	cur, set, err := a.ThrottleConfig(ctx, e.Resource, e.Name, e.Key)
	if err != nil {
		return err
	}
	if !set || cur != e.Value {
		return nil // restored already, or an operator's value since
	}
	v, s := "", false
	if e.Orig != nil {
		v, s = *e.Orig, true
	}
	if err := a.SetThrottleConfig(ctx, ThrottleConfigValue{Resource: e.Resource, Name: e.Name, Key: e.Key, Value: v, Set: s}); err != nil {
		return fmt.Errorf("restore %s: %w", e, err)
	}
	cur, set, err = a.ThrottleConfig(ctx, e.Resource, e.Name, e.Key)
	if err != nil {
		return err
	}
	if set != s || (s && cur != v) {
		// Applied through the metadata log: the next pass reads it again.
		return fmt.Errorf("%s %s %s reads %q after the restore to %s", e.Resource, e.Name, e.Key, cur, ledger.ShowValue(e.Orig))
	}
	return nil
}

// ReassignStore keeps replication throttle claims in the ledger.
type ReassignStore interface {
	LoadRecords(ctx context.Context) (Records, error)
	StoreReassign(ctx context.Context, c ledger.ReassignClaim) error
	DeleteReassign(ctx context.Context, owner string) error
}

// ReleaseReassign gives a claim up in two phases (spec R8.5): marked
// releasing, every value restored and read back, then the claim removed.
func ReleaseReassign(ctx context.Context, a ThrottleConfigAdmin, st ReassignStore, c ledger.ReassignClaim, instance string) error {
	if !c.Releasing || c.Instance != instance {
		c.Releasing, c.Instance = true, instance
		if err := st.StoreReassign(ctx, c); err != nil {
			return fmt.Errorf("record replication throttle release: %w", err)
		}
	}
	if err := RestoreReplicationThrottle(ctx, a, c); err != nil {
		return err
	}
	if err := st.DeleteReassign(ctx, c.Owner); err != nil {
		return fmt.Errorf("remove replication throttle claim: %w", err)
	}
	return nil
}

// ReassignRelease is a replication throttle claim to give up, as
// Instance, through Admin (the values) and Store (the claim).
type ReassignRelease struct {
	Admin    ThrottleConfigAdmin
	Store    ReassignStore
	Claim    ledger.ReassignClaim
	Instance string
}

// ReleaseReassignWithin is ReleaseReassign tried again (every 250 ms)
// until it succeeds or wait has passed: a config change reaches each
// broker through the metadata log, so a broker may read the old value
// back for a moment. For the commands, which have no next pass.
func ReleaseReassignWithin(ctx context.Context, rel ReassignRelease, wait time.Duration) error {
	c, instance := rel.Claim, rel.Instance
	deadline := time.Now().Add(wait)
	for {
		err := ReleaseReassign(ctx, rel.Admin, rel.Store, c, instance)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		c.Releasing, c.Instance = true, instance // recorded by the first try
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
