package enforcer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

func TestRecordRoundTrip(t *testing.T) {
	orig := "-2"
	r := Record{BrokerID: 3, Strategy: StrategyACL, Since: t0, Renewed: t0.Add(time.Second), LeaseMs: 60000,
		Why: []Why{{LogDir: dir, Band: "protect", Usage: 0.91}}, LogDirs: []string{dir}, Ack: "op-1",
		Suppressed: &Suppression{LiftID: "op-1", Topics: []string{"t9"}}, Updated: t0.Add(time.Second),
		Owned: []Owned{owns(shapeDenyAll, "t1", "t2"), owns(Shape{AllowOps: ledger.OpsButWrite, AllowWrite: []string{"User:connect"}}, "t3"),
			ledger.QuotaOwned(1024)},
		Configs: []ConfigClaim{{Topic: "tiered", Key: "local.retention.ms", Value: "60000", Orig: &orig}}}
	data, err := ledger.EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ledger.DecodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	r.Version = ledger.RecordVersion
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("R8.4/round trip\n got %+v\nwant %+v", got, r)
	}
	if got.Quota() != 1024 || !slices.Equal(got.ACLTopics(), []string{"t1", "t2", "t3"}) {
		t.Errorf("quota %d topics %v", got.Quota(), got.ACLTopics())
	}
}

// A record of the first format (full ACL triples) is read and lifted like
// a current one.
func TestRecordVersion1IsRead(t *testing.T) {
	v1 := `{"broker_id":1,"strategy":"acl","log_dirs":["/d"],"acls":[` +
		`{"topic":"t1","pattern":"literal","principal":"User:*","host":"*","operation":"WRITE","permission":"DENY"},` +
		`{"topic":"t1","pattern":"literal","principal":"User:*","host":"*","operation":"READ","permission":"ALLOW"},` +
		`{"topic":"t1","pattern":"literal","principal":"User:*","host":"*","operation":"DESCRIBE","permission":"ALLOW"},` +
		`{"topic":"t2","pattern":"literal","principal":"User:*","host":"*","operation":"WRITE","permission":"DENY"}],` +
		`"producer_byte_rate":2048,"updated":"2026-11-29T12:00:00Z"}`
	r, err := ledger.DecodeRecord([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	var got []ACL
	r.Bindings(nil, func(a ACL) { got = append(got, a) })
	want := []ACL{denyAll("t1"), ledger.LiteralACL("t1", AnyPrincipal, OpDescribe, PermAllow), ledger.LiteralACL("t1", AnyPrincipal, OpRead, PermAllow), denyAll("t2")}
	ledger.SortACLs(got)
	ledger.SortACLs(want)
	if !reflect.DeepEqual(got, want) || r.Quota() != 2048 || !slices.Equal(r.LogDirs, []string{"/d"}) {
		t.Fatalf("R8.4/version 1: bindings %v quota %d dirs %v", got, r.Quota(), r.LogDirs)
	}
	if _, err := ledger.DecodeRecord([]byte(`{"v":99}`)); err == nil {
		t.Error("a newer version is read")
	}
}

// tenThousandTopics are realistic names: 10,000 topics of 30-40
// characters.
func tenThousandTopics() []string {
	out := make([]string, 10000)
	for i := range out {
		out[i] = fmt.Sprintf("team-%02d.orders-service.events-v%d-%05d", i%40, i%3+1, i)
	}
	return out
}

// R8.4: the record of an agent protecting 10,000 topics stays small (under
// half the producer's 1 MiB limit even with names that compress badly):
// topic names and their shape, gzipped.
func TestR8_4RecordSizeAt10000Topics(t *testing.T) {
	topics := tenThousandTopics()
	// Names that compress badly: 36 random letters and digits each.
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]string, len(topics))
	for i := range random {
		b := make([]byte, 36)
		for j := range b {
			b[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[rnd.IntN(36)]
		}
		random[i] = string(b)
	}
	slices.Sort(random)
	for _, c := range []struct {
		name  string
		owned []Owned
	}{
		{"one shape (DENY WRITE User:*)", []Owned{owns(shapeDenyAll, topics...)}},
		{"two shapes (absence + DENY)", []Owned{owns(shapeAbsence, topics[:5000]...), owns(shapeDenyAll, topics[5000:]...)}},
		{"random 36-character names", []Owned{owns(shapeDenyAll, random...)}},
	} {
		r := agentRecord(1, c.owned...)
		raw := 0
		for _, tp := range r.ACLTopics() {
			raw += len(tp)
		}
		data, err := ledger.EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: a large record is not gzipped", c.name)
		}
		if len(data) > 512<<10 { // half the producer's 1 MiB
			t.Errorf("R8.4/%s: %d bytes at 10,000 topics", c.name, len(data))
		}
		got, err := ledger.DecodeRecord(data)
		if err != nil || len(got.ACLTopics()) != 10000 {
			t.Fatalf("decode: %v, %d topics", err, len(got.ACLTopics()))
		}
		t.Logf("R8.4/%s: 10,000 topics (%d bytes of names) -> record of %d bytes", c.name, raw, len(data))
	}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		key      string
		id       int32
		lift, ok bool
	}{
		{"broker-3", 3, false, true}, {"lift-broker-12", 12, true, true}, {"broker-x", 0, false, false},
		{"other", 0, false, false}, {"broker--1", 0, false, false},
	} {
		id, lift, ok := ledger.ParseKey(c.key)
		if id != c.id || lift != c.lift || ok != c.ok {
			t.Errorf("ledger.ParseKey(%q) = %d %v %v", c.key, id, lift, ok)
		}
	}
	if k := ledger.RecordKey(7); k != "broker-7" {
		t.Error(k)
	}
	if k := ledger.LiftKey(7); k != "lift-broker-7" {
		t.Error(k)
	}
}

func TestLiftScope(t *testing.T) {
	all := Lift{ID: "a"}
	some := Lift{ID: "b", Topics: []string{"t1", "t3"}}
	if !all.Covers("x") || !all.Covers("") || !some.Covers("t3") || some.Covers("t2") || some.Covers("") {
		t.Error("R8.1/covers")
	}
	if m := (Lift{ID: "c", Topics: []string{"t2"}}).Merge(some); !slices.Equal(m.Topics, []string{"t1", "t2", "t3"}) || m.ID != "c" {
		t.Errorf("R8.1/merge %+v", m)
	}
	if m := some.Merge(all); !m.All() {
		t.Errorf("R8.1/merge with a lift of everything %+v", m)
	}
}

// R8.8: a lift names the instance whose record it lifted; merged with an
// earlier lift of the other instance's record it names none (both
// records' claims were voided: keepOverwritten keeps neither instance's).
func TestLiftMergeOfTwoInstancesRecordsNamesNoInstance(t *testing.T) {
	a, b := Lift{ID: "a", Instance: "pod-a"}, Lift{ID: "b", Instance: "pod-b"}
	if m := b.Merge(Lift{ID: "x", Instance: "pod-b"}); m.Instance != "pod-b" {
		t.Errorf("R8.8/merge of two lifts of pod-b's record names %q", m.Instance)
	}
	if m := b.Merge(a); m.Instance != "" {
		t.Errorf("R8.8/merge of lifts of pod-a's and pod-b's records names %q, want none", m.Instance)
	}
}

func TestBuildStatus(t *testing.T) {
	rs := recs(agentRecord(1, owns(shapeDenyAll, "a", "b")), agentRecord(2, owns(shapeDenyAll, "c")),
		agentRecord(3, owns(shapeDenyAll, "d")), Record{BrokerID: 4})
	rs.Lifts[3] = Lift{ID: "op", BrokerID: 3, Kind: LiftOperator}
	acls := []ACL{denyAll("a"), denyAll("c"), denyAll("d"), denyAll("stray"),
		ledger.LiteralACL("t", "User:alice", OpRead, PermAllow), ledger.LiteralACL("t", AnyPrincipal, OpRead, PermAllow)}
	st := ledger.BuildStatus(ledger.StatusInput{Records: rs, ACLs: acls, Live: map[int32]bool{1: true, 3: true, 4: true}, DefaultProducerByteRate: 5000,
		Now: t0.Add(30 * time.Second)})
	states := map[int32]string{}
	for _, b := range st.Brokers {
		states[b.BrokerID] = b.State
	}
	if want := map[int32]string{1: ledger.StateActive, 2: ledger.StateGone, 3: ledger.StateLifted, 4: ledger.StateIdle}; !reflect.DeepEqual(states, want) {
		t.Errorf("R8.1/states %v, want %v", states, want)
	}
	if b := st.Brokers[0]; b.Claimed != 2 || b.Present != 1 || b.LeaseAge != 30*time.Second || b.ExpiresIn != 30*time.Second {
		t.Errorf("broker 1 %+v", b)
	}
	if want := []ACL{denyAll("stray"), ledger.LiteralACL("t", AnyPrincipal, OpRead, PermAllow)}; !reflect.DeepEqual(st.Unattributed, want) {
		t.Errorf("R8.4/unattributed %v, want %v", st.Unattributed, want)
	}
	if st.UnattributedQuota != 5000 {
		t.Errorf("unattributed quota %d", st.UnattributedQuota)
	}
	st = ledger.BuildStatus(ledger.StatusInput{Records: rs, ACLs: acls, Now: t0.Add(2 * time.Minute)})
	if st.Brokers[0].State != ledger.StateExpired {
		t.Errorf("R8.1/an old lease reads %s", st.Brokers[0].State)
	}
}
