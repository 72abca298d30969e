//go:build integration

package enforcer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// The tiered broker of the R7.4 tests: its only log dir is a 256 MiB
// tmpfs (remote storage on the ordinary disk), started by the first test
// that asks for it and shared by the rest (stopped in TestMain).
var (
	tieredMu  sync.Mutex
	tiered    *kafkatest.Broker
	tieredErr error
)

func sharedTiered(t testing.TB) *kafkatest.Broker {
	t.Helper()
	tieredMu.Lock()
	defer tieredMu.Unlock()
	if tiered == nil && tieredErr == nil {
		tiered, tieredErr = kafkatest.Start(kafkatest.Options{Tiered: true, TmpfsSize: "256m", RetentionCheckMs: 1000, FileDeleteDelayMs: 1000})
	}
	if tieredErr != nil {
		t.Fatalf("the tiered tests need a real broker with tiered storage and it did not start: %v", tieredErr)
	}
	return tiered
}

func stopTiered() {
	tieredMu.Lock()
	defer tieredMu.Unlock()
	if tiered != nil {
		tiered.Stop()
		tiered = nil
	}
}

// R7.4, R1.7: a producer floods a tiered topic on a broker whose only log
// dir is a 256 MiB tmpfs (remote storage on the ordinary disk), the guard
// enforcing on the cloud profile with the topic's real configs. Kafka's
// own local retention (local.retention.bytes) frees the local disk once
// segments are uploaded; the guard protects if usage still reaches 90%,
// and never sends DeleteRecords for the tiered topic: afterwards the log
// start offset is still 0 and every acknowledged record is readable from
// offset 0, through the remote tier.
func TestR7_4TieredFloodKeepsEveryRecord(t *testing.T) {
	start := time.Now()
	b := sharedTiered(t)
	const topic = "tflood"
	b.CreateTopic(t, topic, 1, map[string]string{"segment.bytes": "1048576", "remote.storage.enable": "true",
		"local.retention.bytes": "8388608"})

	// The topic's config as the cluster has it (read back, as the agent does).
	configs := tieredConfigs(t, b, topic)
	src := &scantest.Source{LogDir: b.LogDir, ScanEvery: 100 * time.Millisecond, UsageEvery: 5 * time.Millisecond, Configs: configs,
		Topics: map[string]bool{topic: true}} // the broker is shared with the other tiered tests
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 500 * time.Millisecond}, src: src, ownTopic: enforcer.DefaultOwnershipTopic})

	const target = 320 << 20 // more than the tmpfs holds
	acked, maxRatio := floodTiered(t, b, topic, target)
	g.stop()
	// The flood may end inside a protection episode: the stopped guard
	// leaves its DENY WRITE User:*, which refuses anonymous readers too
	// (readBackFromZero reads as a super user). Dropped when the test ends.
	if acls := topicACLs(t, g.admin, topic); len(acls) > 0 {
		t.Logf("the guard stopped while protecting %s: %v", topic, acls)
		t.Cleanup(func() { g.admin.DeleteACLs(context.Background(), acls) })
	}
	t.Logf("max usage %.1f%% after %s", maxRatio*100, time.Since(start).Round(time.Second))
	if !b.Running() {
		t.Fatal("the broker stopped")
	}
	if log := b.ServerLog(); strings.Contains(log, "No space left on device") || strings.Contains(log, "have failed") {
		t.Fatal("the broker ran out of space")
	}
	if dels := g.logs.lines("would delete records", "deleted records", "deleted unexpired records"); len(dels) > 0 {
		t.Errorf("R7.4: the guard planned DeleteRecords on the tiered topic: %v", dels)
	}
	t.Logf("write protection switched on %d times", len(g.logs.lines("write protection on")))

	// The log start offset never moved, and everything acknowledged reads
	// back from offset 0 (through the remote tier: the local copy of the
	// first segments is long gone).
	readBackFromZero(t, b, topic, acked)
	t.Logf("test took %s", time.Since(start).Round(time.Second))
}
