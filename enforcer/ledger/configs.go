package ledger

import (
	"context"
	"errors"
	"maps"
	"slices"
)

// Topic config claims: a tiered topic's local.retention.bytes the guard
// lowered (spec R7.4), recorded, leased and lifted like protection.

// ConfigClaims lists the topic configs the record holds (not releasing).
func (r Record) ConfigClaims() []Owned {
	var out []Owned
	for _, o := range r.Owned {
		if o.Kind == OwnedTopicConfig && !o.Releasing {
			out = append(out, o)
		}
	}
	return out
}

// AllConfigClaims lists every topic config claim of the record, releasing
// ones included.
func (r Record) AllConfigClaims() []Owned {
	var out []Owned
	for _, o := range r.Owned {
		if o.Kind == OwnedTopicConfig {
			out = append(out, o)
		}
	}
	return out
}

// LiveConfigClaims is every (topic, key) some live record claims.
func (rs Records) LiveConfigClaims() map[[2]string]bool {
	out := map[[2]string]bool{}
	for id, r := range rs.Agents {
		for _, c := range r.ConfigClaims() {
			if rs.Live(id, c.Topic) {
				out[[2]string{c.Topic, c.Key}] = true
			}
		}
	}
	return out
}

// ValueClaim returns a claim on (topic, key) of any record (voided,
// releasing or not) whose value is v: v is a value the guard set.
func (rs Records) ValueClaim(topic, key, v string) (Owned, bool) {
	for _, id := range slices.Sorted(maps.Keys(rs.Agents)) {
		for _, c := range rs.Agents[id].AllConfigClaims() {
			if c.Topic == topic && c.Key == key && (c.Value == v || (c.Prev != nil && *c.Prev == v)) {
				return c, true
			}
		}
	}
	return Owned{}, false
}

// GuardSet reports whether cur, the value in place, is one the guard
// set: it equals the claim's own value or another record's claim on the
// same key.
func (rs Records) GuardSet(c Owned, cur *string) bool {
	if cur == nil {
		return false
	}
	if *cur == c.Value || (c.Prev != nil && *cur == *c.Prev) {
		return true
	}
	_, ok := rs.ValueClaim(c.Topic, c.Key, *cur)
	return ok
}

// ErrConfigRefused marks an AlterTopicConfig error that is Kafka refusing
// the value (INVALID_CONFIG, POLICY_VIOLATION, INVALID_REQUEST), not a
// failure to reach it: the admin adapter wraps those with it. A refused
// change is its own action result (ResultRefused) and log line; the
// value in place stays the operator's.
var ErrConfigRefused = errors.New("refused by kafka")

// restoreOrInherit puts the operator's value c.Orig back. When Kafka
// refuses it (ErrConfigRefused: the operator lowered retention.bytes
// below it meanwhile, set remote.log.copy.disable, raised
// remote.copy.lag.bytes), it deletes the override instead, so the topic
// inherits local.retention.bytes (-2 by default: retention.bytes, the
// nearest value Kafka accepts for an original above retention.bytes or
// -1 under a size limit, and the only one besides retention.bytes itself
// with copying off). remote.copy.lag.bytes never refuses the original:
// the guard's value is at or above the lag (LocalRetentionFloor) and at or
// below the original, and Kafka refuses a lag above the value in place, so
// the original stays at or above any lag set meanwhile. So inheriting is
// the nearest value Kafka accepts (AcceptedLocalBytes) in every refusal a
// restore can meet. It returns what was restored and, when that is not
// the original, the original (for the log line).
func restoreOrInherit(ctx context.Context, a ReleaseAdmin, c Owned) (restored, wanted *string, err error) {
	err = a.AlterTopicConfig(ctx, c.Topic, c.Key, c.Orig)
	if err == nil || c.Orig == nil || !errors.Is(err, ErrConfigRefused) {
		return c.Orig, nil, err
	}
	if err2 := a.AlterTopicConfig(ctx, c.Topic, c.Key, nil); err2 != nil {
		return nil, nil, errors.Join(err, err2)
	}
	return nil, c.Orig, nil
}

// SameValue reports whether two config values (nil: not set) are equal.
func SameValue(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
