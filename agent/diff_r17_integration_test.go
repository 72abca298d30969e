//go:build integration

package agent_test

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// r17Topic is one scenario of the R1.7 differential test.
type r17Topic struct {
	name    string
	create  map[string]string
	flip    func(p agent.Partition) map[string]string // configs that make the broker delete, from the pre-flip scan
	records []time.Duration
	// wantSome: the scenario must predict deletions; wantNone: it must not.
	wantSome, wantNone bool
}

func value(i int) []byte {
	v := make([]byte, 1000)
	for j := range v {
		v[j] = byte('a' + (i+j)%26)
	}
	return v
}

// TestDifferentialR1_7 is spec R1.7's oracle test, on a broker with tiered
// storage and the log cleaner disabled: tiered topics (uploaded and past
// local retention: deleted locally, still readable from offset 0 through
// the remote tier; uploads failing: kept), preallocated segments, a
// negative retention.bytes, the empty cleanup.policy, compact,delete
// without a cleaner, and a partition with no high watermark on disk. As in
// TestDifferentialRetention, the guard classifies a scan taken before the
// configs flip; the broker's deletions after the flip must match.
func TestDifferentialR1_7(t *testing.T) {
	start := time.Now()
	b, err := kafkatest.Start(kafkatest.Options{
		Tiered:            true,
		RetentionCheckMs:  1000,
		FileDeleteDelayMs: 60000,
		Props: []string{
			"replica.high.watermark.checkpoint.interval.ms=300",
			"log.flush.start.offset.checkpoint.interval.ms=300",
			"log.cleaner.enable=false",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("tiered broker up in %s", time.Since(start).Round(time.Millisecond))
	h := time.Hour
	old := 3 * h
	base := map[string]string{"internal.segment.bytes": "16384", "retention.ms": "-1", "retention.bytes": "-1"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		maps.Copy(out, m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tiered := with(base, "remote.storage.enable", "true", "local.retention.ms", "-1", "local.retention.bytes", "-1")
	fixed := func(kv ...string) func(agent.Partition) map[string]string {
		return func(agent.Partition) map[string]string { return with(nil, kv...) }
	}
	oldThenRecent := append(ages(60, old), ages(10, 0)...)
	topics := []r17Topic{
		{name: "r17-tiered", create: tiered, flip: fixed("local.retention.ms", "3600000"), records: oldThenRecent, wantSome: true},
		{name: "kdg-upload-fails-r17", create: tiered, flip: fixed("local.retention.ms", "3600000"), records: oldThenRecent, wantNone: true},
		{name: "r17-tiered-size", create: tiered, flip: fixed("local.retention.bytes", "30000"), records: ages(70, 0), wantSome: true},
		{name: "r17-prealloc", create: with(base, "preallocate", "true"), flip: preallocFlip, records: ages(70, 0), wantSome: true},
		{name: "r17-negative-bytes", create: with(base, "retention.bytes", "-5"), flip: fixed("retention.ms", "3600000"), records: oldThenRecent, wantSome: true},
		{name: "r17-empty-policy", create: with(base, "cleanup.policy", ""), flip: fixed("retention.ms", "3600000", "retention.bytes", "0"), records: ages(70, old), wantNone: true},
		{name: "r17-cleaner-off", create: with(base, "cleanup.policy", "compact,delete"), flip: fixed("retention.ms", "3600000", "retention.bytes", "0"), records: ages(70, old), wantNone: true},
	}
	canary := r17Topic{name: "r17-canary", create: base, records: ages(40, 0)}
	producer := b.Producer(t)
	for _, tp := range append(slices.Clone(topics), canary) {
		b.CreateTopic(t, tp.name, 1, tp.create)
		now := time.Now()
		for i, age := range tp.records {
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: tp.name, Partition: 0,
				Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.ByteEncoder(value(i)), Timestamp: now.Add(-age)}); err != nil {
				t.Fatalf("produce %s record %d: %v", tp.name, i, err)
			}
		}
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scanner, err := agent.NewScanner(agent.ScannerConfig{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	remote := kafkaadmin.NewRemoteOffsetsFetcher(client)
	var ld agent.LogDir
	var scanTime time.Time
	var offsets map[agent.TopicPartition]agent.RemoteOffsets
	kafkatest.Eventually(t, 60*time.Second, func() error {
		scanTime = time.Now()
		ld = scanner.ScanLogDir(b.LogDir, nil)
		if ld.Err != nil {
			return ld.Err
		}
		for _, tp := range topics {
			p, ok := partition(ld, tp.name)
			if !ok || p.HighWatermark != int64(len(tp.records)) || p.LogEndOffset != int64(len(tp.records)) {
				return fmt.Errorf("%s: high watermark %d, log end offset %d, want %d", tp.name, p.HighWatermark, p.LogEndOffset, len(tp.records))
			}
		}
		// The tiered topics' closed segments are uploaded (except where the
		// remote store refuses them).
		offsets, err = remote.FetchRemoteOffsets(t.Context(), []agent.TopicPartition{{"r17-tiered", 0}, {"r17-tiered-size", 0}, {"kdg-upload-fails-r17", 0}})
		if err != nil {
			return err
		}
		for _, name := range []string{"r17-tiered", "r17-tiered-size"} {
			p, _ := partition(ld, name)
			ro := offsets[agent.TopicPartition{name, 0}]
			if want := p.Segments[len(p.Segments)-1].BaseOffset - 1; ro.Err != "" || ro.HighestUploaded != want {
				return fmt.Errorf("%s: remote offsets %+v, want every closed segment uploaded (highest %d)", name, ro, want)
			}
		}
		return nil
	})
	if errs := scanner.Errors(); len(errs) > 0 {
		t.Errorf("R6: scan errors on a healthy tiered broker: %v", errs)
	}
	if ro := offsets[agent.TopicPartition{"kdg-upload-fails-r17", 0}]; ro.Err != "" || ro.HighestUploaded != -1 {
		t.Errorf("R1.7: a topic whose uploads fail reports %+v, want nothing uploaded", ro)
	}
	if ro := offsets[agent.TopicPartition{"r17-tiered", 0}]; ro.LogStart != 0 || ro.LocalLogStart != 0 {
		t.Errorf("R1.7: before any local deletion: %+v", ro)
	}
	before := map[string][]int64{}
	flips := map[string]map[string]string{}
	for _, tp := range append(slices.Clone(topics), canary) {
		p, _ := partition(ld, tp.name)
		before[tp.name] = bases(p.Segments)
		if tp.flip != nil {
			flips[tp.name] = tp.flip(p)
		}
		if len(p.Segments) < 3 && tp.name != canary.name {
			t.Fatalf("%s: only %d segments: the scenario needs several", tp.name, len(p.Segments))
		}
	}

	admin := b.Admin(t)
	for _, tp := range topics {
		alter(t, admin, tp.name, flips[tp.name])
	}
	fetcher := kafkaadmin.NewConfigFetcher(client, ld.BrokerID)
	names := make([]string, 0, len(topics))
	for _, tp := range topics {
		names = append(names, tp.name)
	}
	var configs agent.ConfigSet
	kafkatest.Eventually(t, 30*time.Second, func() error {
		// R1.7: a topic with retention.bytes -5 must not fail the fetch.
		configs, err = fetcher.FetchConfigs(t.Context(), names)
		if err != nil {
			return err
		}
		for _, tp := range topics {
			c := configs.Topics[tp.name]
			for k, v := range flips[tp.name] {
				if got := r17ConfigValue(c, k); got != v {
					return fmt.Errorf("%s: %s=%s, want %s", tp.name, k, got, v)
				}
			}
		}
		return nil
	})
	if !configs.Defaults.CleanerDisabled || configs.Defaults.RemoteStorageSystemDisabled {
		t.Errorf("R1.7: broker settings read as cleaner disabled %v, remote storage system disabled %v",
			configs.Defaults.CleanerDisabled, configs.Defaults.RemoteStorageSystemDisabled)
	}
	for name, want := range map[string]func(agent.TopicConfig) bool{
		"r17-tiered":         func(c agent.TopicConfig) bool { return c.Tiered("r17-tiered") && c.LocalRetentionBytes == -1 },
		"r17-prealloc":       func(c agent.TopicConfig) bool { return c.Preallocate },
		"r17-negative-bytes": func(c agent.TopicConfig) bool { return c.RetentionBytes == -1 },
		"r17-empty-policy":   func(c agent.TopicConfig) bool { return c.CleanupPolicy == agent.CleanupPolicy{} },
	} {
		if !want(configs.Topics[name]) {
			t.Errorf("R1.7: %s read as %+v", name, configs.Topics[name])
		}
	}
	configs.Remote = offsets

	predicted := map[string][]int64{}
	for _, tp := range topics {
		p, _ := partition(ld, tp.name)
		c := configs.Classify(p, scanTime)
		var el []int64
		for _, s := range c.Segments {
			if s.State == agent.StateEligible {
				el = append(el, s.BaseOffset)
			}
		}
		predicted[tp.name] = el
		t.Logf("%s: segments %v, predicted eligible %v (%s)", tp.name, before[tp.name], el, reasons(c.Segments))
		if tp.wantSome && len(el) == 0 {
			t.Errorf("%s: the scenario predicts no deletion; it must exercise one", tp.name)
		}
		if tp.wantNone && len(el) > 0 {
			t.Errorf("R1.7 %s: predicted %v, want nothing", tp.name, el)
		}
		switch tp.name {
		case "r17-tiered":
			for i, s := range c.Segments {
				want := agent.TierUploaded
				if i == len(c.Segments)-1 {
					want = agent.TierLocalOnly
				}
				if s.Tier != want {
					t.Errorf("R1.7 %s: segment %d tier %s, want %s", tp.name, s.BaseOffset, s.Tier, want)
				}
				if s.State == agent.StateEligible && s.Reason != agent.ReasonLocalRetentionTime {
					t.Errorf("R1.7 %s: segment %d reason %s", tp.name, s.BaseOffset, s.Reason)
				}
			}
		case "r17-cleaner-off":
			// R1.2: held, and the scan says why.
			if c.Held != agent.HeldCleanerDisabled {
				t.Errorf("R1.2 %s: held %q, want cleaner_disabled", tp.name, c.Held)
			}
		case "kdg-upload-fails-r17":
			for _, s := range c.Segments {
				if s.Tier != agent.TierLocalOnly {
					t.Errorf("R1.7 %s: segment %d tier %s, want local_only", tp.name, s.BaseOffset, s.Tier)
				}
			}
		case "r17-prealloc":
			if p.ActiveWrittenBytes < 0 {
				t.Fatalf("R1.7: preallocated active segment: written bytes unknown")
			}
			fileLen := configs.Topics[tp.name]
			fileLen.Preallocate = false
			if slices.Equal(eligibleBases(agent.Classify(p, fileLen, scanTime)), el) {
				t.Errorf("R1.7 %s: the scenario does not tell written bytes from the file length", tp.name)
			}
		}
	}
	// R1.7: the same partition with no high watermark on disk (its
	// replication-offset-checkpoint lost): nothing is eligible.
	{
		dir := t.TempDir()
		src := filepath.Join(b.LogDir, "r17-negative-bytes-0")
		copyDir(t, src, filepath.Join(dir, "r17-negative-bytes-0"))
		other, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := partition(other.ScanLogDir(dir, nil), "r17-negative-bytes")
		if p.HighWatermark != -1 {
			t.Fatalf("copied partition has high watermark %d", p.HighWatermark)
		}
		if el := eligibleBases(configs.Classify(p, scanTime)); len(el) > 0 {
			t.Errorf("R1.7: with no high watermark on disk %v is eligible, want nothing", el)
		}
	}

	kafkatest.Eventually(t, 90*time.Second, func() error {
		for _, tp := range topics {
			gone := vanished(t, b.LogDir, tp.name, before[tp.name])
			for _, o := range predicted[tp.name] {
				if !slices.Contains(gone, o) {
					return fmt.Errorf("%s: broker has not deleted %d yet (gone %v, predicted %v)", tp.name, o, gone, predicted[tp.name])
				}
			}
		}
		return nil
	})
	// A full retention check after the flips: the canary, flipped now, is
	// deleted by it.
	alter(t, admin, canary.name, map[string]string{"retention.bytes": "0"})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if gone := vanished(t, b.LogDir, canary.name, before[canary.name]); !slices.Contains(gone, 0) {
			return fmt.Errorf("%s: not deleted yet", canary.name)
		}
		return nil
	})
	for _, tp := range topics {
		gone := vanished(t, b.LogDir, tp.name, before[tp.name])
		if !slices.Equal(gone, predicted[tp.name]) {
			t.Errorf("R1.7 %s: broker deleted %v, guard predicted %v", tp.name, gone, predicted[tp.name])
		}
	}
	// R1.2: a DeleteRecords on compact,delete without the cleaner is
	// accepted (the records become unreadable) and frees nothing: Kafka's
	// retention never visits the log, so the segments below the new log
	// start offset stay. The enforcer never sends it (cleaner_disabled).
	{
		const name = "r17-cleaner-off"
		was := before[name]
		if err := admin.DeleteRecords(name, map[int32]int64{0: was[2]}); err != nil {
			t.Fatalf("R1.2: DeleteRecords on %s: %v", name, err)
		}
		if lso, err := client.GetOffset(name, 0, sarama.OffsetOldest); err != nil || lso != was[2] {
			t.Fatalf("R1.2 %s: log start offset %d (%v), want %d", name, lso, err, was[2])
		}
		// Several retention checks (every second on this broker).
		time.Sleep(6 * time.Second)
		if gone := vanished(t, b.LogDir, name, was); len(gone) > 0 {
			t.Errorf("R1.2 %s: the broker deleted %v after DeleteRecords with the cleaner off", name, gone)
		}
	}

	// R1.7: deleted locally, still readable from offset 0 through the
	// remote tier, and the log start offset did not move.
	for _, name := range []string{"r17-tiered", "r17-tiered-size"} {
		tp := topics[slices.IndexFunc(topics, func(x r17Topic) bool { return x.name == name })]
		got := b.Consume(t, kafkatest.Fetch{Topic: name, Offset: 0, Records: len(tp.records), Timeout: 60 * time.Second})
		for i, v := range got {
			if string(v) != string(value(i)) {
				t.Fatalf("R1.7 %s: record %d read from the remote tier differs", name, i)
			}
		}
		ro, err := remote.FetchRemoteOffsets(t.Context(), []agent.TopicPartition{{name, 0}})
		if err != nil {
			t.Fatal(err)
		}
		if r := ro[agent.TopicPartition{name, 0}]; r.LogStart != 0 || r.LocalLogStart <= 0 {
			t.Errorf("R1.7 %s: after local deletion log start %d, local log start %d: want 0 and > 0", name, r.LogStart, r.LocalLogStart)
		}
	}
	if _, err := os.Stat(filepath.Join(b.LogDir, "remote-log-index-cache")); err != nil {
		t.Errorf("remote reads left no index cache at the log dir root: %v", err)
	}
	scanner.ScanLogDir(b.LogDir, nil)
	if errs := scanner.Errors(); len(errs) > 0 {
		t.Errorf("R1.4: scan errors after remote reads (remote-log-index-cache): %v", errs)
	}
	t.Logf("TestDifferentialR1_7 took %s", time.Since(start).Round(time.Millisecond))
}

// preallocFlip sets retention.bytes so that counting the preallocated
// active segment at its written size lets exactly the first segment go,
// while counting its file length (segment.bytes) would take the second too.
func preallocFlip(p agent.Partition) map[string]string {
	n := len(p.Segments)
	var written int64
	for i, s := range p.Segments {
		if i == n-1 {
			written += p.ActiveWrittenBytes
		} else {
			written += s.LogBytes
		}
	}
	slack := (p.Segments[n-1].LogBytes - p.ActiveWrittenBytes) / 2
	r := written - p.Segments[0].LogBytes - (p.Segments[1].LogBytes - slack)
	return map[string]string{"retention.bytes": fmt.Sprint(r)}
}

func eligibleBases(p agent.Partition) []int64 {
	var out []int64
	for _, s := range p.Segments {
		if s.State == agent.StateEligible {
			out = append(out, s.BaseOffset)
		}
	}
	return out
}

func r17ConfigValue(c agent.TopicConfig, key string) string {
	switch key {
	case "local.retention.ms":
		return fmt.Sprint(c.LocalRetentionMs)
	case "local.retention.bytes":
		return fmt.Sprint(c.LocalRetentionBytes)
	}
	return configValue(c, key)
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			continue // deleted meanwhile
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
