package ledger

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

// ReleaseAdmin is what releasing claims needs of the admin API (the
// enforcer's Admin has it all).
type ReleaseAdmin interface {
	LoadRecords(ctx context.Context) (Records, error)
	DeleteACLs(ctx context.Context, acls []ACL) error
	DefaultProducerQuota(ctx context.Context) (int64, error)
	RemoveDefaultProducerQuota(ctx context.Context) error
	// TopicConfigOverrides reads key of each topic as set on the topic
	// itself (nil: not set there); a topic the cluster does not have is
	// left out of the map.
	TopicConfigOverrides(ctx context.Context, topics []string, key string) (map[string]*string, error)
	// AlterTopicConfig sets key on topic, or deletes the topic's override
	// when value is nil.
	AlterTopicConfig(ctx context.Context, topic, key string, value *string) error
}

// ConfigRestore is one topic config a release restored (Value: the
// operator's value; nil: the override deleted) or found changed by an
// operator (Value: what is in place; From: the guard's value).
type ConfigRestore struct {
	Topic string
	Key   string
	Value *string
	// From is the value in place before.
	From *string
	// Wanted: a restore Kafka refused (ErrConfigRefused) for the
	// operator's value, which Wanted holds; Value is what was restored
	// instead (nil: the override deleted, so the topic inherits).
	Wanted *string
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
	Configs        []ConfigRestore
	ConfigsKept    int
	ConfigsChanged []ConfigRestore
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
func ReleaseUnclaimed(ctx context.Context, a ReleaseAdmin, candidates []ACL, quota int64, configs []ConfigClaim) (Released, error) {
	var out Released
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return out, fmt.Errorf("read the protection records again: %w", err)
	}
	out.Records = recs
	live := recs.LiveBindings()
	for _, c := range candidates {
		if c = NormACL(c); live[c] {
			out.Kept++
		} else {
			out.ACLs = append(out.ACLs, c)
		}
	}
	var errs []error
	if err := deleteInOrder(ctx, a, out.ACLs); err != nil {
		errs = append(errs, err)
		out.ACLs = nil
	}
	if quota > 0 && !recs.LiveQuota(quota) {
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

// deleteInOrder deletes the bindings in two requests (DeleteOrder): the
// ALLOWs of READ and WRITE go last, and only once every other binding
// went, so a failure in between leaves them, and with them the claims
// still releasing, for the next attempt (deleting a binding already gone
// changes nothing).
func deleteInOrder(ctx context.Context, a ReleaseAdmin, acls []ACL) error {
	first, last := DeleteOrder(acls)
	for _, part := range [][]ACL{first, last} {
		if len(part) == 0 {
			continue
		}
		if err := a.DeleteACLs(ctx, part); err != nil {
			return fmt.Errorf("delete acls: %w", err)
		}
	}
	return nil
}

// restoreConfigs restores the claimed topic configs no live record
// claims: read what is in place, and put the operator's value back only
// where the value in place is one the guard set.
func restoreConfigs(ctx context.Context, a ReleaseAdmin, recs Records, configs []ConfigClaim, out *Released) error {
	live := recs.LiveConfigClaims()
	// Every claim on a key, in order: the one that restores over the
	// value in place is the one released (a lift lists every record's).
	byKey := map[[2]string][]ConfigClaim{}
	var handBack []ConfigClaim
	for _, c := range configs {
		k := [2]string{c.Topic, c.Key}
		if live[k] {
			out.ConfigsKept++
			handBack = append(handBack, c)
			continue
		}
		byKey[k] = append(byKey[k], c)
	}
	errs := []error{handBackConfigs(ctx, a, recs, handBack, out)}
	if len(byKey) == 0 {
		return errors.Join(errs...)
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(x, y [2]string) int {
		return strings.Compare(x[0]+"\x00"+x[1], y[0]+"\x00"+y[1])
	})
	for _, k := range keys {
		c := byKey[k][0]
		cur, err := a.TopicConfigOverrides(ctx, []string{c.Topic}, c.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s of topic %s: %w", c.Key, c.Topic, err))
			continue
		}
		v, ok := cur[c.Topic]
		if !ok {
			continue // the topic is gone, and its config with it
		}
		// A stale claim (made on an operator's value since changed) and
		// the claim whose value is in place: the latter's original is
		// the one to restore.
		if i := slices.IndexFunc(byKey[k], func(x ConfigClaim) bool { return recs.RestoresOver(x, v) }); i >= 0 {
			c = byKey[k][i]
		}
		if !recs.GuardSet(c, v) && SameValue(v, c.Orig) {
			continue // the operator's value is in place: the guard's never took
		}
		if !recs.GuardSet(c, v) {
			out.ConfigsChanged = append(out.ConfigsChanged, ConfigRestore{Topic: c.Topic, Key: c.Key, Value: v, From: strPtr(c.Value)})
			continue
		}
		if !recs.RestoresOver(c, v) {
			// Another claim's value, made on a newer operator's value:
			// that claim's release restores it (re-read here, just now).
			out.ConfigsKept++
			continue
		}
		// A claim made on a value the guard set restores that claim's
		// original (as the agent's own release does, localret.go).
		c.Orig = recs.GuardOriginal(c)
		restored, wanted, err := restoreOrInherit(ctx, a, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s of topic %s: %w", c.Key, c.Topic, err))
			continue
		}
		out.Configs = append(out.Configs, ConfigRestore{Topic: c.Topic, Key: c.Key, Value: restored, From: v, Wanted: wanted})
	}
	return errors.Join(errs...)
}

// LiftAdmin is what a lift needs of the admin API.
type LiftAdmin interface {
	ReleaseAdmin
	StoreLift(ctx context.Context, l Lift) error
	TopicACLs(ctx context.Context) ([]ACL, error)
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
	// Remaining: what the lift was asked to lift that is still in place
	// after it (read back): a binding, the quota or a lowered config whose
	// removal failed, and that no live record outside the lift holds.
	// Non-empty: the lift is not done (spec R8.5; the command exits
	// non-zero and can be run again).
	Remaining []string
	// Uncordoned: log dirs uncordoned (SUBTRACT), as "broker N: dir".
	Uncordoned []string
	// Untouchable: brokers in scope whose latest record does not decode:
	// left alone until a decodable record replaces it.
	Untouchable []int32
}

// LiftProtection lifts protection as an operator does (kafka-disk-guard protection
// lift): for each broker whose live claims are in scope it writes a lift
// (merged with an earlier lift the agent has not acknowledged, so nothing
// is given back), then releases the claims it voids that no other live
// record still claims. Claims in scope that are already voided or
// releasing (an earlier lift or release that failed) are released again
// without a new lift. An agent that is alive acknowledges the lift and
// does not protect that scope again until its episode ends (or until
// kafka-disk-guard protection resume). Bindings no record claims are
// never touched. What is still in place afterwards is read back into
// Remaining.
func LiftProtection(ctx context.Context, a LiftAdmin, req LiftRequest) (LiftResult, error) {
	var res LiftResult
	if req.Kind == "" {
		req.Kind = LiftOperator
	}
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return res, fmt.Errorf("read the protection records: %w", err)
	}
	t := liftTargets{quotas: map[int64]bool{}, cordons: map[int32][]Owned{}}
	for _, id := range slices.Sorted(maps.Keys(recs.Agents)) {
		if !req.All && req.Topic == "" && id != req.Broker {
			continue
		}
		if recs.Undecodable[id] > 0 && !recs.UndecodableLift[id] {
			// Its latest record does not decode: what it claims now is
			// unknown, so nothing of it is lifted (spec R8.7). Only its
			// lift undecodable, its claims are known: the lift written
			// here replaces that value.
			res.Untouchable = append(res.Untouchable, id)
			continue
		}
		l, live := t.collect(recs, id, req)
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
	for _, id := range slices.Sorted(maps.Keys(recs.Undecodable)) {
		if _, ok := recs.Agents[id]; !ok && (req.All || req.Topic != "" || id == req.Broker) {
			res.Untouchable = append(res.Untouchable, id)
		}
	}
	slices.Sort(res.Untouchable)
	if len(t.cands) == 0 && len(t.quotas) == 0 && len(t.configs) == 0 && len(t.cordons) == 0 {
		return res, nil
	}
	return res, t.release(ctx, a, &res)
}

// liftTargets is what a lift releases: the bindings, quota values,
// configs and cordons claimed in its scope.
type liftTargets struct {
	cands   []ACL
	quotas  map[int64]bool
	configs []ConfigClaim
	cordons map[int32][]Owned
}

// collect adds broker id's claims in the request's scope and returns the
// lift to write for it and whether any of them is live (a lift is
// written only for what is live now; what is voided or releasing is
// released again).
func (t *liftTargets) collect(recs Records, id int32, req LiftRequest) (Lift, bool) {
	r := recs.Agents[id]
	l := Lift{ID: NewLiftID(req.Kind, req.Now), BrokerID: id, Kind: req.Kind, By: req.By, At: req.Now, Reason: req.Reason, Instance: r.Instance}
	scope := func(string) bool { return true }
	if req.Topic != "" {
		l.Topics = []string{req.Topic}
		scope = func(topic string) bool { return topic == req.Topic }
	}
	live := false
	r.Bindings(scope, func(b ACL) { t.cands = append(t.cands, b) })
	r.HeldBindings(func(topic string) bool { return scope(topic) && recs.Live(id, topic) }, func(ACL) { live = true })
	if req.Topic == "" {
		for _, q := range []int64{r.Quota(), r.ReleasingQuota()} {
			if q > 0 {
				t.quotas[q] = true
			}
		}
		if q := r.Quota(); q > 0 && recs.Live(id, "") {
			live = true
		}
	}
	for _, c := range r.Configs {
		if scope(c.Topic) {
			t.configs = append(t.configs, c)
			live = live || (!c.Releasing && recs.Live(id, c.Topic))
		}
	}
	if cs := r.AllCordonClaims(); req.Topic == "" && len(cs) > 0 {
		t.cordons[id] = cs
		live = live || (len(r.CordonClaims()) > 0 && recs.Live(id, ""))
	}
	return l, live
}

// release releases the targets no other live record still claims and
// reads back into res.Remaining what is still in place.
func (t *liftTargets) release(ctx context.Context, a LiftAdmin, res *LiftResult) error {
	var errs []error
	rem, err := liftCordons(ctx, a, t.cordons, res)
	res.Remaining = rem
	errs = append(errs, err)
	qs := slices.Sorted(maps.Keys(t.quotas))
	first := int64(0)
	if len(qs) > 0 {
		first, qs = qs[0], qs[1:]
	}
	res.Released, err = ReleaseUnclaimed(ctx, a, t.cands, first, t.configs)
	errs = append(errs, err)
	for _, q := range qs {
		rel, err := ReleaseUnclaimed(ctx, a, nil, q, nil)
		res.Released.QuotaRemoved = res.Released.QuotaRemoved || rel.QuotaRemoved
		errs = append(errs, err)
	}
	rem, err = remaining(ctx, a, t.cands, t.quotas, t.configs)
	res.Remaining = append(res.Remaining, rem...)
	slices.Sort(res.Remaining)
	errs = append(errs, err)
	return errors.Join(errs...)
}

// remaining reads back what a lift was asked to lift and lists what is
// still in place and held by no live record.
func remaining(ctx context.Context, a LiftAdmin, cands []ACL, quotas map[int64]bool, configs []ConfigClaim) ([]string, error) {
	recs, err := a.LoadRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the protection records again: %w", err)
	}
	var out []string
	var errs []error
	if len(cands) > 0 {
		acls, err := a.TopicACLs(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("read the acls back: %w", err))
		}
		present := map[ACL]bool{}
		for _, x := range acls {
			present[NormACL(x)] = true
		}
		live := recs.LiveBindings()
		seen := map[ACL]bool{}
		for _, c := range cands {
			c = NormACL(c)
			if present[c] && !live[c] && !seen[c] {
				seen[c] = true
				out = append(out, fmt.Sprintf("acl %s %s %s on topic %s", c.Permission, c.Operation, c.Principal, c.Topic))
			}
		}
	}
	if len(quotas) > 0 {
		cur, err := a.DefaultProducerQuota(ctx)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read the quota back: %w", err))
		case quotas[cur] && !recs.LiveQuota(cur):
			out = append(out, fmt.Sprintf("quota %s %s=%d", DefaultClientEntity, ProducerByteRateKey, cur))
		}
	}
	live := recs.LiveConfigClaims()
	for _, c := range configs {
		if live[[2]string{c.Topic, c.Key}] {
			continue
		}
		cur, err := a.TopicConfigOverrides(ctx, []string{c.Topic}, c.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s of topic %s back: %w", c.Key, c.Topic, err))
			continue
		}
		if v, ok := cur[c.Topic]; ok && recs.RestoresOver(c, v) {
			out = append(out, fmt.Sprintf("topic config %s=%s on topic %s", c.Key, ShowValue(v), c.Topic))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), errors.Join(errs...)
}

// NewLiftID returns a unique lift id: kind, time, random.
func NewLiftID(kind string, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", kind, now.UTC().Format("20060102T150405.000Z"), hex.EncodeToString(b[:]))
}

func strPtr(s string) *string { return &s }

// ShowValue renders a config value for logs and reports: "not set" for
// nil (no override on the topic).
func ShowValue(v *string) string {
	if v == nil {
		return "not set"
	}
	return *v
}

// handBackConfigs: a claim given up on a key another live record still
// claims leaves the restore to that record, but first hands the key back
// to it: where the value in place is this claim's own (it lowered the
// value further), the lowest value a live claim holds is set again, so
// the other record reads its own value, never one no record names (which
// it would take for an operator's change and leave lowered for good).
func handBackConfigs(ctx context.Context, a ReleaseAdmin, recs Records, claims []ConfigClaim, out *Released) error {
	var errs []error
	for _, c := range claims {
		if _, ok := recs.LiveConfigValue(c.Topic, c.Key, c.Orig); !ok {
			continue
		}
		cur, err := a.TopicConfigOverrides(ctx, []string{c.Topic}, c.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s of topic %s: %w", c.Key, c.Topic, err))
			continue
		}
		in, found := cur[c.Topic]
		v, ok := recs.HandBackValue(c, in)
		if !found || !ok {
			continue
		}
		if err := a.AlterTopicConfig(ctx, c.Topic, c.Key, &v); err != nil {
			errs = append(errs, fmt.Errorf("hand %s of topic %s back to %s: %w", c.Key, c.Topic, v, err))
			continue
		}
		out.Configs = append(out.Configs, ConfigRestore{Topic: c.Topic, Key: c.Key, Value: strPtr(v), From: in})
	}
	return errors.Join(errs...)
}
