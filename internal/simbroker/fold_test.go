package simbroker

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// TestFoldIsApplyRecord: folding values decoded once (kv.apply) gives
// what ledger.ApplyRecord gives, for any order of records, lifts,
// throttle and reassign claims, tombstones, garbage and unknown keys,
// each value folded many times.
func TestFoldIsApplyRecord(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	must := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type entry struct {
		key   string
		value []byte
	}
	var pool []entry
	for _, id := range []int32{1, 2} {
		rec := ledger.Record{Version: 2, BrokerID: id, Instance: "agent", Renewed: at, LeaseMs: 60000, LogDirs: []string{"/d"},
			Owned: []ledger.Owned{{Kind: ledger.OwnedQuota, Entity: "default", Key: "producer_byte_rate", Value: "1024"}}}
		pool = append(pool,
			entry{ledger.RecordKey(id), must(ledger.EncodeRecord(rec))},
			entry{ledger.LiftKey(id), must(ledger.EncodeLift(ledger.Lift{ID: "l", BrokerID: id, Kind: ledger.LiftOperator, By: "op", At: at}))},
			entry{ledger.ThrottleKey(id), must(ledger.EncodeThrottle(ledger.ThrottleClaim{BrokerID: id, Key: "k", Value: "1", Since: at}))},
			entry{ledger.ReassignKey("broker-1"), must(ledger.EncodeReassign(ledger.ReassignClaim{Owner: "broker-1", Since: at}))},
		)
	}
	var keys []string
	for _, e := range pool {
		keys = append(keys, e.key)
	}
	keys = append(keys, "unknown-key")
	for _, k := range keys {
		pool = append(pool, entry{k, nil}, entry{k, []byte("\x00garbage\xff")}, entry{k, []byte(`{"v":99,"broker_id":9}`)})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var part []kv
		for range 1 + rng.IntN(12) {
			e := pool[rng.IntN(len(pool))]
			part = append(part, kv{key: e.key, value: e.value})
		}
		want := ledger.NewRecords()
		for _, e := range part {
			ledger.ApplyRecord(want, []byte(e.key), e.value)
		}
		for range 2 { // decoded, then from the kept decoding
			got := ledger.NewRecords()
			for i := range part {
				part[i].apply(got)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fold of %d values:\n got %+v\nwant %+v", len(part), got, want)
			}
		}
	}
}
