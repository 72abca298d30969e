//go:build integration

package enforcer_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R3.5, R7.4 on the real tiered broker: bytes Kafka's next retention
// check frees are on their way out. A tiered topic's uploaded segments
// are past its lowered local retention (eligible) in the guard's view
// while the log dir is at the top of the purge band; a second topic, not
// tiered, holds unexpired data the purge band could take. The guard
// (enforcing) purges nothing of it: the tiered segments count as pending.
// Then the topic's local.retention.bytes is lowered on the broker, as the
// guard's own lowering does, and Kafka frees those segments at its next
// check (the oracle): usage falls and the other topic still has every
// record. Last, the control: with the log dir in the purge band again
// and nothing pending, the same guard purges the other topic.
//
// The guard's view takes Kafka's check interval as 5 s (twice that is how
// long it trusts Kafka to free eligible segments); the broker checks
// every second, so Kafka frees them well inside that.
func TestR3_5PendingTieredBytesAreNotPurgedAgain(t *testing.T) {
	b := sharedTiered(t)
	const tiered, other = "tpending", "tpending-other"
	b.CreateTopic(t, tiered, 1, map[string]string{"segment.bytes": "1048576", "remote.storage.enable": "true",
		"local.retention.bytes": operatorLocalRetention})
	dropWhenDone(t, b, tiered)
	b.CreateTopic(t, other, 1, map[string]string{"segment.bytes": "1048576"})
	dropWhenDone(t, b, other)
	superProduceSized(t, b, tiered, 6<<20)
	superProduceSized(t, b, other, 3<<20)
	remote := remoteOffsets(t, b, tiered, 1)

	// The guard's view: local.retention.bytes 1 on the tiered topic.
	configs := tieredConfigs(t, b, tiered)
	lowered := configs[tiered]
	lowered.LocalRetentionBytes, lowered.RetentionCheckIntervalMs = 1, 5000
	configs[tiered] = lowered
	configs[other] = agent.DefaultTopicConfig()
	var ratio atomic.Uint64 // usage, in millionths
	ratio.Store(870000)
	dirs := []string{filepath.Join(b.LogDir, tiered+"-0"), filepath.Join(b.LogDir, other+"-0")}
	used := func() int64 { return dirBytes(dirs[0]) + dirBytes(dirs[1]) }
	src := &scantest.Source{LogDir: b.LogDir, Configs: configs, Remote: remote, Topics: map[string]bool{tiered: true, other: true},
		Capacity: func() uint64 { return uint64(float64(used()) / (float64(ratio.Load()) / 1e6)) }}
	eligible := func(s *agent.Snapshot) (n int, bytes int64) {
		for _, p := range s.LogDirs[0].Partitions {
			for _, sg := range p.Segments {
				if p.Topic == tiered && sg.State == agent.StateEligible {
					n, bytes = n+1, bytes+sg.DiskBytes
				}
			}
		}
		return n, bytes
	}
	kafkatest.Eventually(t, 90*time.Second, func() error {
		if n, _ := eligible(src.ScanOnce()); n < 3 {
			return fmt.Errorf("%d uploaded segments past local retention, want 3", n)
		}
		return nil
	})
	n, pending := eligible(src.ScanOnce())
	t.Logf("%d tiered segments (%d bytes) eligible of %d bytes in the two topics, usage 87%%", n, pending, used())

	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 100 * time.Millisecond, Purge: purgeMechanics},
		src: src, ownTopic: enforcer.DefaultOwnershipTopic})
	g.waitReconciles(t, 5)
	if lso := offsets(t, g.admin, other, 1)[0].LogStart; lso != 0 {
		t.Fatalf("R3.5/the guard purged %s (log start offset %d) for bytes Kafka is about to free", other, lso)
	}
	// Kafka frees them: the broker's local retention lowered too.
	alter(t, b, tiered, "local.retention.bytes", "1")
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if n, _ := eligible(src.ScanOnce()); n > 0 {
			return fmt.Errorf("%d eligible tiered segments still local", n)
		}
		return nil
	})
	g.waitReconciles(t, 5)
	if lso := offsets(t, g.admin, other, 1)[0].LogStart; lso != 0 {
		t.Fatalf("R3.5/the guard purged %s (log start offset %d) while Kafka freed the tiered segments", other, lso)
	}
	if dels := g.logs.lines("deleted records", "deleted unexpired records"); len(dels) > 0 {
		t.Fatalf("R3.5/deletions: %v", dels)
	}
	// The control: back in the purge band, nothing pending: the other
	// topic is purged.
	ratio.Store(890000)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if lso := offsets(t, g.admin, other, 1)[0].LogStart; lso == 0 {
			return fmt.Errorf("%s not purged at 89%%", other)
		}
		return nil
	})
}

// alter sets one config of a topic.
func alter(t *testing.T, b *kafkatest.Broker, topic, key, value string) {
	t.Helper()
	a, err := sarama.NewClusterAdmin([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		key: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &value}}, false); err != nil {
		t.Fatal(err)
	}
}
