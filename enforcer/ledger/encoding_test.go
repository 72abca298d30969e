package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Config claims have their own type but keep the record format: one
// "owned" list, kind topic_config, read by a guard of the previous
// release during a rolling upgrade, and read back from it.
func TestConfigClaimsKeepTheRecordFormat(t *testing.T) {
	orig := "9000"
	r := Record{BrokerID: 1, Owned: []Owned{QuotaOwned(1024)},
		Configs: []ConfigClaim{{Topic: "clicks", Key: "local.retention.bytes", Value: "2000", Orig: &orig, Releasing: true}}}
	data, err := EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Owned []map[string]any `json:"owned"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"kind": "quota", "entity": DefaultClientEntity, "key": ProducerByteRateKey, "value": "1024"},
		{"kind": "topic_config", "topic": "clicks", "key": "local.retention.bytes", "value": "2000", "original": "9000", "releasing": true},
	}
	if !reflect.DeepEqual(wire.Owned, want) {
		t.Fatalf("R8.4/owned on the wire\n got %v\nwant %v", wire.Owned, want)
	}
	// The previous release's encoding of the same record.
	old := `{"v":2,"broker_id":1,"owned":[{"kind":"topic_config","topic":"clicks","key":"local.retention.bytes","value":"2000","original":"9000","releasing":true},` +
		`{"kind":"quota","entity":"client-id=<default>","key":"producer_byte_rate","value":"1024"}]}`
	got, err := DecodeRecord([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	r.Version = RecordVersion
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("R8.4/decoded\n got %+v\nwant %+v", got, r)
	}
	if got.Claims() != true || len(got.ConfigClaims()) != 0 || len(got.ReleasingConfigs()) != 1 || got.Quota() != 1024 {
		t.Errorf("claims %v held configs %d releasing %d quota %d", got.Claims(), len(got.ConfigClaims()), len(got.ReleasingConfigs()), got.Quota())
	}
}

// The processes a record inherited and those a peer wrote claims of into
// it travel in two lists a guard of the previous release skips; a record
// without them encodes as before, and one of the previous release decodes
// with none.
func TestInheritsKeepTheRecordFormat(t *testing.T) {
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := Record{BrokerID: 1, Started: t1.Add(time.Hour), Inherits: []time.Time{t1}, WrittenBack: []time.Time{t1.Add(time.Minute)}}
	data, err := EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Inherited(t1) || !got.Inherited(t1.Add(time.Hour)) || got.Inherited(t1.Add(time.Minute)) || len(got.WrittenBack) != 1 {
		t.Fatalf("R8.7/decoded %+v", got)
	}
	plain, err := EncodeRecord(Record{BrokerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(plain) != `{"v":2,"broker_id":1}` {
		t.Errorf("a record without them encodes as %s", plain)
	}
	old, err := DecodeRecord([]byte(`{"v":2,"broker_id":1,"started":"2026-03-01T12:00:00Z"}`))
	if err != nil || len(old.Inherits) != 0 || !old.Inherited(t1) || old.Inherited(t1.Add(time.Hour)) {
		t.Fatalf("the previous release's record: %+v %v", old, err)
	}
}
