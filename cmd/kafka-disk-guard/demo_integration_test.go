//go:build integration

package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// TestDemoGuardsRealBroker: with --bootstrap-server and --log-dirs the demo
// scans a real broker's log dir and classifies and reserves with the
// topic configs the broker reports (spec R5.1); its enforcer observes the
// broker and tells the log dir's band, without a warning.
func TestDemoGuardsRealBroker(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	}()
	b.CreateTopic(t, "guard.delete", 2, map[string]string{"retention.bytes": "1048576", "segment.bytes": "1048576"})
	b.CreateTopic(t, "guard.compact", 1, map[string]string{"cleanup.policy": "compact"})
	b.Produce(t, "guard.delete", 0, 10, 100)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--bootstrap-server", b.Addr, "--log-dirs", b.LogDir, "--listen", "127.0.0.1:0", "--interval", "200ms"},
			func(string) string { return "" }, &stdout, &stderr)
	}()
	var url string
	urlRe := regexp.MustCompile(`Metrics: (http://\S+)`)
	eventually(t, 60*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("demo exited: %v\n%s", err, stderr.String())
		default:
		}
		m := urlRe.FindStringSubmatch(stdout.String())
		if m == nil {
			return errors.New("no metrics URL yet")
		}
		url = m[1]
		return nil
	})
	const mib = 1 << 20
	tests := []struct {
		series string
		want   float64
	}{
		// retention.bytes 1 MiB, segment.bytes 1 MiB: n = 2; two partitions.
		{`kafka_disk_guard_reserved_bytes{basis="retention_bytes",topic="guard.delete"}`, 2 * (mib + mib + 2*10*mib*2)},
		{`kafka_disk_guard_reserved_bytes{basis="compact_flat",topic="guard.compact"}`, 1 << 30},
		{fmt.Sprintf(`kafka_disk_guard_segments{log_dir=%q,state="open",topic="guard.delete"}`, b.LogDir), 2},
		{fmt.Sprintf(`kafka_disk_guard_log_dir_error{log_dir=%q}`, b.LogDir), 0},
	}
	for _, tt := range tests {
		eventually(t, 30*time.Second, func() error {
			v, err := scrapeValue(url, tt.series)
			if err != nil {
				return err
			}
			if v != tt.want {
				return fmt.Errorf("%s = %v, want %v", tt.series, v, tt.want)
			}
			return nil
		})
	}
	// The enforcer observes the real broker and says which band its log
	// dir is in, and nothing goes wrong on a healthy broker.
	bandLine := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  usage \d+\.\d%: band (scheduled|periodic|purge|protect)`)
	eventually(t, 30*time.Second, func() error {
		if !bandLine.MatchString(stdout.String()) {
			return fmt.Errorf("no band line:\n%s", stdout.String())
		}
		return nil
	})
	if !strings.Contains(stdout.String(), "The enforcer runs in observe mode") {
		t.Errorf("no observe-mode line:\n%s", stdout.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("demo: %v", err)
	}
	if e := stderr.String(); strings.Contains(e, "level=WARN") || strings.Contains(e, "level=ERROR") {
		t.Errorf("warnings on a healthy broker:\n%s", e)
	}
}
