//go:build integration

// Package kafkatest starts a real single-node Apache Kafka broker (KRaft,
// StandardAuthorizer) for integration tests through scripts/kafka.sh, and
// offers the few client operations tests need: topics, producing, reading.
//
// A broker is meant to be shared by the tests of one package:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{}, &broker)) }
//
// or started per test with Start when a test needs its own settings (a small
// tmpfs, a short retention check interval). A broker that cannot start fails
// the run: integration tests never skip.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Guard's SASL/PLAIN credentials on the broker (a super user).
const (
	GuardUser     = "guard"
	GuardPassword = "guard-secret"
)

// Options choose the broker's settings.
type Options struct {
	// TmpfsSize puts the log dir on a tmpfs of that size ("256m").
	TmpfsSize string
	// RetentionCheckMs sets log.retention.check.interval.ms (0: Kafka's 300000).
	RetentionCheckMs int
	// FileDeleteDelayMs sets log.segment.delete.delay.ms, the broker default of file.delete.delay.ms (0: Kafka's 60000).
	FileDeleteDelayMs int
	// Props are extra server.properties lines ("key=value").
	Props []string
	// Classpath adds jars to the broker's classpath (plugins).
	Classpath []string
	// Tiered enables tiered storage (KIP-405): remote segments are kept
	// under RemoteDir by the test RemoteStorageManager (scripts/kafka.sh
	// --tiered), with Kafka's topic-based metadata manager.
	Tiered bool
	// ExtraLogDirs gives the broker that many more log dirs (JBOD):
	// log.dirs is LogDir then Broker.ExtraLogDirs (data-2, data-3, ...).
	ExtraLogDirs int
	// NoAuthorizer runs the broker without an authorizer
	// (scripts/kafka.sh --no-authorizer): ACL requests answer
	// SECURITY_DISABLED.
	NoAuthorizer bool
	// ReleaseVersion formats the storage at that release's
	// metadata.version ("4.2"; scripts/kafka.sh --release-version): an
	// older cluster. Empty: the jars' latest.
	ReleaseVersion string
}

// Broker is a running broker.
type Broker struct {
	Dir    string // work dir: server.properties, logs/, data/
	LogDir string // the broker's log.dirs
	// ExtraLogDirs are the broker's further log dirs (Options.ExtraLogDirs).
	ExtraLogDirs []string
	// RemoteDir holds the "remote" tier of a tiered broker (Options.Tiered).
	RemoteDir string
	Addr      string // PLAINTEXT listener: anonymous clients
	SASLAddr  string // SASL_PLAINTEXT listener: the guard (super user)
	NodeID    int32  // node.id: 1 for a single broker, 1..n in a Cluster
	script    string
	opts      Options
	cluster   *Cluster // set for a node of a Cluster
}

// RepoRoot finds the repository root (the directory holding go.mod) from
// the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start formats storage and starts a broker in a fresh directory, waiting
// until it answers.
func Start(opts Options) (*Broker, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kdg-broker-")
	if err != nil {
		return nil, err
	}
	port, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	b := &Broker{
		Dir:      dir,
		LogDir:   filepath.Join(dir, "data"),
		Addr:     fmt.Sprintf("127.0.0.1:%d", port),
		SASLAddr: fmt.Sprintf("127.0.0.1:%d", port+1),
		NodeID:   1,
		script:   filepath.Join(root, "scripts", "kafka.sh"),
		opts:     opts,
	}
	args := []string{"up", "--dir", dir, "--port", strconv.Itoa(port)}
	if opts.TmpfsSize != "" {
		args = append(args, "--tmpfs", opts.TmpfsSize)
	}
	if opts.RetentionCheckMs > 0 {
		args = append(args, "--retention-check-ms", strconv.Itoa(opts.RetentionCheckMs))
	}
	if opts.FileDeleteDelayMs > 0 {
		args = append(args, "--file-delete-delay-ms", strconv.Itoa(opts.FileDeleteDelayMs))
	}
	if opts.Tiered {
		args = append(args, "--tiered")
		b.RemoteDir = filepath.Join(dir, "remote")
	}
	if opts.NoAuthorizer {
		args = append(args, "--no-authorizer")
	}
	if opts.ReleaseVersion != "" {
		args = append(args, "--release-version", opts.ReleaseVersion)
	}
	for _, p := range opts.Props {
		args = append(args, "--prop", p)
	}
	if opts.ExtraLogDirs > 0 {
		dirs := []string{b.LogDir}
		for i := range opts.ExtraLogDirs {
			d := filepath.Join(dir, fmt.Sprintf("data-%d", i+2))
			b.ExtraLogDirs = append(b.ExtraLogDirs, d)
			dirs = append(dirs, d)
		}
		args = append(args, "--prop", "log.dirs="+strings.Join(dirs, ","))
	}
	cmd := exec.Command(b.script, args...)
	cmd.Env = os.Environ()
	if len(opts.Classpath) > 0 {
		cmd.Env = append(cmd.Env, "KDG_KAFKA_CLASSPATH="+strings.Join(opts.Classpath, ":"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start broker: %w\n%s", err, out)
	}
	return b, nil
}

// Stop stops the broker and removes its directory. A node of a Cluster is
// only stopped (see StopNode): its data stays for Start.
func (b *Broker) Stop() error {
	if b.cluster != nil {
		return b.StopNode()
	}
	out, err := exec.Command(b.script, "down", "--dir", b.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop broker: %w\n%s", err, out)
	}
	return os.RemoveAll(b.Dir)
}

// Running reports whether the broker process is alive and answers.
func (b *Broker) Running() bool {
	return exec.Command(b.script, "status", "--dir", b.Dir, "--port", b.port()).Run() == nil
}

func (b *Broker) port() string {
	_, p, _ := net.SplitHostPort(b.Addr)
	return p
}

// ServerLog returns the broker's server.log.
func (b *Broker) ServerLog() string {
	data, _ := os.ReadFile(filepath.Join(b.Dir, "logs", "server.log"))
	return string(data)
}

// Main starts one broker for a package's tests, runs them, stops it. It
// returns the exit code for os.Exit; a broker that cannot start is exit 1.
func Main(m *testing.M, opts Options, out **Broker) int {
	b, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest: the integration tests need a real broker and it did not start:", err)
		return 1
	}
	*out = b
	code := m.Run()
	if err := b.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest:", err)
	}
	return code
}

// ClientConfig is a Sarama config for an anonymous client on Addr.
func (b *Broker) ClientConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V4_0_0_0
	c.ClientID = "kdg-test"
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 0
	c.Metadata.Retry.Max = 5
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	return c
}

// GuardConfig is a Sarama config for the guard's super user on SASLAddr.
func (b *Broker) GuardConfig() *sarama.Config {
	c := b.ClientConfig()
	c.ClientID = "kafka-disk-guard-test"
	c.Net.SASL.Enable = true
	c.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	c.Net.SASL.User = GuardUser
	c.Net.SASL.Password = GuardPassword
	return c
}

// Admin returns a cluster admin as the guard, closed when the test ends.
func (b *Broker) Admin(t testing.TB) sarama.ClusterAdmin {
	t.Helper()
	a, err := sarama.NewClusterAdmin([]string{b.SASLAddr}, b.GuardConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// CreateTopic creates a topic with the given configs and waits until its
// partition directories exist on disk (in any of its log dirs).
func (b *Broker) CreateTopic(t testing.TB, name string, partitions int32, configs map[string]string) {
	t.Helper()
	entries := make(map[string]*string, len(configs))
	for k, v := range configs {
		entries[k] = &v
	}
	a := b.Admin(t)
	detail := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}
	if b.cluster != nil {
		detail = onNode(detail, b.NodeID) // in a cluster: every replica on this node
	}
	err := a.CreateTopic(name, detail, false)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	Eventually(t, 20*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			var err error
			for _, d := range append([]string{b.LogDir}, b.ExtraLogDirs...) {
				if _, err = os.Stat(filepath.Join(d, fmt.Sprintf("%s-%d", name, p))); err == nil {
					break
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Producer returns a synchronous Sarama producer (anonymous), closed at
// the end of the test.
func (b *Broker) Producer(t testing.TB) sarama.SyncProducer {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{b.Addr}, b.ClientConfig())
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Produce writes n records of valueSize bytes to one partition, each its
// own request, and returns the offset of the last.
func (b *Broker) Produce(t testing.TB, topic string, partition int32, n, valueSize int) int64 {
	t.Helper()
	p := b.Producer(t)
	var last int64
	value := make([]byte, valueSize)
	for i := range n {
		for j := range value {
			value[j] = byte('a' + (i+j)%26)
		}
		_, off, err := p.SendMessage(&sarama.ProducerMessage{
			Topic: topic, Partition: partition,
			Key:   sarama.StringEncoder(strconv.Itoa(i)),
			Value: sarama.ByteEncoder(append([]byte(nil), value...)),
		})
		if err != nil {
			t.Fatalf("produce %s-%d record %d: %v", topic, partition, i, err)
		}
		last = off
	}
	return last
}

// Fetch is what Consume reads.
type Fetch struct {
	Topic     string
	Partition int32
	Offset    int64 // the first offset, or sarama.OffsetOldest
	Records   int   // how many records to wait for
	Timeout   time.Duration
}

// Consume reads records from f.Offset until f.Records have arrived or
// f.Timeout passes (which fails the test), and returns their values.
func (b *Broker) Consume(t testing.TB, f Fetch) [][]byte {
	t.Helper()
	topic, partition, offset, n, timeout := f.Topic, f.Partition, f.Offset, f.Records, f.Timeout
	c, err := sarama.NewConsumer([]string{b.Addr}, b.ClientConfig())
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("consume %s-%d: %v", topic, partition, err)
	}
	defer pc.Close()
	var got [][]byte
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, m.Value)
		case err := <-pc.Errors():
			t.Fatalf("consume %s-%d: %v", topic, partition, err)
		case <-timer.C:
			t.Fatalf("consume %s-%d: %d of %d records before the deadline", topic, partition, len(got), n)
		}
	}
	return got
}

// Eventually polls f until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Context is a context for a test with a deadline.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// freePorts finds a base port with n consecutive free ports on 127.0.0.1,
// below Linux's ephemeral range (32768-60999): a port found free there
// could be taken by any client's outgoing connection before the broker
// binds it (a broker failed to start on "Address already in use").
func freePorts(n int) (int, error) {
	for range 200 {
		base := 12000 + rand.IntN(32768-12000-n)
		ok := true
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free port range on 127.0.0.1")
}
