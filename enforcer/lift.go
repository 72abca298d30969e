package enforcer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ReleaseAdmin is what releasing claims needs of the admin API.
type ReleaseAdmin interface {
	LoadRecords(ctx context.Context) (Records, error)
	DeleteACLs(ctx context.Context, acls []ACL) error
	DefaultProducerQuota(ctx context.Context) (int64, error)
	RemoveDefaultProducerQuota(ctx context.Context) error
	TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error)
	AlterTopicConfig(ctx context.Context, topic, key string, value *string) error
}

// Released is what ReleaseUnclaimed removed.
type Released struct {
	ACLs []ACL
	// Kept: candidates a live record still claims.
	Kept         int
	QuotaRemoved bool
	// Configs: topic configs restored to the operator's value (Value; nil:
	// the override deleted); ConfigsKept: claims a live record still
	// holds; ConfigsChanged: values an operator changed since the guard
	// set them, left alone.
	Configs        []ConfigChange
	ConfigsKept    int
	ConfigsChanged []ConfigChange
	// Records as read before deleting.
	Records Records
}

// ReleaseUnclaimed is the last step of giving claims up, after the record
// that gives them up (a smaller record, or a lift) is written with
// acks=all: it reads the records to the topic's end and deletes the
// candidates no live record claims, and the default producer quota when
// quota > 0, no live record claims one, and it is still at quota (an
// operator's change is left alone). The candidates must be bindings the
// guard's records named: nothing else is ever deleted. Topic config
// claims (configs) no live record claims are restored to the operator's
// value, each only while the value in place is one the guard set (spec
// R7.4): an operator's change since is left alone.
func ReleaseUnclaimed(ctx context.Context, a ReleaseAdmin, candidates []ACL, quota int64, configs []Owned) (Released, error) {
	var out Released
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return out, fmt.Errorf("read the protection records again: %w", err)
	}
	out.Records = recs
	live := recs.LiveBindings()
	for _, c := range candidates {
		if c = normACL(c); live[c] {
			out.Kept++
		} else {
			out.ACLs = append(out.ACLs, c)
		}
	}
	var errs []error
	if len(out.ACLs) > 0 {
		if err := a.DeleteACLs(ctx, out.ACLs); err != nil {
			errs = append(errs, fmt.Errorf("delete acls: %w", err))
			out.ACLs = nil
		}
	}
	if quota > 0 && recs.LiveQuota() == 0 {
		cur, err := a.DefaultProducerQuota(ctx)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("describe client quotas: %w", err))
		case cur == quota:
			if err := a.RemoveDefaultProducerQuota(ctx); err != nil {
				errs = append(errs, fmt.Errorf("remove default producer quota: %w", err))
			} else {
				out.QuotaRemoved = true
			}
		}
	}
	if err := restoreConfigs(ctx, a, recs, configs, &out); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// restoreConfigs restores the claimed topic configs no live record
// claims: read what is in place, and put the operator's value back only
// where the value in place is one the guard set.
func restoreConfigs(ctx context.Context, a ReleaseAdmin, recs Records, configs []Owned, out *Released) error {
	live := recs.LiveConfigClaims()
	byKey := map[[2]string]Owned{}
	for _, c := range configs {
		k := [2]string{c.Topic, c.Key}
		if _, dup := byKey[k]; dup {
			continue
		}
		if live[k] {
			out.ConfigsKept++
			continue
		}
		byKey[k] = c
	}
	if len(byKey) == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(x, y [2]string) int {
		return strings.Compare(x[0]+"\x00"+x[1], y[0]+"\x00"+y[1])
	})
	var errs []error
	for _, k := range keys {
		c := byKey[k]
		cur, err := a.TopicConfigOverrides(ctx, []string{c.Topic}, c.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s of topic %s: %w", c.Key, c.Topic, err))
			continue
		}
		v, ok := cur[c.Topic]
		if !ok {
			continue // the topic is gone, and its config with it
		}
		if !recs.guardSet(c, v) && sameValue(v, c.Orig) {
			continue // the operator's value is in place: the guard's never took
		}
		if !recs.guardSet(c, v) {
			out.ConfigsChanged = append(out.ConfigsChanged, ConfigChange{Topic: c.Topic, Key: c.Key, Value: v, From: strPtr(c.Value)})
			continue
		}
		restored, wanted, err := restoreOrInherit(ctx, a, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s of topic %s: %w", c.Key, c.Topic, err))
			continue
		}
		out.Configs = append(out.Configs, ConfigChange{Topic: c.Topic, Key: c.Key, Value: restored, From: v, Wanted: wanted})
	}
	return errors.Join(errs...)
}

// LiftAdmin is what a lift needs of the admin API.
type LiftAdmin interface {
	ReleaseAdmin
	StoreLift(ctx context.Context, l Lift) error
}

// LiftRequest says what an operator lifts.
type LiftRequest struct {
	// All, or one broker's claims, or one topic in every record.
	All    bool
	Broker int32 // with !All and Topic == ""
	Topic  string
	// By names who lifts (the operator's user and host); Reason is free
	// text for the record and the log line.
	By     string
	Reason string
	Kind   string // LiftOperator (default)
	Now    time.Time
}

// LiftResult is what Lift did, per broker.
type LiftResult struct {
	Lifts    []Lift
	Released Released
}

// LiftProtection lifts protection as an operator does (kafka-disk-guard protection
// lift): for each broker whose live claims are in scope it writes a lift
// (merged with an earlier lift the agent has not acknowledged, so nothing
// is given back), then releases the claims it voids that no other live
// record still claims. An agent that is alive acknowledges the lift and
// does not protect that scope again until its episode ends (or until
// kafka-disk-guard protection resume). Bindings no record claims are
// never touched.
func LiftProtection(ctx context.Context, a LiftAdmin, req LiftRequest) (LiftResult, error) {
	var res LiftResult
	if req.Kind == "" {
		req.Kind = LiftOperator
	}
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return res, fmt.Errorf("read the protection records: %w", err)
	}
	var cands []ACL
	var quota int64
	var configs []Owned
	for _, id := range slices.Sorted(maps.Keys(recs.Agents)) {
		r := recs.Agents[id]
		if !req.All && req.Topic == "" && id != req.Broker {
			continue
		}
		l := Lift{ID: NewLiftID(req.Kind, req.Now), BrokerID: id, Kind: req.Kind, By: req.By, At: req.Now, Reason: req.Reason}
		scope := func(string) bool { return true }
		if req.Topic != "" {
			l.Topics = []string{req.Topic}
			scope = func(t string) bool { return t == req.Topic }
		}
		// Only what is live now is lifted again.
		live := false
		r.Bindings(func(t string) bool { return scope(t) && recs.Live(id, t) }, func(b ACL) {
			live = true
			cands = append(cands, b)
		})
		if q := r.Quota(); q > 0 && req.Topic == "" && recs.Live(id, "") {
			live, quota = true, q
		}
		for _, c := range r.ConfigClaims() {
			if scope(c.Topic) && recs.Live(id, c.Topic) {
				live = true
				configs = append(configs, c)
			}
		}
		if !live {
			continue
		}
		if earlier, ok := recs.PendingLift(id); ok {
			l = l.Merge(earlier)
		}
		if err := a.StoreLift(ctx, l); err != nil {
			return res, fmt.Errorf("record the lift of broker %d: %w", id, err)
		}
		res.Lifts = append(res.Lifts, l)
	}
	if len(res.Lifts) == 0 {
		return res, nil
	}
	res.Released, err = ReleaseUnclaimed(ctx, a, cands, quota, configs)
	return res, err
}

// NewLiftID returns a unique lift id: kind, time, random.
func NewLiftID(kind string, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", kind, now.UTC().Format("20060102T150405.000Z"), hex.EncodeToString(b[:]))
}
