package ledger

import (
	"reflect"
	"slices"
)

// Adopt returns r with the claims of from that r lacks added (bindings by
// shape and topic, other claims whole, a topic config when r claims no
// value of that key, or, where r's claim on the key was made on the value
// from's sets, from's original), and whether any was. Used only between two records
// of one broker's agent (its earlier process's and its own), so every
// claim added is one the guard made.
func Adopt(r, from Record) (Record, bool) {
	added := false
	owned := slices.Clone(r.Owned)
	for _, o := range from.Owned {
		if o.Kind == OwnedACL && o.Shape != nil {
			// A topic counts as claimed in either state (held or
			// releasing) under the same shape.
			var missing []string
			for _, t := range o.Topics {
				if !slices.ContainsFunc(owned, func(x Owned) bool {
					return x.Kind == OwnedACL && x.Shape != nil && reflect.DeepEqual(*x.Shape, *o.Shape) && slices.Contains(x.Topics, t)
				}) {
					missing = append(missing, t)
				}
			}
			if len(missing) == 0 {
				continue
			}
			i := slices.IndexFunc(owned, func(x Owned) bool {
				return x.Kind == OwnedACL && x.Shape != nil && reflect.DeepEqual(*x.Shape, *o.Shape) && x.Releasing == o.Releasing
			})
			if i >= 0 {
				topics := append(slices.Clone(owned[i].Topics), missing...)
				slices.Sort(topics)
				owned[i].Topics = topics
			} else {
				o.Topics = missing
				owned = append(owned, o)
			}
			added = true
			continue
		}
		if slices.ContainsFunc(owned, func(x Owned) bool { return sameClaim(x, o) }) {
			continue
		}
		o.Topics = slices.Clone(o.Topics)
		owned, added = append(owned, o), true
	}
	configs := slices.Clone(r.Configs)
	for _, c := range from.Configs {
		i := slices.IndexFunc(configs, func(x ConfigClaim) bool { return x.Topic == c.Topic && x.Key == c.Key })
		if i < 0 {
			configs, added = append(configs, c), true
			continue
		}
		// r's claim was made on c's value, taken for the operator's (the
		// process restarted while the ledger was lost, and lowered the
		// value its earlier process had set): the operator's value is
		// c's original, and the value it lowered from is the guard's.
		// Kept as it was, r's claim restored the earlier process's value
		// for good (found by the simulation, seed 10027).
		if x := configs[i]; x.Orig != nil && c.Sets(x.Orig) && !SameValue(x.Orig, c.Orig) {
			if x.Prev == nil {
				x.Prev = x.Orig
			}
			x.Orig = c.Orig
			configs[i], added = x, true
		}
	}
	if !added {
		return r, false
	}
	r.Owned, r.Configs = owned, configs
	return r, true
}

// sameClaim: a and b claim the same thing, held or releasing.
func sameClaim(a, b Owned) bool {
	a.Releasing, b.Releasing = false, false
	return reflect.DeepEqual(a, b)
}

// Without returns r without the claims x holds (bindings by shape and
// topic, other claims whole, a topic config by topic, key and value),
// held or releasing. Used by an agent that takes over a later write of an
// earlier process: what it took over before and released since is not
// taken again. A config claim of the later write on the same key with
// another value (lowered further) is not one it released (seed 30286).
func Without(r, x Record) Record {
	var owned []Owned
	for _, o := range r.Owned {
		if o.Kind == OwnedACL && o.Shape != nil {
			o.Topics = slices.DeleteFunc(slices.Clone(o.Topics), func(t string) bool {
				return slices.ContainsFunc(x.Owned, func(y Owned) bool {
					return y.Kind == OwnedACL && y.Shape != nil && reflect.DeepEqual(*y.Shape, *o.Shape) && slices.Contains(y.Topics, t)
				})
			})
			if len(o.Topics) > 0 {
				owned = append(owned, o)
			}
			continue
		}
		if !slices.ContainsFunc(x.Owned, func(y Owned) bool { return sameClaim(y, o) }) {
			owned = append(owned, o)
		}
	}
	r.Owned = owned
	r.Configs = slices.DeleteFunc(slices.Clone(r.Configs), func(c ConfigClaim) bool {
		return slices.ContainsFunc(x.Configs, func(y ConfigClaim) bool { return y.Topic == c.Topic && y.Key == c.Key && y.Value == c.Value })
	})
	return r
}

// LaterOriginals returns r with the original of each topic config claim
// that a claim of later, a later write of the process whose older write
// r's writer took over, holds with the same value and another original
// taken from later, and whether any was. The later write is the newer
// word on that claim: its process took a newer operator's value as the
// original since the older write (Records.RestoresOver), and the older
// copy, restored, put a stale original back over the operator's value
// (found by the simulation, seed 47558).
func LaterOriginals(r, later Record) (Record, bool) {
	changed := false
	configs := r.Configs
	for i, x := range r.Configs {
		j := slices.IndexFunc(later.Configs, func(c ConfigClaim) bool {
			return c.Topic == x.Topic && c.Key == x.Key && c.Value == x.Value && !SameValue(c.Orig, x.Orig)
		})
		if j < 0 {
			continue
		}
		if !changed {
			configs, changed = slices.Clone(r.Configs), true
		}
		configs[i].Orig = later.Configs[j].Orig
	}
	r.Configs = configs
	return r, changed
}
