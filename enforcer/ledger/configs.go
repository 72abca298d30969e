package ledger

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Topic config claims: a tiered topic's local.retention.bytes the guard
// lowered (spec R7.4), recorded, leased and lifted like protection, but
// not protection: its own type, metrics and error reason.

// ConfigClaim is a topic config the guard changed: Value on Topic's Key,
// and the operator's value to restore (Orig; nil when the key was not set
// on the topic).
type ConfigClaim struct {
	Topic string
	Key   string
	Value string
	Orig  *string
	// Prev: the guard's own earlier value, while it lowers the value
	// further (a value in place equal to it is the guard's).
	Prev *string
	// Releasing: being given up (spec R8.5), as Owned.Releasing: kept
	// until the value in place is read back restored or no longer the
	// guard's.
	Releasing bool
}

// ConfigClaims lists the topic configs the record holds (not releasing).
func (r Record) ConfigClaims() []ConfigClaim { return withReleasing(r.Configs, false) }

// ReleasingConfigs lists the topic config claims being given up.
func (r Record) ReleasingConfigs() []ConfigClaim { return withReleasing(r.Configs, true) }

// SameConfigs reports whether two lists of config claims are equal as
// sets.
func SameConfigs(a, b []ConfigClaim) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(c ConfigClaim) string {
		orig := "-"
		if c.Orig != nil {
			orig = strconv.Quote(*c.Orig)
		}
		return strings.Join([]string{c.Topic, c.Key, c.Value, strconv.FormatBool(c.Releasing), orig}, "|")
	}
	ka := make([]string, 0, len(a))
	kb := make([]string, 0, len(b))
	for i := range a {
		ka, kb = append(ka, key(a[i])), append(kb, key(b[i]))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
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
func (rs Records) ValueClaim(topic, key, v string) (ConfigClaim, bool) {
	for _, id := range slices.Sorted(maps.Keys(rs.Agents)) {
		for _, c := range rs.Agents[id].Configs {
			if c.Topic == topic && c.Key == key && (c.Value == v || (c.Prev != nil && *c.Prev == v)) {
				return c, true
			}
		}
	}
	return ConfigClaim{}, false
}

// GuardSet reports whether cur, the value in place, is one the guard
// set: it equals the claim's own value or another record's claim on the
// same key.
func (rs Records) GuardSet(c ConfigClaim, cur *string) bool {
	if cur == nil {
		return false
	}
	if *cur == c.Value || (c.Prev != nil && *cur == *c.Prev) {
		return true
	}
	_, ok := rs.ValueClaim(c.Topic, c.Key, *cur)
	return ok
}

// GuardOriginal is the operator's value claim c lowered: c.Orig, or,
// where c.Orig is a value another record's claim on the key sets (a value
// the guard set, taken for the operator's when c was made because the
// record holding it was lost with the ownership topic and written back
// since), that claim's original, followed through such claims. Restored,
// c.Orig would put the other claim's value back for good once that claim
// is given up over c's value (found by the simulation, ledger_delete,
// seed 232).
func (rs Records) GuardOriginal(c ConfigClaim) *string {
	orig := c.Orig
	for range len(rs.Agents) {
		if orig == nil {
			break
		}
		other, ok := rs.ValueClaim(c.Topic, c.Key, *orig)
		if !ok || SameValue(other.Orig, orig) {
			break
		}
		orig = other.Orig
	}
	return orig
}

// OriginalTaken reports whether a claim on c's key in a record other
// than id's was made on c's value, taken for the operator's (its original
// is a value c sets, and not c's original): c is what names that value as
// the guard's, and its original as the one to restore (GuardOriginal).
func (rs Records) OriginalTaken(id int32, c ConfigClaim) bool {
	for oid, r := range rs.Agents {
		if oid == id {
			continue
		}
		for _, o := range r.Configs {
			if o.Topic == c.Topic && o.Key == c.Key && c.Sets(o.Orig) && !SameValue(o.Orig, c.Orig) {
				return true
			}
		}
	}
	return false
}

// OtherOriginalSets reports whether a claim on (topic, key) of any
// record made on another operator's value than orig sets v (its value or
// its earlier one). Two claims with different originals must not share a
// value: the value in place would not say which original is the one to
// restore.
func (rs Records) OtherOriginalSets(topic, key, v string, orig *string) bool {
	for _, r := range rs.Agents {
		for _, o := range r.Configs {
			if o.Topic == topic && o.Key == key && o.Sets(&v) && !SameValue(o.Orig, orig) {
				return true
			}
		}
	}
	return false
}

// RestoresOver reports whether a release of claim c puts c.Orig back
// over cur, the value in place: cur is c's own value, or another claim's
// made on the same operator's value. Another claim's value made on
// another operator's value (an operator changed the value between the
// two claims) is that claim's to restore: its original is the newer one,
// and c's would overwrite the operator's change.
func (rs Records) RestoresOver(c ConfigClaim, cur *string) bool {
	if cur == nil {
		return false
	}
	if c.Sets(cur) {
		return true
	}
	for _, r := range rs.Agents {
		for _, o := range r.Configs {
			if o.Topic == c.Topic && o.Key == c.Key && o.Sets(cur) && SameValue(o.Orig, c.Orig) {
				return true
			}
		}
	}
	return false
}

// Shadowed reports whether claim c of broker id's record, remembered
// from a record the ownership topic lost, shares a value (its value or
// its earlier one) with another record's claim on the key in rs made on
// another original, and not on c's value. Both cannot be right: the value
// in place names one original. The claim in rs was made since the topic
// came back, on the value then in place, so c's original is stale: an
// operator changed the value while the topic was lost, and an agent that
// knew no record lowered it since to c's number (found by the
// simulation, ledger_delete, seeds 1589, 658 and 1881: c, written back,
// restored its original over the operator's value).
func (rs Records) Shadowed(id int32, c ConfigClaim) bool {
	for oid, r := range rs.Agents {
		if oid == id {
			continue
		}
		for _, o := range r.Configs {
			if o.Topic == c.Topic && o.Key == c.Key && (o.Sets(&c.Value) || c.Sets(&o.Value)) &&
				!SameValue(o.Orig, c.Orig) && !c.Sets(o.Orig) {
				return true
			}
		}
	}
	return false
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
func restoreOrInherit(ctx context.Context, a ReleaseAdmin, c ConfigClaim) (restored, wanted *string, err error) {
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

// UnionConfigs is what a record claims while it grows from a to b: every
// (topic, key) of either, b's claim where both have one.
func UnionConfigs(a, b []ConfigClaim) []ConfigClaim {
	out := slices.Clone(a)
	for _, c := range b {
		i := slices.IndexFunc(out, func(x ConfigClaim) bool { return x.Topic == c.Topic && x.Key == c.Key })
		if i < 0 {
			out = append(out, c)
		} else {
			out[i] = c
		}
	}
	return out
}

// Sets reports whether cur, a value in place, is this claim's own (its
// value, or its earlier one while it lowers further).
func (c ConfigClaim) Sets(cur *string) bool {
	return cur != nil && (*cur == c.Value || (c.Prev != nil && *cur == *c.Prev))
}

// HandBackValue is the value claim c, given up while a live record
// holds its key, sets again over in, the value in place (ok false: none):
// the lowest value a live claim made on c's original holds, where in is
// c's own and no claim made on another operator's value holds the same
// number (that claim's value, with its original, is left in place), and
// none holds the value handed back either: put in place, that value would
// name two originals, and the other claim's release would restore its
// own, older one over the operator's value (found by the simulation,
// seed 3895: an operator changed the value while the agent whose claim
// set it was dead; a peer lowered it again on the operator's value, a
// second peer's claim took that original for its own value, the first
// peer's release handed the key back to that value, and the dead agent,
// restarted, restored its stale original). The claim then stays,
// releasing, its value in place, until the other claims go. A claim of
// a record a peer wrote back (Restored) is not handed back to until its
// agent writes the record again: the copy is as the peer last read it,
// and may hold a claim its agent has given up since (found by the
// simulation, seeds 13308 and 18923: the key was handed back to such a
// claim, its agent wrote its record again without it, and the value
// stayed, in no record).
func (rs Records) HandBackValue(c ConfigClaim, in *string) (v string, ok bool) {
	v, ok = rs.liveConfigValue(c.Topic, c.Key, c.Orig, false)
	if !ok || !c.Sets(in) || *in == v || rs.OtherOriginalSets(c.Topic, c.Key, *in, c.Orig) ||
		rs.OtherOriginalSets(c.Topic, c.Key, v, c.Orig) {
		return "", false
	}
	return v, true
}

// LiveConfigValue is the lowest value the live claims on (topic, key)
// with the operator's value orig hold (ok false: none): what a claim
// given up hands the key back to. A claim with another operator's value
// is left out: an operator changed the value between the two claims.
func (rs Records) LiveConfigValue(topic, key string, orig *string) (v string, ok bool) {
	return rs.liveConfigValue(topic, key, orig, true)
}

// liveConfigValue is LiveConfigValue, of the records a peer wrote back
// (Restored) too or not.
func (rs Records) liveConfigValue(topic, key string, orig *string, restored bool) (v string, ok bool) {
	best := int64(math.MaxInt64)
	for id, r := range rs.Agents {
		if r.Restored && !restored {
			continue
		}
		for _, c := range r.ConfigClaims() {
			if c.Topic != topic || c.Key != key || !rs.Live(id, topic) || !SameValue(c.Orig, orig) {
				continue
			}
			if n, err := strconv.ParseInt(c.Value, 10, 64); err == nil && n < best {
				best, v, ok = n, c.Value, true
			}
		}
	}
	return v, ok
}
