//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.1, R8.4: `protection status` lists what every record claims, whether
// it is in place, and the bindings no record claims; `protection lift`
// lifts one agent's protection as an operator (recorded, logged), keeps
// what another agent still claims and never touches an unattributed
// binding; `protection resume` withdraws the lift.
func TestProtectionCommandOnRealBroker(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	for _, topic := range []string{"orders", "payments", "stray"} {
		b.CreateTopic(t, topic, 1, nil)
	}
	const own = "__kdg_test_cli"
	admin, err := kafkaadmin.NewEnforce([]string{b.SASLAddr}, b.GuardConfig(), own)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	deny := ledger.Shape{Deny: []string{ledger.AnyPrincipal}}
	now := time.Now()
	record := func(id int32, topics ...string) ledger.Record {
		return ledger.Record{BrokerID: id, Strategy: enforcer.StrategyACL, Since: now, Renewed: now, LeaseMs: 60000,
			LogDirs: []string{"/data"}, Why: []ledger.Why{{LogDir: "/data", Band: "protect", Usage: 0.93}},
			Owned: []ledger.Owned{{Kind: ledger.OwnedACL, Shape: &deny, Topics: topics}}}
	}
	// Broker 2 is not in this one-broker cluster: its record still counts
	// until a peer lifts it.
	for _, r := range []ledger.Record{record(1, "orders", "payments"), record(2, "payments")} {
		if err := admin.StoreRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var acls []ledger.ACL
	for _, topic := range []string{"orders", "payments", "stray"} {
		acls = append(acls, deny.Bindings(topic)...)
	}
	if err := admin.CreateACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}

	env := mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword, "USER": "alice"})
	conn := []string{"--bootstrap-server", b.SASLAddr, "--sasl-mechanism", "PLAIN", "--sasl-username", kafkatest.GuardUser, "--ownership-topic", own}
	cli := func(args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(ctx, append(args, conn...), env, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}

	out, _ := cli("protection", "status", "--topics")
	for _, want := range []string{`(?m)^1\s+active\s+acl\s.*\s2\s+2/2\s+/data: protect band at 93\.0%$`, `(?m)^2\s+broker_gone\s+acl\s.*\s1\s+1/1\s`,
		`topic stray: DENY WRITE User:\* from \*`, `(?m)^orders\s+DENY WRITE User:\*\s+1/1\s+false$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("R8.1/status lacks %s:\n%s", want, out)
		}
	}

	out, logs := cli("protection", "lift", "--broker", "1", "--reason", "disk grown")
	if !strings.Contains(out, "1 binding(s) deleted, 1 kept") {
		t.Errorf("R8.1/lift said:\n%s", out)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs)), &line); err != nil || line["msg"] != "protection lifted by an operator" ||
		!strings.HasPrefix(line["by"].(string), "operator alice@") || line["reason"] != "disk grown" {
		t.Errorf("R8.1/log line %q (%v)", logs, err)
	}
	left, err := admin.TopicACLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept := func(topic string) bool {
		return slices.ContainsFunc(left, func(a ledger.ACL) bool { return a.Topic == topic })
	}
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if left, err = admin.TopicACLs(ctx); err != nil {
			return err
		}
		if kept("orders") || !kept("payments") || !kept("stray") {
			return fmt.Errorf("R8.1/after the lift: %v", left)
		}
		return nil
	})

	var st ledger.Status
	js, _ := cli("protection", "status", "--format", "json")
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Brokers) != 2 || st.Brokers[0].State != ledger.StateLifted || st.Brokers[0].Lift == nil ||
		st.Brokers[0].Lift.Reason != "disk grown" || st.Brokers[1].State != ledger.StateGone || len(st.Unattributed) != 1 {
		t.Errorf("R8.1/status after the lift: %s", js)
	}

	out, _ = cli("protection", "resume", "--broker", "1")
	if !strings.Contains(out, "Withdrew the operator's lift of broker(s) [1]") {
		t.Errorf("resume said:\n%s", out)
	}
	recs, err := admin.LoadRecords(ctx)
	if err != nil || len(recs.Lifts) != 0 {
		t.Errorf("R8.1/lift still recorded after resume: %+v %v", recs.Lifts, err)
	}
}
