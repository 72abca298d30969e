//go:build integration

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// rescan is a snapshot source that scans the log dirs at every Snapshot.
type rescan struct {
	scanner *agent.Scanner
	paths   []string
}

func (s rescan) Snapshot() *agent.Snapshot {
	dirs, h := s.scanner.ScanLogDirs(s.paths, 0)
	snap := agent.BuildSnapshot(time.Now(), dirs, agent.ConfigSet{Defaults: agent.DefaultTopicConfig(), Time: time.Now()}, h)
	return &snap
}
func (s rescan) Updated() <-chan struct{} { return nil }

// R3.8, enforcer.relief.reassign on the real 3-node cluster: node 1's one
// log dir (a small tmpfs, no second dir: no move within the broker can
// relieve it) is filled into the move band. In observe mode the agent's
// reassigner only says what it would move. Enforcing, it records its
// replication throttle claim, sets the throttle, reassigns followers off
// node 1 to a broker with room (leaders kept), and once Kafka is done
// removes the throttle and the claim; node 1's usage falls under the
// band, every record reads back, and no throttle is left on any broker or
// the topic.
func TestR3_8AgentReassignsReplicasOffItsFullBroker(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "relief-agent"
	c.CreateTopicAssigned(t, topic, [][]int32{{2, 1}, {3, 1}, {2, 1}}, map[string]string{"segment.bytes": "4194304"})
	dropTopic(t, c, topic)
	// Retried for longer than Sarama's default 3 x 100 ms: just after the
	// topic's creation, a loaded machine's broker may not lead its
	// partition yet (a CI run failed its first batch with the default).
	pcfg := adminConfig(c)
	pcfg.Producer.Retry.Max, pcfg.Producer.Retry.Backoff = 10, 500*time.Millisecond
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	const size = 16 << 10
	written := map[int32]int{}
	for {
		if r, _, _ := statfsRatio(n1.LogDir); r >= 0.90 {
			break
		}
		var msgs []*sarama.ProducerMessage
		for part := int32(0); part < 3; part++ {
			for range 8 {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.ByteEncoder(reliefValue(part, written[part], size))})
				written[part]++
			}
		}
		if err := p.SendMessages(msgs); err != nil {
			var errs sarama.ProducerErrors
			if errors.As(err, &errs) && len(errs) > 0 {
				t.Fatalf("%v: the first: %v", err, errs[0].Err)
			}
			t.Fatal(err)
		}
	}
	p.Close()

	link := kafkaadmin.NewLink(kafkaadmin.Config{BootstrapServers: c.SASLAddrs(),
		SASL: kafkaadmin.SASLConfig{Mechanism: "PLAIN", Username: kafkatest.GuardUser, Password: kafkatest.GuardPassword}},
		slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
	if err := link.Connect(); err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	ratio := func() map[int32]float64 {
		cl, err := link.Relief().ReadCluster(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]float64{}
		for _, b := range cl.Brokers {
			out[b.ID] = b.Ratio()
		}
		return out
	}
	before := ratio()
	local, _, _ := statfsRatio(n1.LogDir)
	t.Logf("usage before: node 1 %.3f (statfs %.3f), node 2 %.3f, node 3 %.3f", before[1], local, before[2], before[3])
	band := 100*min(before[1], local) - 3
	target := 100*max(before[2], before[3]) + 2
	if target >= band-5 {
		t.Fatalf("nodes 2 and 3 (%.1f%%) leave no room under node 1's %.1f%% for a band", target-2, band+3)
	}
	a := c.Admin(t)
	t.Cleanup(func() {
		// Whatever happens, the shared cluster gets no throttle left behind.
		del := map[string]sarama.IncrementalAlterConfigsEntry{
			kafkaadmin.LeaderThrottleRate: {Operation: sarama.IncrementalAlterConfigsOperationDelete}, kafkaadmin.FollowerThrottleRate: {Operation: sarama.IncrementalAlterConfigsOperationDelete}}
		for _, n := range c.Nodes {
			a.IncrementalAlterConfig(sarama.BrokerResource, strconv.Itoa(int(n.NodeID)), del, false)
		}
	})

	const ledgerTopic = "__kdg_reassign_ledger"
	store := link.Enforce(ledgerTopic)
	if err := store.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	broker := int32(1)
	const rate = 4 << 20
	purgeAt := 99.0
	cfg := enforcer.Config{BrokerID: &broker, Interval: time.Second, OwnershipTopic: ledgerTopic,
		Profile: enforcer.ProfileCustom, Bands: []enforcer.BandConfig{{From: 0, Action: "none"}, {From: purgeAt, Action: "purge"}},
		Relief: enforcer.ReliefConfig{Move: enforcer.MoveConfig{FromPercent: band, TargetPercent: target}, Reassign: true, ReassignBytesPerSecond: rate}}
	newReassigner := func(enabled bool, logs io.Writer) *enforcer.Reassigner {
		cfg := cfg
		cfg.Enabled = enabled
		r, err := enforcer.NewReassigner(cfg, slog.New(slog.NewJSONHandler(logs, nil)), prometheus.NewRegistry(),
			enforcer.ReassignerDeps{Snapshots: rescan{scanner, []string{n1.LogDir}}, Admin: link.Relief(), Store: store,
				Evidence: link.Evidence(), Clock: enforcer.SystemClock(), Instance: "test-agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	throttles := func() map[string]string {
		var res []*sarama.ConfigResource
		for _, n := range c.Nodes {
			res = append(res, &sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(n.NodeID)),
				ConfigNames: []string{kafkaadmin.LeaderThrottleRate, kafkaadmin.FollowerThrottleRate}})
		}
		res = append(res, &sarama.ConfigResource{Type: sarama.TopicResource, Name: topic,
			ConfigNames: []string{kafkaadmin.LeaderThrottledReplicas, kafkaadmin.FollowerThrottledReplica}})
		rs, err := a.DescribeConfigs(res, sarama.DescribeConfigsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range rs {
			for _, e := range r.Configs {
				if e.Value != "" && (e.Source == sarama.SourceDynamicBroker || e.Source == sarama.SourceTopic) {
					out[r.Name+" "+e.Name] = e.Value
				}
			}
		}
		return out
	}

	// Observe mode: what it would move, nothing claimed or set.
	var observeLogs bytes.Buffer
	if err := newReassigner(false, &observeLogs).Pass(t.Context()); err != nil {
		t.Fatalf("observe pass: %v\n%s", err, observeLogs.String())
	}
	if !strings.Contains(observeLogs.String(), `"msg":"would reassign replica"`) {
		t.Fatalf("observe mode did not say what it would move:\n%s", observeLogs.String())
	}
	if recs, err := store.LoadRecords(t.Context()); err != nil || len(recs.Reassigns) != 0 {
		t.Fatalf("observe mode claimed: %v %v", recs.Reassigns, err)
	}
	if got := throttles(); len(got) != 0 {
		t.Fatalf("observe mode set a throttle: %v", got)
	}
	t.Logf("observe mode:\n%s", observeLogs.String())

	// Enforcing.
	var logs bytes.Buffer
	r := newReassigner(true, &logs)
	start := time.Now()
	if err := r.Pass(t.Context()); err != nil {
		t.Fatalf("first pass: %v\n%s", err, logs.String())
	}
	recs, err := store.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	claim, ok := recs.Reassigns["broker-1"]
	if !ok || len(claim.Entries) == 0 || len(claim.Partitions) == 0 {
		t.Fatalf("no claim after the first pass: %+v\n%s", recs.Reassigns, logs.String())
	}
	t.Logf("claim: partitions %v, moves %v, %d values", claim.Partitions, claim.Moves, len(claim.Entries))
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if got := throttles(); got["1 "+kafkaadmin.LeaderThrottleRate] != strconv.Itoa(rate) {
			return fmt.Errorf("throttle now %v", got)
		}
		return nil
	})
	kafkatest.Eventually(t, 3*time.Minute, func() error {
		if err := r.Pass(t.Context()); err != nil {
			return err
		}
		recs, err := store.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		if c, ok := recs.Reassigns["broker-1"]; ok {
			return fmt.Errorf("claim still held (releasing %v)", c.Releasing)
		}
		return nil
	})
	t.Logf("reassigned and throttle removed in %s", time.Since(start).Round(100*time.Millisecond))
	for _, msg := range []string{`"msg":"reassignment started"`, `"msg":"reassignment finished, replication throttle removed"`} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("no %s line:\n%s", msg, logs.String())
		}
	}
	waitFor(t, "no throttle left on the brokers and the topic", func() error {
		if got := throttles(); len(got) != 0 {
			return fmt.Errorf("throttle left: %v", got)
		}
		return nil
	})

	// Node 1 gave up replicas it followed; the leaders stayed.
	md, err := a.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 {
		t.Fatal(err)
	}
	off1 := 0
	for _, pm := range md[0].Partitions {
		if !slices.Contains(pm.Replicas, 1) {
			off1++
		}
		if pm.Leader != pm.Replicas[0] || pm.Replicas[0] == 1 || len(pm.Replicas) != 2 {
			t.Errorf("partition %d: leader %d, replicas %v", pm.ID, pm.Leader, pm.Replicas)
		}
	}
	if off1 == 0 {
		t.Fatalf("every partition still has a replica on node 1")
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if u := ratio()[1]; 100*u >= band {
			return fmt.Errorf("node 1 at %.1f%%, band %.1f%%", 100*u, band)
		}
		return nil
	})
	after := ratio()
	t.Logf("usage after: node 1 %.3f, node 2 %.3f, node 3 %.3f (band %.1f%%, target %.1f%%)", after[1], after[2], after[3], band, target)

	cons, err := sarama.NewConsumer(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for part := int32(0); part < 3; part++ {
		pc, err := cons.ConsumePartition(topic, part, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		timer := time.NewTimer(60 * time.Second)
		for i := 0; i < written[part]; i++ {
			select {
			case m := <-pc.Messages():
				if !bytes.Equal(m.Value, reliefValue(part, i, size)) {
					t.Fatalf("partition %d record %d (offset %d): %.20q", part, i, m.Offset, m.Value)
				}
			case err := <-pc.Errors():
				t.Fatal(err)
			case <-timer.C:
				t.Fatalf("partition %d: %d of %d records read back", part, i, written[part])
			}
		}
		timer.Stop()
		pc.Close()
	}
	t.Logf("records read back: %v", written)
}
