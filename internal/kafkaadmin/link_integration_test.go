//go:build integration

package kafkaadmin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// The Link against a real broker over SASL/PLAIN: it connects, its
// adapters read the cluster, it notices the broker going away (adapters
// answer ErrNotConnected), reconnects when a broker is back on the same
// address, and closes when Run ends.
func TestLinkOnRealBroker(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "kafka.sh")
	_, port, _ := net.SplitHostPort(b.Addr)

	logs := &logBuffer{}
	l := NewLink(Config{BootstrapServers: []string{b.SASLAddr}, Timeout: 5 * time.Second,
		SASL: SASLConfig{Mechanism: "PLAIN", Username: kafkatest.GuardUser, Password: kafkatest.GuardPassword}},
		slog.New(slog.NewTextHandler(logs, nil)),
		LinkOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, HealthInterval: 500 * time.Millisecond})
	notConnected(t, l)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	select {
	case <-l.Up():
	case <-time.After(60 * time.Second):
		t.Fatalf("never connected:\n%s", logs)
	}
	read := func() error {
		info, err := l.ClusterReader().ReadCluster(t.Context())
		if err == nil && (len(info.Brokers) != 1 || info.Brokers[0].ID != 1) {
			err = errors.New("not the one broker")
		}
		return err
	}
	if err := read(); err != nil {
		t.Fatalf("read cluster: %v", err)
	}
	if _, err := l.Enforce("__kdg_link_test").TopicACLs(t.Context()); err != nil {
		t.Fatalf("topic ACLs: %v", err)
	}

	start := time.Now()
	if out, err := exec.Command(script, "down", "--dir", b.Dir).CombinedOutput(); err != nil {
		t.Fatalf("broker down: %v\n%s", err, out)
	}
	eventually(t, "link notices the broker is gone", func() bool { return !l.Connected() })
	t.Logf("connection dropped %s after the broker stopped", time.Since(start).Round(time.Millisecond))
	notConnected(t, l)

	if out, err := exec.Command(script, "up", "--dir", b.Dir, "--port", port).CombinedOutput(); err != nil {
		t.Fatalf("broker up again: %v\n%s", err, out)
	}
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if !l.Connected() {
			return errors.New("not connected")
		}
		return read()
	})
	if n := strings.Count(logs.String(), "kafka connected"); n != 2 {
		t.Errorf("%d 'kafka connected' lines, want 2:\n%s", n, logs)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	notConnected(t, l)
}
