//go:build integration

package enforcer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R8.5, R7.4 (the simulation's tiered_shared, seed 99): broker 3's claim
// on the topic was made before the operator set 200 MiB (its agent
// unable to read since, so the claim names no override as the original);
// this agent lowered the operator's 200 MiB. An operator's lift of the
// topic is written for this broker first: its claim, its own value in
// place, stays in the record (releasing) while broker 3's live claim
// holds the key; the lift run again, reaching broker 3, restores the
// operator's 200 MiB, not the older "not set" and not the lowered value.
func TestR8_5TopicLiftWrittenForOneBrokerFirstRestoresTheOperatorsValue(t *testing.T) {
	b := sharedTiered(t)
	const topic = "tsplit"
	src := uploadedTieredTopic(t, b, topic)
	cfg := enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: 5 * time.Minute}}
	g := newGuard(t, b, guardSpec{cfg: cfg, src: src(0.87), ownTopic: enforcer.DefaultOwnershipTopic})
	stale := enforcer.ConfigClaim{Topic: topic, Key: enforcer.LocalRetentionBytesKey, Value: "1048576"} // Orig: not set
	kafkatest.Eventually(t, 30*time.Second, func() error {
		return g.admin.StoreRecord(t.Context(), enforcer.Record{BrokerID: 3, Instance: "broker-3", Renewed: time.Now(),
			LeaseMs: (5 * time.Minute).Milliseconds(), Updated: time.Now(), Configs: []enforcer.ConfigClaim{stale}})
	})
	g.start(t)
	waitLowered(t, g, topic)
	lowered := localRetentionOf(t, g.admin, topic)
	if *lowered == stale.Value {
		t.Fatalf("R8.5/the agent set broker 3's number %s, claimed on another original", stale.Value)
	}

	// The operator's lift of the topic, written for this broker only.
	if err := g.admin.StoreLift(t.Context(), enforcer.Lift{ID: ledger.NewLiftID(enforcer.LiftOperator, time.Now()), BrokerID: 1,
		Kind: enforcer.LiftOperator, By: "operator@test", At: time.Now(), Topics: []string{topic}}); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		recs, err := g.admin.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if len(recs.Agents[1].ConfigClaims()) != 0 || len(recs.Agents[1].ReleasingConfigs()) != 1 {
			return fmt.Errorf("broker 1's claims %+v", recs.Agents[1].Configs)
		}
		// The passes before the lift may have lowered it further (more
		// of them on a slow machine): the releasing claim's value is the
		// agent's last.
		v := recs.Agents[1].ReleasingConfigs()[0].Value
		lowered = &v
		return nil
	})
	g.waitReconciles(t, 4)
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != *lowered {
		t.Fatalf("R8.5/local.retention.bytes %s while broker 3's claim holds the key, want the agent's %s (its releasing claim's)", showValue(v), *lowered)
	}

	res, err := ledger.LiftProtection(t.Context(), g.admin, ledger.LiftRequest{Topic: topic, By: "operator@test", Reason: "test", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != operatorLocalRetention {
		t.Fatalf("R7.4/after the lift local.retention.bytes is %s (lift %+v), want the operator's %s", showValue(v), res, operatorLocalRetention)
	}
	if len(res.Remaining) != 0 {
		t.Errorf("R8.5/the lift left %v", res.Remaining)
	}
	// Read back restored, the agent's claim leaves its record.
	kafkatest.Eventually(t, 30*time.Second, func() error {
		recs, err := g.admin.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if cs := recs.Agents[1].Configs; len(cs) != 0 {
			return fmt.Errorf("broker 1's claims %+v", cs)
		}
		return nil
	})
	g.waitReconciles(t, 4)
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != operatorLocalRetention {
		t.Errorf("R8.5/local.retention.bytes %s after the agent's passes, want the operator's %s", showValue(v), operatorLocalRetention)
	}
	t.Logf("R8.5/lowered to %s; broker 1's lift kept its claim releasing; the lift reaching broker 3 restored %s", *lowered, operatorLocalRetention)
}
