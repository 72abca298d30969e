//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// TestScanOnlineConfigs runs `scan --bootstrap-server` against a real
// broker: topic configs and the broker's defaults come from
// DescribeConfigs, the broker id from meta.properties.
func TestScanOnlineConfigs(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{Props: []string{"log.retention.hours=5"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	b.CreateTopic(t, "online.cfg-topic", 2, map[string]string{"retention.ms": "3600000", "retention.bytes": "123456", "cleanup.policy": "compact,delete"})
	b.CreateTopic(t, "online-defaults", 1, nil)
	b.Produce(t, "online.cfg-topic", 0, 20, 100)

	var stdout, stderr bytes.Buffer
	// The connection flags of every subcommand; the password from the
	// environment.
	args := []string{"scan", "--log-dirs", b.LogDir, "--bootstrap-server", b.SASLAddr, "--sasl-mechanism", "PLAIN",
		"--sasl-username", kafkatest.GuardUser, "--retention-ms", "1", "--format", "json"}
	if err := run(t.Context(), args, mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword}), &stdout, &stderr); err != nil {
		t.Fatalf("scan: %v\n%s", err, stderr.String())
	}
	var rep struct {
		LogDirs []struct {
			BrokerID int32 `json:"broker_id"`
		} `json:"log_dirs"`
		Topics []struct {
			Topic          string `json:"topic"`
			RetentionMs    int64  `json:"retention_ms"`
			RetentionBytes int64  `json:"retention_bytes"`
			CleanupPolicy  string `json:"cleanup_policy"`
			Partitions     int    `json:"partitions"`
		} `json:"topics"`
		Segments []struct {
			Topic string `json:"topic"`
			State string `json:"state"`
		} `json:"segments"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(rep.LogDirs) != 1 || rep.LogDirs[0].BrokerID != 1 {
		t.Errorf("R1.5: log dirs %+v, want broker 1", rep.LogDirs)
	}
	got := map[string]string{}
	for _, tr := range rep.Topics {
		got[tr.Topic] = fmtTopic(tr.RetentionMs, tr.RetentionBytes, tr.CleanupPolicy, tr.Partitions)
	}
	want := map[string]string{
		"online.cfg-topic": fmtTopic(3600000, 123456, "compact,delete", 2),
		"online-defaults":  fmtTopic(5*3600000, -1, "delete", 1), // the broker's log.retention.hours, not --retention-ms
	}
	for topic, w := range want {
		if got[topic] != w {
			t.Errorf("%s: %s, want %s", topic, got[topic], w)
		}
	}
	n := 0
	for _, s := range rep.Segments {
		if s.Topic == "online.cfg-topic" {
			n++
			if s.State != "open" {
				t.Errorf("segment state %s", s.State)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d segments of online.cfg-topic, want 2", n)
	}
}

func fmtTopic(ms, bytes int64, policy string, parts int) string {
	b, _ := json.Marshal([]any{ms, bytes, policy, parts})
	return string(b)
}
