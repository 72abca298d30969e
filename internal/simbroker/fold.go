package simbroker

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Folding the ownership topic decodes each value once: a value stays in
// the partition across many writes of other keys (each write drops only
// its own key's older value), and the simulation reads the ledger several
// times a step (every agent's pass, the relief rungs, the invariants).
// Decoding it at each read was most of the simulation's time; the adapter
// reads incrementally and decodes each value once too.

// decoded is one value of the ownership topic as ledger.ApplyRecord
// decodes it, kept with the value.
type decoded struct {
	// plain: folding the value only sets its entry (a value that
	// decodes, or a reassign claim's, which is set undecodable): one
	// holds it, folded alone. Otherwise (a tombstone, a value that does
	// not decode) the fold calls ledger.ApplyRecord.
	plain bool
	one   ledger.Records
	// record: the key is a broker's record or lift: a decodable value
	// also clears the broker's undecodable count.
	record bool
	id     int32
}

// apply folds the value into out as ledger.ApplyRecord(out, key, value)
// does (TestFoldIsApplyRecord), decoding it only the first time.
func (e *kv) apply(out ledger.Records) {
	if e.dec == nil {
		e.dec = decode(e.key, e.value)
	}
	d := e.dec
	if !d.plain {
		ledger.ApplyRecord(out, []byte(e.key), e.value)
		return
	}
	for id, r := range d.one.Agents {
		out.Agents[id] = r
	}
	for id, l := range d.one.Lifts {
		out.Lifts[id] = l
	}
	for id, t := range d.one.Throttles {
		out.Throttles[id] = t
	}
	for o, r := range d.one.Reassigns {
		out.Reassigns[o] = r
	}
	if d.record {
		delete(out.Undecodable, d.id)
		delete(out.UndecodableLift, d.id)
	}
}

func decode(key string, value []byte) *decoded {
	one := ledger.NewRecords()
	ledger.ApplyRecord(one, []byte(key), value)
	d := &decoded{one: one, plain: len(value) > 0 && len(one.Undecodable) == 0 && len(one.UndecodableLift) == 0}
	if _, ok := ledger.ParseThrottleKey(key); ok {
		return d
	}
	if _, ok := ledger.ParseReassignKey(key); ok {
		return d
	}
	d.id, _, d.record = ledger.ParseKey(key)
	return d
}
