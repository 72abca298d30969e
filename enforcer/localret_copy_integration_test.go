//go:build integration

package enforcer_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R7.4, R8.5, R8.7 on the tiered broker
// (TestR7_4R8_5ClaimTakenOverFromAnOlderCopyRestoresTheLaterWritesOriginal;
// the simulation's seed 47558): the agent lowers a topic's
// local.retention.bytes from the operator's 200 MiB, and a peer (broker
// 2's agent) reads that write. The agent dies; its record in the
// ownership topic is then an older copy of its process's record, as a
// peer that read it earlier writes it back after a loss of the topic: the
// same claim, made on "not set". The agent's next process, calm, takes
// the copy over and keeps the claim (the override stays) for a lease;
// the peer writes its later write in, and the agent restores the
// operator's 200 MiB, read back with DescribeConfigs. Restored at once,
// the copy's original deleted the operator's override.
func TestR7_4R8_5ClaimTakenOverFromAnOlderCopyRestoresTheLaterWritesOriginalOnTheTieredBroker(t *testing.T) {
	b := sharedTiered(t)
	begin := time.Now()
	const (
		topic = "tcopy"
		own   = "__kdg_test_copy"
		lease = 3 * time.Second
	)
	src := uploadedTieredTopic(t, b, topic)
	cfg := enforcer.Config{Enabled: true, Interval: 300 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	peerCfg := cfg
	peerCfg.BrokerID = new(int32(2))
	first := newGuard(t, b, guardSpec{cfg: cfg, src: src(0.87), ownTopic: own})
	peer := newGuard(t, b, guardSpec{cfg: peerCfg, src: src(0.10), ownTopic: own})
	step := func(g *guard) {
		scanSrc(g)
		pass(t, g)
	}
	id := b.NodeID
	record := func() enforcer.Record {
		t.Helper()
		recs, err := first.admin.LoadRecords(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return recs.Agents[id]
	}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		step(first)
		if v := localRetentionOf(t, first.admin, topic); v == nil || *v == operatorLocalRetention {
			time.Sleep(cfg.Interval)
			return fmt.Errorf("local.retention.bytes %s", showValue(v))
		}
		return nil
	})
	lowered := *localRetentionOf(t, first.admin, topic)
	kafkatest.Eventually(t, 4*lease, func() error { // a renewal: a second write
		if r := record(); r.Seq < 2 {
			time.Sleep(cfg.Interval)
			step(first)
			return fmt.Errorf("the agent's record at its write %d", r.Seq)
		}
		return nil
	})
	later := record()
	if cs := later.ConfigClaims(); len(cs) != 1 || showValue(cs[0].Orig) != operatorLocalRetention || later.Seq < 2 {
		t.Fatalf("the test needs the agent's claim made on the operator's %s in its second write or later: %+v (seq %d)",
			operatorLocalRetention, later.Configs, later.Seq)
	}
	// The passes until the second write may have lowered it further (a
	// slow machine runs more of them): the claim's value is the one kept.
	lowered = later.ConfigClaims()[0].Value
	if v := localRetentionOf(t, first.admin, topic); v == nil || *v != lowered {
		t.Fatalf("the test needs the claim's value %s in place: %s", lowered, showValue(v))
	}
	time.Sleep(cfg.Interval)
	step(peer) // reads the later write

	// The agent dies. Its record becomes an older copy of its process's
	// record, made on "not set", as a peer writes it back.
	older := later
	older.Configs = slices.Clone(later.Configs)
	older.Configs[0].Orig, older.Seq, older.Restored = nil, later.Seq-1, true
	if err := first.admin.StoreRecord(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	next := newGuard(t, b, guardSpec{cfg: cfg, src: src(0.10), ownTopic: own})
	step(next)
	if r := record(); !r.Inherited(later.Started) || r.Started.Equal(later.Started) {
		t.Fatalf("the test needs the next process taking the copy over: %+v", r)
	}
	if v := localRetentionOf(t, next.admin, topic); v == nil || *v != lowered {
		t.Fatalf("R8.5/the claim taken over from a peer's copy restored at once: local.retention.bytes %s, want %s kept", showValue(v), lowered)
	}
	took := time.Now()
	time.Sleep(cfg.Interval)
	step(peer) // writes the later write in
	if cs := record().ConfigClaims(); len(cs) != 1 || showValue(cs[0].Orig) != operatorLocalRetention {
		t.Fatalf("the test needs the peer writing the later write's original in: %+v", record().Configs)
	}
	kafkatest.Eventually(t, 2*lease+20*time.Second, func() error {
		step(next)
		step(peer)
		if v := localRetentionOf(t, next.admin, topic); v == nil || *v != operatorLocalRetention {
			time.Sleep(cfg.Interval)
			return fmt.Errorf("R7.4/local.retention.bytes %s, want the operator's %s restored (the next process's claims %+v)",
				showValue(v), operatorLocalRetention, record().Configs)
		}
		return nil
	})
	restored := time.Since(took)
	if restored < lease {
		t.Errorf("R8.5/restored %s after taking the copy over, before its %s hold ran out", restored, lease)
	}
	t.Logf("lowered to %s; the copy's claim kept %s after the takeover, then the operator's %s restored; %s with the broker up",
		lowered, restored.Round(10*time.Millisecond), operatorLocalRetention, time.Since(begin).Round(100*time.Millisecond))
}
