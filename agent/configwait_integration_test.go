//go:build integration

package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// R7.2 on a real broker, wired as the guard wires it: the live agent, the
// config refresher over the Sarama fetcher, and the agent's TopicsChanged
// forwarded to Notify. The refresh interval is an hour, so only the
// trigger can bring a new topic's configs. Measures how long a new topic
// waits for them, and shows a topic the cluster does not have (a
// directory another cluster's volume could hold) getting an error of its
// own while the others are fetched.
func TestNewTopicConfigsFetchedAtOnce(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var a *agent.Agent
	topics := func() []string {
		if s := a.Snapshot(); s != nil {
			return s.LiveTopics()
		}
		return nil
	}
	r, err := agent.NewConfigRefresher(agent.ConfigRefresherConfig{Interval: time.Hour}, logger,
		kafkaadmin.NewConfigFetcher(client, b.NodeID), topics, agent.ConfigSet{Defaults: agent.DefaultTopicConfig(), Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	a, err = agent.New(agent.Config{LogDirs: []string{b.LogDir}}, logger, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		go r.Run(ctx)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-a.TopicsChanged():
					r.Notify()
				}
			}
		}()
		a.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if a.Snapshot() == nil {
			return errors.New("no snapshot yet")
		}
		return nil
	})

	// A directory of a topic the cluster does not have.
	if err := os.Mkdir(filepath.Join(b.LogDir, "ghost-0"), 0o755); err != nil {
		t.Fatal(err)
	}

	var onDisk, inRefresher, inSnapshot []time.Duration
	for i := range 5 {
		topic := fmt.Sprintf("config-wait-%d", i)
		start := time.Now()
		b.CreateTopic(t, topic, 3, map[string]string{"retention.ms": "-1"})
		var disk, cfg time.Duration
		kafkatest.Eventually(t, 30*time.Second, func() error {
			s := a.Snapshot()
			if disk == 0 {
				for _, ld := range s.LogDirs {
					for _, p := range ld.Partitions {
						if p.Topic == topic && p.Kind == agent.KindLive {
							disk = time.Since(start)
						}
					}
				}
			}
			if info := r.Current().Info(topic); cfg == 0 && info.FreshSince(start) && info.Config.RetentionMs == -1 {
				cfg = time.Since(start)
			}
			if info := s.ConfigInfo(topic); !info.FreshSince(start) || info.Config.RetentionMs != -1 {
				return fmt.Errorf("%s: snapshot config %+v", topic, info)
			}
			return nil
		})
		onDisk, inRefresher, inSnapshot = append(onDisk, disk), append(inRefresher, cfg), append(inSnapshot, time.Since(start))
	}
	t.Logf("from CreateTopics (3 partitions, retention.ms=-1) to: the partition in the snapshot %v; its configs in the refresher %v; in the snapshot %v",
		onDisk, inRefresher, inSnapshot)

	info := a.Snapshot().ConfigInfo("ghost")
	if info.Origin != agent.ConfigAssumed || !errors.Is(info.Err, agent.ErrTopicUnknown) || info.FreshSince(time.Time{}) {
		t.Errorf("ghost: %+v, want assumed defaults with ErrTopicUnknown", info)
	}
	var status agent.LogDirConfigs
	kafkatest.Eventually(t, 10*time.Second, func() error {
		status = a.Snapshot().ConfigStatus()[0]
		if status.Without[agent.ConfigMissingError] != 1 {
			return fmt.Errorf("status %+v", status)
		}
		return nil
	})
	if status.Topics != 6 || status.OldestFetch.IsZero() || status.Without[agent.ConfigMissingNone] != 0 {
		t.Errorf("status %+v: want 6 topics, one without a config (ghost)", status)
	}
}
