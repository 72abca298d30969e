//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

// reliefValue is record i of a partition: its partition and index, padded.
func reliefValue(p int32, i, size int) []byte {
	v := []byte(fmt.Sprintf("p%d-r%07d-", p, i))
	return append(v, bytes.Repeat([]byte{'x'}, size-len(v))...)
}

// R3.8: `relief plan --execute` on the real 3-node cluster moves replicas
// off node 1, whose small log dir is filled far more than the others:
// DescribeLogDirs reports it in the band, the plan moves followers it
// holds to node 3 under a replication throttle, node 1's usage falls under
// the band, every record reads back from the new replicas, and the
// throttle is gone from every broker and the topic.
func TestReliefPlanExecuteMovesReplicasOffTheFullBrokerR38(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "relief"
	c.CreateTopicAssigned(t, topic, [][]int32{{2, 1}, {3, 1}, {2, 1}}, map[string]string{"segment.bytes": "4194304"})
	dropTopic(t, c, topic)

	// Fill node 1's 96 MiB tmpfs to 90% through the three partitions (nodes
	// 2 and 3 are on the machine's disk, which Kafka may count far fuller
	// than df: total minus usable bytes).
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), adminConfig(c))
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
			t.Fatal(err)
		}
	}
	p.Close()

	// What the cluster reports (the command reads the same).
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
	others := max(before[2], before[3])
	t.Logf("usage from DescribeLogDirs before: node 1 %.3f, node 2 %.3f, node 3 %.3f", before[1], before[2], before[3])
	band, target := 100*before[1]-3, 100*others+2
	if target >= band-5 {
		t.Fatalf("the machine's disk (nodes 2 and 3: %.1f%% as Kafka counts total minus usable) leaves no room under node 1's %.1f%% for a band", 100*others, 100*before[1])
	}

	env := mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword})
	args := []string{"relief", "plan", "--bootstrap-server", strings.Join(c.SASLAddrs(), ","), "--sasl-mechanism", "PLAIN",
		"--sasl-username", kafkatest.GuardUser, "--band", strconv.FormatFloat(band, 'f', 2, 64),
		"--target", strconv.FormatFloat(target, 'f', 2, 64), "--execute", "--throttle", "4MiB", "--timeout", "3m"}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// While it runs, the throttle is on node 1 (the source) and the topic,
	// as the brokers report it.
	a := c.Admin(t)
	throttleSeen := make(chan map[string]string, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	go func() {
		seen := map[string]string{}
		defer func() { throttleSeen <- seen }()
		for watchCtx.Err() == nil {
			rs, err := a.DescribeConfigs([]*sarama.ConfigResource{
				{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{kafkaadmin.LeaderThrottleRate}},
				{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{kafkaadmin.FollowerThrottledReplica}},
			}, sarama.DescribeConfigsOptions{})
			if err == nil {
				for _, r := range rs {
					for _, e := range r.Configs {
						if e.Value != "" {
							seen[e.Name] = e.Value
						}
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err = run(ctx, args, env, &stdout, &stderr)
	stopWatch()
	seen := <-throttleSeen
	if err != nil {
		t.Fatalf("relief plan --execute: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if seen[kafkaadmin.LeaderThrottleRate] != strconv.Itoa(4<<20) || !strings.HasSuffix(seen[kafkaadmin.FollowerThrottledReplica], ":3") {
		t.Errorf("throttle seen during the move: %v; want node 1's rate %d and the topic's follower replicas on node 3", seen, 4<<20)
	}
	t.Logf("relief plan --execute took %s:\n%s", time.Since(start).Round(100*time.Millisecond), stdout.String())
	if !strings.Contains(stdout.String(), "done: every replica moved, replication throttle removed") {
		t.Fatalf("no completion line:\n%s", stdout.String())
	}

	// Node 1 no longer holds at least one of the partitions; the leaders
	// stayed; every partition has two replicas in sync.
	md, err := a.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 {
		t.Fatal(err)
	}
	off1 := 0
	for _, pm := range md[0].Partitions {
		if !slices.Contains(pm.Replicas, 1) {
			off1++
		}
		if pm.Leader != pm.Replicas[0] || (pm.Replicas[0] != 2 && pm.Replicas[0] != 3) || len(pm.Replicas) != 2 {
			t.Errorf("partition %d: leader %d, replicas %v", pm.ID, pm.Leader, pm.Replicas)
		}
	}
	if off1 == 0 {
		t.Fatalf("every partition still has a replica on node 1: %+v", md[0].Partitions)
	}

	// Node 1's usage falls under the band once Kafka has deleted the old
	// replicas (file.delete.delay.ms 1 s here).
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if r := ratio()[1]; 100*r >= band {
			return fmt.Errorf("node 1 at %.1f%%, band %.1f%%", 100*r, band)
		}
		return nil
	})
	after := ratio()
	t.Logf("usage after: node 1 %.3f, node 2 %.3f, node 3 %.3f (band %.1f%%, target %.1f%%)", after[1], after[2], after[3], band, target)

	// The throttle is gone from every broker and the topic.
	var res []*sarama.ConfigResource
	for _, n := range c.Nodes {
		res = append(res, &sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(n.NodeID)),
			ConfigNames: []string{kafkaadmin.LeaderThrottleRate, kafkaadmin.FollowerThrottleRate}})
	}
	res = append(res, &sarama.ConfigResource{Type: sarama.TopicResource, Name: topic,
		ConfigNames: []string{kafkaadmin.LeaderThrottledReplicas, kafkaadmin.FollowerThrottledReplica}})
	results, err := a.DescribeConfigs(res, sarama.DescribeConfigsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		for _, e := range r.Configs {
			if e.Value != "" && (e.Source == sarama.SourceDynamicBroker || e.Source == sarama.SourceTopic) {
				t.Errorf("throttle left on %s: %s=%s", r.Name, e.Name, e.Value)
			}
		}
	}

	// The throttle was a ledger claim, removed with it.
	if recs, err := link.Enforce(enforcer.DefaultOwnershipTopic).LoadRecords(t.Context()); err != nil || len(recs.Reassigns) != 0 {
		t.Errorf("replication throttle claims left: %v (%v)", recs.Reassigns, err)
	}

	// Every record reads back, in order, from each partition's leader.
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

	// Nothing left to do: a second plan at the same band moves nothing.
	cl, err := link.Relief().ReadCluster(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if again := relief.Compute(cl, relief.Config{Band: band / 100, Target: target / 100}); len(again.Moves) != 0 {
		t.Errorf("a second plan still moves %d replicas", len(again.Moves))
	}
}

// R3.8: interrupted (here by --timeout), `relief plan --execute` leaves the
// reassignment running in Kafka with its throttle in place, exits 1, and
// prints the kafka-configs.sh commands that remove the throttle; what they
// delete is exactly what it set.
func TestReliefPlanExecuteInterruptedLeavesThrottleR38(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "relief-interrupted"
	c.CreateTopicAssigned(t, topic, [][]int32{{2, 1}, {3, 1}}, map[string]string{"segment.bytes": "4194304"})
	dropTopic(t, c, topic)
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	const size = 16 << 10
	for i := 0; ; i++ {
		if r, _, _ := statfsRatio(n1.LogDir); r >= 0.90 {
			break
		}
		var msgs []*sarama.ProducerMessage
		for part := int32(0); part < 2; part++ {
			for range 8 {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.ByteEncoder(reliefValue(part, i, size))})
			}
		}
		if err := p.SendMessages(msgs); err != nil {
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
	cl, err := link.Relief().ReadCluster(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ratios := map[int32]float64{}
	for _, b := range cl.Brokers {
		ratios[b.ID] = b.Ratio()
	}
	// The target halfway between the others and the band: the plan moves
	// enough to take longer than --timeout at the throttle, and the
	// receivers (on roomy tmpfs) stay under it.
	others := 100 * max(ratios[2], ratios[3])
	band := 100*ratios[1] - 3
	target := max(others+2, (band+others)/2)
	if target >= band-5 {
		t.Fatalf("the machine's disk (%.1f%%) leaves no room under node 1's %.1f%% for a band", 100*max(ratios[2], ratios[3]), 100*ratios[1])
	}

	a := c.Admin(t)
	// Whatever happens, the shared cluster gets no throttle left behind.
	t.Cleanup(func() {
		del := map[string]sarama.IncrementalAlterConfigsEntry{
			kafkaadmin.LeaderThrottleRate: {Operation: sarama.IncrementalAlterConfigsOperationDelete}, kafkaadmin.FollowerThrottleRate: {Operation: sarama.IncrementalAlterConfigsOperationDelete}}
		for _, n := range c.Nodes {
			a.IncrementalAlterConfig(sarama.BrokerResource, strconv.Itoa(int(n.NodeID)), del, false)
		}
	})

	env := mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword})
	bootstrap := strings.Join(c.SASLAddrs(), ",")
	args := []string{"relief", "plan", "--bootstrap-server", bootstrap, "--sasl-mechanism", "PLAIN",
		"--sasl-username", kafkatest.GuardUser, "--band", strconv.FormatFloat(band, 'f', 2, 64),
		"--target", strconv.FormatFloat(target, 'f', 2, 64), "--execute", "--throttle", "64KiB", "--timeout", "15s"}
	var stdout, stderr bytes.Buffer
	err = run(t.Context(), args, env, &stdout, &stderr)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "goes on in Kafka") {
		t.Fatalf("exit %d, err %v, want 1 and the reassignment going on\n%s\n%s", exitCode(err), err, stdout.String(), stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	want := "kafka-configs.sh --bootstrap-server " + bootstrap + " --alter --entity-type brokers --entity-name 1 --delete-config " +
		kafkaadmin.LeaderThrottleRate + "," + kafkaadmin.FollowerThrottleRate
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "--entity-type topics --entity-name "+topic+" --delete-config") {
		t.Fatalf("stderr does not say how to remove the throttle:\n%s", stderr.String())
	}

	// The reassignment runs on, throttled.
	read := func() map[string]string {
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
	if got := read(); got["1 "+kafkaadmin.LeaderThrottleRate] != strconv.Itoa(64<<10) || got[topic+" "+kafkaadmin.FollowerThrottledReplica] == "" {
		t.Fatalf("throttle after the interruption: %v", got)
	}
	st, err := a.ListPartitionReassignments(topic, []int32{0, 1})
	if err != nil || len(st[topic]) == 0 {
		t.Fatalf("no reassignment in progress after the interruption: %v %v", st, err)
	}
	// The throttle is a claim in the ledger, naming every value it set.
	ledgerAdmin := link.Enforce(enforcer.DefaultOwnershipTopic)
	recs, err := ledgerAdmin.LoadRecords(t.Context())
	if err != nil || len(recs.Reassigns) != 1 {
		t.Fatalf("replication throttle claims after the interruption: %v (%v)", recs.Reassigns, err)
	}
	var claim ledger.ReassignClaim
	for _, cl := range recs.Reassigns {
		claim = cl
	}
	if !strings.HasPrefix(claim.Owner, "cli-") || len(claim.Entries) != 8 || !strings.Contains(stderr.String(), ledger.ReassignKey(claim.Owner)) {
		t.Errorf("claim %+v; stderr names it: %v", claim, strings.Contains(stderr.String(), ledger.ReassignKey(claim.Owner)))
	}
	t.Cleanup(func() { ledgerAdmin.DeleteReassign(t.Context(), claim.Owner) })

	// The printed commands, as kafka-configs.sh runs them, remove it all.
	ran := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 10 || f[0] != "kafka-configs.sh" || f[3] != "--alter" || f[8] != "--delete-config" {
			continue
		}
		ran++
		kind, name, keys := f[5], f[7], strings.Split(f[9], ",")
		del := map[string]sarama.IncrementalAlterConfigsEntry{}
		for _, k := range keys {
			del[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationDelete}
		}
		rt := sarama.TopicResource
		if kind == "brokers" {
			rt = sarama.BrokerResource
		}
		if err := a.IncrementalAlterConfig(rt, name, del, false); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	if ran != 4 {
		t.Errorf("%d kafka-configs.sh commands printed, want 4 (3 brokers, 1 topic)", ran)
	}
	// A config change reaches each broker through the metadata log, so a
	// broker other than the one that took the change may answer with the
	// old value for a moment.
	waitFor(t, "throttle removed by the printed commands", func() error {
		if got := read(); len(got) != 0 {
			return fmt.Errorf("throttle left: %v", got)
		}
		return nil
	})

	// `protection lift --all` (the uninstall hook) gives the claim up: its
	// values are gone already, so it only removes the claim.
	var lout, lerr bytes.Buffer
	largs := []string{"protection", "lift", "--all", "--reason", "test", "--bootstrap-server", bootstrap, "--sasl-mechanism", "PLAIN",
		"--sasl-username", kafkatest.GuardUser}
	if err := run(t.Context(), largs, env, &lout, &lerr); err != nil {
		t.Fatalf("protection lift --all: %v\n%s\n%s", err, lout.String(), lerr.String())
	}
	if !strings.Contains(lout.String(), "the replication throttle claimed by "+claim.Owner) {
		t.Errorf("protection lift --all does not name the claim:\n%s", lout.String())
	}
	if recs, err := ledgerAdmin.LoadRecords(t.Context()); err != nil || len(recs.Reassigns) != 0 {
		t.Errorf("claims after protection lift --all: %v (%v)", recs.Reassigns, err)
	}
}
