//go:build integration

package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// TestDifferentialFollowerBoundary is the broker-as-oracle test of the
// followers' upload boundary (spec R1.7) on a 2-node tiered cluster with
// remote.log.manager.task.interval.ms at Kafka's default (30 s): a tiered
// topic with local.retention.bytes=1, led by node 1, followed by node 2.
// The guard of node 2 reads the boundary from the leader (ListOffsets -5)
// and, for the follower, counts a segment uploaded only once a boundary
// at least FollowerSettle old covers it. Every follower segment it counts
// uploaded must be gone from the follower's disk soon after (two retention
// checks and the file delete delay, plus slack): the follower deletes by
// its own highestOffsetInRemoteStorage, refreshed by its follower task.
// The leader's latest boundary is logged beside it: how much earlier it
// would have counted those segments as freed.
func TestDifferentialFollowerBoundary(t *testing.T) {
	// scripts/kafka.sh fetch (run by scripts/test.sh before the tests)
	// builds the test RemoteStorageManager into the jar cache.
	cache := os.Getenv("KDG_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "kafka-disk-guard")
	}
	jars, _ := filepath.Glob(filepath.Join(cache, "rsm-*", "kdg-test-rsm.jar"))
	if len(jars) == 0 {
		t.Fatalf("no tiered storage test plugin in %s: run scripts/kafka.sh fetch (it builds it)", cache)
	}
	remoteDir := t.TempDir()
	start := time.Now()
	c, err := kafkatest.StartCluster(kafkatest.ClusterOptions{Nodes: 2, RetentionCheckMs: 1000, FileDeleteDelayMs: 1000,
		Classpath: jars[len(jars)-1:],
		Props: []string{"remote.log.storage.system.enable=true",
			"remote.log.storage.manager.class.name=io.kafkadiskguard.test.FileRemoteStorage",
			"rsm.config.dir=" + remoteDir,
			"remote.log.metadata.manager.listener.name=PLAINTEXT",
			"rlmm.config.remote.log.metadata.topic.replication.factor=1",
			"rlmm.config.remote.log.metadata.topic.num.partitions=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("tiered cluster of 2 nodes up in %s", time.Since(start).Round(time.Millisecond))
	const topic = "follower-boundary"
	c.CreateTopicAssigned(t, topic, [][]int32{{1, 2}}, map[string]string{"segment.bytes": "1048576",
		"remote.storage.enable": "true", "local.retention.bytes": "1"})
	cfg := c.Nodes[0].GuardConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := make([]byte, 10000)
	for range 600 { // 6 MB: 5 closed segments
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(value)}); err != nil {
			t.Fatal(err)
		}
	}

	client, err := sarama.NewClient(c.SASLAddrs(), c.Nodes[0].GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tp := agent.TopicPartition{Topic: topic}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := agent.NewTieredRefresher(agent.TieredRefresherConfig{Interval: time.Second}, logger,
		kafkaadmin.NewRemoteOffsetsFetcher(client), func() []agent.TopicPartition { return []agent.TopicPartition{tp} })
	if err != nil {
		t.Fatal(err)
	}
	r.WithLocalBroker(func() int32 { return 2 })
	dir := filepath.Join(c.Node(2).LogDir, topic+"-0")

	// Each closed segment of the follower (by base offset): its end, and
	// when the settled and the leader's boundaries first covered it and
	// when it left the follower's disk.
	type seen struct {
		end                       int64
		settled, leader, vanished time.Time
	}
	segs := map[int64]*seen{}
	deadline := time.Now().Add(150 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_ = r.Refresh(ctx)
		cancel()
		offs, _ := r.Current()
		ro := offs[tp]
		now := time.Now()
		present := map[int64]bool{}
		for _, b := range logBases(dir) {
			present[b] = true
		}
		bs := sortedBases(present)
		for i := 0; i+1 < len(bs); i++ {
			s := segs[bs[i]]
			if s == nil {
				s = &seen{end: bs[i+1]}
				segs[bs[i]] = s
			}
			if ro.Err == "" && s.settled.IsZero() && s.end-1 <= ro.HighestUploaded {
				s.settled = now
			}
			if ro.Err == "" && s.leader.IsZero() && s.end-1 <= ro.LeaderHighestUploaded {
				s.leader = now
			}
		}
		done := 0
		for b, s := range segs {
			if !present[b] && s.vanished.IsZero() {
				s.vanished = now
			}
			if !s.vanished.IsZero() {
				done++
			}
		}
		if done >= 3 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var vanished, counted int
	for b, s := range segs {
		if s.vanished.IsZero() {
			continue
		}
		vanished++
		switch {
		case s.settled.IsZero():
			t.Logf("segment %d: gone from the follower before the settled boundary covered it (safe); leader's boundary %s before",
				b, lag(s.leader, s.vanished))
		default:
			counted++
			if d := s.vanished.Sub(s.settled); d > 8*time.Second {
				t.Errorf("R1.7/segment %d counted uploaded on the follower %s before the follower deleted it", b, d.Round(100*time.Millisecond))
			}
			t.Logf("segment %d: counted uploaded %s before it left the follower; the leader's boundary covered it %s before",
				b, s.vanished.Sub(s.settled).Round(100*time.Millisecond), lag(s.leader, s.vanished))
		}
	}
	if vanished < 3 {
		t.Fatalf("only %d follower segments deleted in 150 s: the scenario needs uploads and follower deletions", vanished)
	}
	t.Logf("%d segments left the follower, %d counted uploaded before; test took %s", vanished, counted, time.Since(start).Round(time.Second))
}

func lag(at, vanished time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return vanished.Sub(at).Round(100 * time.Millisecond).String()
}

// logBases lists the base offsets of the .log files in a partition dir.
func logBases(dir string) []int64 {
	entries, _ := os.ReadDir(dir)
	var out []int64
	for _, e := range entries {
		var b int64
		if n, _ := fmt.Sscanf(e.Name(), "%020d.log", &b); n == 1 && filepath.Ext(e.Name()) == ".log" {
			out = append(out, b)
		}
	}
	return out
}

func sortedBases(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for b := range m {
		out = append(out, b)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
