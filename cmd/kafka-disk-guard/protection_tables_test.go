package main

import (
	"bytes"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The lowered configs' and the cordons' tables: a row per claim, the
// operator's cordons beside the guard's, and nothing without a row.
func TestProtectionStatusTables(t *testing.T) {
	orig, cur := "1000", "10"
	st := ledger.Status{Brokers: []ledger.BrokerStatus{
		{BrokerID: 1, Configs: []ledger.ConfigStatus{
			{Topic: "t", Key: "local.retention.bytes", Value: "10", Original: &orig, Current: &cur, Read: true, InPlace: true, Live: true},
			{Topic: "u", Key: "local.retention.bytes", Value: "20"},
		}},
		{BrokerID: 2, Cordons: []ledger.CordonStatus{{Dir: "/d1", Read: true, InPlace: true, Live: false}, {Dir: "/d2"}},
			OperatorCordons: []string{"/d3"}},
	}}
	var b bytes.Buffer
	writeConfigs(&b, st)
	writeCordons(&b, st)
	want := `
Local retention lowered on tiered topics (restored when the disk calms down, by a peer after the lease, or by ` + "`protection lift`" + `):
BROKER  TOPIC  CONFIG                 SET TO  OPERATOR'S VALUE  NOW       REACHES (CLUSTER-WIDE)    LIFTED
1       t      local.retention.bytes  10      1000              10        every replica (not read)  false
1       u      local.retention.bytes  20      not set           not read  every replica (not read)  true

Cordoned log dirs (no new partition is placed in them; uncordoned when the disk calms down, by a peer after the lease, or by ` + "`protection lift`" + `):
BROKER  LOG DIR  BY                                     IN PLACE  LIFTED
2       /d1      guard                                  true      true
2       /d2      guard                                  not read  true
2       /d3      operator (never removed by the guard)  true      -
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	writeConfigs(&b, ledger.Status{Brokers: []ledger.BrokerStatus{{BrokerID: 1}}})
	writeCordons(&b, ledger.Status{})
	if b.Len() != 0 {
		t.Errorf("tables without rows: %q", b.String())
	}
}
