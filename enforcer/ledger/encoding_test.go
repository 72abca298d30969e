package ledger

import (
	"encoding/json"
	"reflect"
	"testing"
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
