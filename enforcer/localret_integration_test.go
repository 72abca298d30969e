//go:build integration

package enforcer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// The operator's local.retention.bytes of the peer test's topic.
const operatorLocalRetention = "209715200"

// remoteOffsets follows the topics' remote offsets from the broker, every
// 500 ms, as the agent's TieredRefresher does.
func remoteOffsets(t *testing.T, b *kafkatest.Broker, topic string, parts int32) func() map[agent.TopicPartition]agent.RemoteOffsets {
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	f := kafkaadmin.NewRemoteOffsetsFetcher(client)
	var tps []agent.TopicPartition
	for p := range parts {
		tps = append(tps, agent.TopicPartition{Topic: topic, Partition: p})
	}
	var mu sync.Mutex
	var last map[agent.TopicPartition]agent.RemoteOffsets
	var at time.Time
	return func() map[agent.TopicPartition]agent.RemoteOffsets {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) >= 500*time.Millisecond {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got, err := f.FetchRemoteOffsets(ctx, tps)
			cancel()
			if err == nil {
				last, at = got, time.Now()
			}
		}
		return last
	}
}

// tieredConfigs reads the topic's configs from the cluster, as the agent
// does.
func tieredConfigs(t *testing.T, b *kafkatest.Broker, topic string) map[string]agent.TopicConfig {
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	configs, err := kafkaadmin.NewConfigFetcher(client, -1).FetchConfigs(t.Context(), []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	if !configs.Topics[topic].Tiered(topic) {
		t.Fatalf("%s read as %+v", topic, configs.Topics[topic])
	}
	return configs.Topics
}

// localRetentionOf reads the topic's local.retention.bytes override (nil:
// not set on the topic).
func localRetentionOf(t *testing.T, a *kafkaadmin.Enforce, topic string) *string {
	t.Helper()
	got, err := a.TopicConfigOverrides(t.Context(), []string{topic}, enforcer.LocalRetentionBytesKey)
	if err != nil {
		t.Fatal(err)
	}
	return got[topic]
}

func showValue(v *string) string {
	if v == nil {
		return "not set"
	}
	return *v
}

// R7.4: a producer floods a tiered topic on the 256 MiB tmpfs with 320
// MiB; the topic has no local.retention.bytes of its own (it inherits
// retention.bytes: no limit), so only the guard keeps the disk from
// filling. Enforcing on the cloud profile, it lowers local.retention.bytes
// in the purge band; Kafka deletes the local copies of uploaded segments
// and usage falls; the guard deletes its override again (the topic had
// none) once usage is under 80% (85% minus the hysteresis). It never sends
// DeleteRecords: every acknowledged record reads back from offset 0,
// through the remote tier.
func TestR7_4TieredFloodLowersLocalRetention(t *testing.T) {
	start := time.Now()
	b := sharedTiered(t)
	const topic = "tlower"
	b.CreateTopic(t, topic, 1, map[string]string{"segment.bytes": "1048576", "remote.storage.enable": "true"})
	dropWhenDone(t, b, topic)
	src := &scantest.Source{LogDir: b.LogDir, ScanEvery: 100 * time.Millisecond, UsageEvery: 5 * time.Millisecond,
		Configs: tieredConfigs(t, b, topic), Remote: remoteOffsets(t, b, topic, 1), Topics: map[string]bool{topic: true}}
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond}, src: src,
		ownTopic: enforcer.DefaultOwnershipTopic})

	acked, maxRatio := floodTiered(t, b, topic, 320<<20)
	if !b.Running() {
		t.Fatal("the broker stopped")
	}
	if log := b.ServerLog(); strings.Contains(log, "No space left on device") || strings.Contains(log, "have failed") {
		t.Fatal("the broker ran out of space")
	}
	lowered := g.logs.lines("local retention lowered")
	if len(lowered) == 0 {
		t.Fatalf("R7.4: the guard never lowered local retention (max usage %.1f%%)", maxRatio*100)
	}
	t.Logf("max usage %.1f%%; local retention lowered %d times, first: %s", maxRatio*100, len(lowered), lowered[0])
	if dels := g.logs.lines("would delete records", "deleted records", "deleted unexpired records"); len(dels) > 0 {
		t.Errorf("R7.4: the guard planned DeleteRecords on the tiered topic: %v", dels)
	}

	// Usage falls under 80%: the override goes (the topic had none), the
	// claim too.
	restoreStart := time.Now()
	kafkatest.Eventually(t, 90*time.Second, func() error {
		if v := localRetentionOf(t, g.admin, topic); v != nil {
			return fmt.Errorf("local.retention.bytes %s (usage %.1f%%)", showValue(v), statfsRatio(b.LogDir)*100)
		}
		recs, err := g.admin.LoadRecords(t.Context())
		if err != nil {
			return err
		}
		for _, r := range recs.Agents {
			if len(r.ConfigClaims()) > 0 {
				return fmt.Errorf("a record still claims %+v", r.ConfigClaims())
			}
		}
		return nil
	})
	t.Logf("override deleted %s after the flood (usage %.1f%%), %d restores in all", time.Since(restoreStart).Round(100*time.Millisecond),
		statfsRatio(b.LogDir)*100, len(g.logs.lines("local retention restored")))
	g.stop()
	readBackFromZero(t, b, topic, acked)
	t.Logf("test took %s", time.Since(start).Round(time.Second))
}

// R7.4, R8.1: the agent that lowered a tiered topic's local retention
// dies (stopped without a word: nothing is lifted, as after SIGKILL); a
// peer agent restores the operator's value once the lease has gone
// unrenewed for its length.
func TestR7_4PeerRestoresLocalRetentionAfterTheLease(t *testing.T) {
	b := sharedTiered(t)
	const topic = "tpeer"
	const lease = 3 * time.Second
	cfg := enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond, Protection: enforcer.ProtectionConfig{LeaseDuration: lease}}
	src := uploadedTieredTopic(t, b, topic)
	// Agent 1 sees its log dir 87% full (configured capacity, this topic's
	// bytes only): the purge band.
	dying := startGuard(t, b, guardSpec{cfg: cfg, src: src(0.87), ownTopic: enforcer.DefaultOwnershipTopic})
	waitLowered(t, dying, topic)
	// The log line names the value's reach from the cluster's metadata:
	// one replica, on this single broker.
	if ls := dying.logs.lines("local retention lowered"); len(ls) == 0 || ls[0]["scope"] != "cluster" ||
		ls[0]["replicas"] != float64(1) || ls[0]["brokers"] != float64(1) {
		t.Errorf("R7.4/the lowered line's reach: %v", ls)
	}
	lowered := localRetentionOf(t, dying.admin, topic)
	dying.stop()
	died := time.Now()

	peerCfg := cfg
	peerCfg.BrokerID = new(int32(2))
	peer := startGuard(t, b, guardSpec{cfg: peerCfg, src: src(0.10), ownTopic: enforcer.DefaultOwnershipTopic})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if v := localRetentionOf(t, peer.admin, topic); v == nil || *v != operatorLocalRetention {
			return fmt.Errorf("local.retention.bytes %s", showValue(v))
		}
		return nil
	})
	restored := time.Since(died)
	if restored < lease {
		t.Errorf("R8.1: restored %s after the agent died, before its %s lease ran out", restored, lease)
	}
	recs, err := peer.admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := recs.PendingLift(1); !ok || l.Kind != enforcer.LiftLeaseExpired {
		t.Errorf("R8.1: lift of broker 1 %+v %v", l, ok)
	}
	t.Logf("R7.4/lowered to %s; the peer restored %s %s after the agent died (lease %s)", showValue(lowered), operatorLocalRetention,
		restored.Round(10*time.Millisecond), lease)
}

// uploadedTieredTopic creates a tiered topic with the operator's local
// retention, writes 6 MiB and waits until its first segment is uploaded.
// It returns a snapshot source of the topic whose configured capacity puts
// usage at ratio.
func uploadedTieredTopic(t *testing.T, b *kafkatest.Broker, topic string) func(ratio float64) *scantest.Source {
	t.Helper()
	b.CreateTopic(t, topic, 1, map[string]string{"segment.bytes": "1048576", "remote.storage.enable": "true",
		"local.retention.bytes": operatorLocalRetention})
	dropWhenDone(t, b, topic)
	superProduceSized(t, b, topic, 6<<20)
	remote := remoteOffsets(t, b, topic, 1)
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if r := remote()[agent.TopicPartition{Topic: topic}]; r.HighestUploaded < 1 {
			return fmt.Errorf("nothing uploaded yet: %+v", r)
		}
		return nil
	})
	configs := tieredConfigs(t, b, topic)
	return func(ratio float64) *scantest.Source {
		return &scantest.Source{LogDir: b.LogDir, Configs: configs, Remote: remote, Topics: map[string]bool{topic: true},
			Capacity: func() uint64 { return uint64(float64(dirBytes(filepath.Join(b.LogDir, topic+"-0"))) / ratio) }}
	}
}

// waitLowered waits until the guard has lowered the topic's local
// retention below the operator's value.
func waitLowered(t *testing.T, g *guard, topic string) {
	t.Helper()
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if v := localRetentionOf(t, g.admin, topic); v == nil || *v == operatorLocalRetention {
			return fmt.Errorf("local.retention.bytes %s", showValue(v))
		}
		return nil
	})
}

// R7.4, R8.1: an operator's lift of one topic (what `kafka-disk-guard
// protection lift --topic` runs) restores the operator's local retention
// while the agent that lowered it is alive and its disk still in the purge
// band, and the agent leaves the topic alone for the episode.
func TestR7_4OperatorLiftRestoresLocalRetention(t *testing.T) {
	b := sharedTiered(t)
	const topic = "toplift"
	src := uploadedTieredTopic(t, b, topic)
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond}, src: src(0.87),
		ownTopic: enforcer.DefaultOwnershipTopic})
	waitLowered(t, g, topic)
	lowered := localRetentionOf(t, g.admin, topic)

	res, err := ledger.LiftProtection(t.Context(), g.admin, ledger.LiftRequest{Topic: topic, By: "operator@test", Reason: "test", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Released.Configs) != 1 || res.Released.Configs[0].Topic != topic || res.Released.Configs[0].Value == nil ||
		*res.Released.Configs[0].Value != operatorLocalRetention {
		t.Fatalf("R7.4/the lift restored %+v, want %s=%s", res.Released.Configs, topic, operatorLocalRetention)
	}
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != operatorLocalRetention {
		t.Fatalf("R7.4/after the lift local.retention.bytes is %s, want the operator's %s", showValue(v), operatorLocalRetention)
	}
	// The agent acknowledges the lift and, its disk still in the purge
	// band, does not lower the topic again: 10 passes.
	g.waitReconciles(t, 10)
	if v := localRetentionOf(t, g.admin, topic); v == nil || *v != operatorLocalRetention {
		t.Errorf("R8.1/the agent lowered the topic again after the operator's lift: %s", showValue(v))
	}
	recs, err := g.admin.LoadRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Agents[1].ConfigClaims()) != 0 {
		t.Errorf("R8.1/the agent still claims %+v after the lift", recs.Agents[1].ConfigClaims())
	}
	t.Logf("R7.4/lowered to %s by the agent; the operator's lift restored %s", showValue(lowered), operatorLocalRetention)
}

// dropWhenDone deletes the topic when the test ends and waits for its
// local files to go: the tiered tests share one small tmpfs.
func dropWhenDone(t *testing.T, b *kafkatest.Broker, topic string) {
	t.Cleanup(func() {
		a, err := sarama.NewClusterAdmin([]string{b.SASLAddr}, b.GuardConfig())
		if err != nil {
			t.Errorf("delete topic %s: %v", topic, err)
			return
		}
		defer a.Close()
		if err := a.DeleteTopic(topic); err != nil {
			t.Errorf("delete topic %s: %v", topic, err)
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			entries, _ := os.ReadDir(b.LogDir)
			left := false
			for _, e := range entries {
				left = left || strings.HasPrefix(e.Name(), topic+"-")
			}
			if !left {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("topic %s: local files still there 60s after its deletion", topic)
	})
}

// dirBytes is the space the files in dir take (allocated blocks, as the
// source counts them: preallocated indexes are sparse).
func dirBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
	}
	return max(n, 1)
}

// superProduceSized writes about n bytes to partition 0 of topic.
func superProduceSized(t *testing.T, b *kafkatest.Broker, topic string, n int) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for sent := 0; sent < n; sent += 16 * (64 << 10) {
		msgs := make([]*sarama.ProducerMessage, 16)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(make([]byte, 64<<10))}
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
}

// floodTiered produces target bytes to partition 0 of topic (records of
// 64 KiB numbered in their first 8 bytes), retrying what write protection
// refuses, and returns the acknowledged records by offset and the highest
// usage of the log dir's filesystem seen.
func floodTiered(t *testing.T, b *kafkatest.Broker, topic string, target int64) (map[int64]uint64, float64) {
	t.Helper()
	cfg := b.ClientConfig()
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	p, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	acked := map[int64]uint64{}
	var mu sync.Mutex
	var maxRatio float64
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			r := statfsRatio(b.LogDir)
			mu.Lock()
			maxRatio = max(maxRatio, r)
			mu.Unlock()
		}
	}()
	const size = 64 << 10
	var seq uint64
	var produced int64
	refused := 0
	for produced < target && ctx.Err() == nil {
		msgs := make([]*sarama.ProducerMessage, 16)
		for i := range msgs {
			v := make([]byte, size)
			binary.BigEndian.PutUint64(v, seq+uint64(i))
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(v)}
		}
		err := p.SendMessages(msgs)
		switch {
		case err == nil:
			for i, m := range msgs {
				acked[m.Offset] = seq + uint64(i)
			}
			produced += int64(len(msgs) * size)
		case errors.Is(err, sarama.ErrTopicAuthorizationFailed) || producerErrIs(err, sarama.ErrTopicAuthorizationFailed):
			refused++
		default:
			var pes sarama.ProducerErrors
			if errors.As(err, &pes) {
				for _, pe := range pes {
					if pe.Err == nil {
						acked[pe.Msg.Offset] = binary.BigEndian.Uint64(pe.Msg.Value.(sarama.ByteEncoder))
					}
				}
			}
		}
		seq += uint64(len(msgs))
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	if produced < target {
		t.Fatalf("only %d MiB acknowledged before the deadline", produced>>20)
	}
	t.Logf("produced %d MiB, %d requests refused by write protection", produced>>20, refused)
	return acked, maxRatio
}

// readBackFromZero checks that the log start offset never moved and that
// every acknowledged record reads back from offset 0 (through the remote
// tier: the local copy of the first segments is gone). It reads as the
// guard, a super user, whom no binding refuses: a guard stopped while it
// protected the topic leaves its bindings (nothing lifts them), and on
// the tiered broker (allow.everyone.if.no.acl.found=true, hidden from the
// guard, which takes it as unknown) its shape is DENY WRITE User:* alone.
// Kafka's StandardAuthorizer lets everyone in only on a topic without any
// binding (StandardAuthorizerData.findAclRule: a binding on the resource
// that matches neither the principal nor the operation still sets
// hasResourceAcls, and the rule is then DENY, not the allow-everyone
// default), so that shape refuses every anonymous reader until the lift,
// as docs/configuration.md says of allowEveryoneIfNoAclFound: auto. An
// anonymous read-back failed so in CI when the flood ended inside a
// protection episode.
func readBackFromZero(t *testing.T, b *kafkatest.Broker, topic string, acked map[int64]uint64) {
	t.Helper()
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ro, err := kafkaadmin.NewRemoteOffsetsFetcher(client).FetchRemoteOffsets(t.Context(), []agent.TopicPartition{{Topic: topic, Partition: 0}})
	if err != nil {
		t.Fatal(err)
	}
	r := ro[agent.TopicPartition{Topic: topic, Partition: 0}]
	if r.Err != "" || r.LogStart != 0 || r.LocalLogStart == 0 {
		t.Fatalf("R7.4: remote offsets %+v: want log start 0, local log start > 0", r)
	}
	var last int64 = -1
	for o := range acked {
		last = max(last, o)
	}
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, 0)
	if err != nil {
		t.Fatalf("consume %s: %v", topic, err)
	}
	defer pc.Close()
	seen := 0
	deadline := time.After(120 * time.Second)
	for read := int64(-1); read < last; {
		select {
		case m := <-pc.Messages():
			read = m.Offset
			if want, ok := acked[m.Offset]; ok {
				if got := binary.BigEndian.Uint64(m.Value); got != want {
					t.Fatalf("offset %d holds record %d, acknowledged %d", m.Offset, got, want)
				}
				seen++
			}
		case err := <-pc.Errors():
			t.Fatalf("read back from offset 0: %v", err)
		case <-deadline:
			t.Fatalf("read back: %d of %d acknowledged records before the deadline", seen, len(acked))
		}
	}
	if seen != len(acked) {
		t.Errorf("R7.4: read back %d of %d acknowledged records", seen, len(acked))
	}
	t.Logf("read back %d acknowledged records from offset 0 (local log start %d)", seen, r.LocalLogStart)
}
