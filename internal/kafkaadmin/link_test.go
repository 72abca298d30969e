package kafkaadmin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// fakeCluster is a one-broker cluster that speaks the Kafka protocol
// (Sarama's MockBroker): enough for connecting, pinging and one
// DescribeConfigs.
func fakeCluster(t *testing.T, addr string) *sarama.MockBroker {
	t.Helper()
	var mb *sarama.MockBroker
	if addr == "" {
		mb = sarama.NewMockBroker(t, 1)
	} else {
		// The address of a cluster that went away: listen again on it.
		var l net.Listener
		var err error
		deadline := time.Now().Add(10 * time.Second)
		for {
			if l, err = net.Listen("tcp", addr); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("listen again on %s: %v", addr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		mb = sarama.NewMockBrokerListener(t, 1, l)
	}
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 3, MinVersion: 0, MaxVersion: 11},   // Metadata
			{ApiKey: 18, MinVersion: 0, MaxVersion: 3},   // ApiVersions
			{ApiKey: 32, MinVersion: 0, MaxVersion: 4}}), // DescribeConfigs
		"MetadataRequest": sarama.NewMockMetadataResponse(t).
			SetBroker(mb.Addr(), mb.BrokerID()).SetController(mb.BrokerID()),
		"DescribeConfigsRequest": sarama.NewMockDescribeConfigsResponse(t),
	})
	return mb
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// notConnected asserts that every adapter the link hands out answers
// ErrNotConnected.
func notConnected(t *testing.T, l *Link) {
	t.Helper()
	ctx := t.Context()
	e := l.Enforce("__own")
	_, err1 := e.TopicACLs(ctx)
	_, err2 := e.LoadRecords(ctx)
	err3 := e.StoreRecord(ctx, ledger.Record{})
	_, err4 := l.ConfigFetcher(func() int32 { return -1 }).FetchConfigs(ctx, []string{"orders"})
	_, err5 := l.ClusterReader().ReadCluster(ctx)
	err6 := e.StoreLift(ctx, ledger.Lift{})
	_, err7 := e.LiveBrokers(ctx)
	_, err8 := e.AllowEveryoneIfNoACLFound(ctx)
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		if !errors.Is(err, ErrNotConnected) {
			t.Errorf("call %d: err = %v, want ErrNotConnected", i+1, err)
		}
	}
}

// connected asserts that a call reaches the cluster.
func connected(t *testing.T, l *Link) {
	t.Helper()
	_, err := l.ConfigFetcher(func() int32 { return 1 }).FetchConfigs(t.Context(), nil)
	if err != nil {
		t.Fatalf("fetch configs while connected: %v", err)
	}
}

// The link answers "not connected" until it connects, connects, notices
// when the cluster goes away, answers "not connected" again, reconnects
// when the cluster comes back, and closes its connection when Run ends.
func TestLinkConnectReconnectClose(t *testing.T) {
	mb := fakeCluster(t, "")
	addr := mb.Addr()
	logs := &logBuffer{}
	l := NewLink(Config{BootstrapServers: []string{addr}, Timeout: time.Second}, slog.New(slog.NewTextHandler(logs, nil)),
		LinkOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, HealthInterval: 20 * time.Millisecond})
	notConnected(t, l)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	select {
	case <-l.Up():
	case <-time.After(20 * time.Second):
		t.Fatalf("never connected:\n%s", logs)
	}
	select {
	case <-l.Attempted():
	default:
		t.Fatal("Attempted not closed after the first connection")
	}
	connected(t, l)

	mb.Close() // the cluster goes away
	eventually(t, "link notices the cluster is gone", func() bool { return !l.Connected() })
	notConnected(t, l)
	if !strings.Contains(logs.String(), "kafka connection lost, reconnecting") {
		t.Errorf("no log line about the lost connection:\n%s", logs)
	}

	mb2 := fakeCluster(t, addr) // and comes back
	defer mb2.Close()
	eventually(t, "link reconnects", l.Connected)
	connected(t, l)
	if n := strings.Count(logs.String(), "kafka connected"); n != 2 {
		t.Errorf("%d 'kafka connected' lines, want 2:\n%s", n, logs)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end")
	}
	if l.Connected() {
		t.Fatal("still connected after Run ended")
	}
	notConnected(t, l)
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// A cluster that is not there: the first failed attempt closes
// Attempted (not Up), is logged once as a warning, and retries are not
// logged one by one.
func TestLinkFirstAttemptFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there
	logs := &logBuffer{}
	l := NewLink(Config{BootstrapServers: []string{addr}, Timeout: time.Second}, slog.New(slog.NewTextHandler(logs, nil)),
		LinkOptions{MinBackoff: 5 * time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	// The test's Sarama waits a millisecond between its own metadata
	// retries (the product waits 250 ms), so ten attempts take
	// milliseconds, not seconds.
	l.dial = func(cfg Config) (*conn, error) {
		sc, err := cfg.SaramaConfig()
		if err != nil {
			return nil, err
		}
		sc.Metadata.Retry.Backoff = time.Millisecond
		return dialSarama(cfg.BootstrapServers, sc)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	select {
	case <-l.Attempted():
	case <-time.After(20 * time.Second):
		t.Fatal("first attempt never ended")
	}
	eventually(t, "several attempts", func() bool { return strings.Contains(logs.String(), "failures=10") })
	cancel()
	<-done
	select {
	case <-l.Up():
		t.Fatal("Up closed without a connection")
	default:
	}
	if n := strings.Count(logs.String(), "kafka connection failed"); n < 2 || n > 3 {
		t.Errorf("%d failure lines: want the first and every tenth:\n%s", n, logs)
	}
	notConnected(t, l)
}
