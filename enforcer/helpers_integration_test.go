//go:build integration

package enforcer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

var shared *kafkatest.Broker

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	code := kafkatest.Main(m, kafkatest.Options{RetentionCheckMs: 1000, FileDeleteDelayMs: 1000,
		// file.delete.delay.ms is the topic-level name; the broker reads log.segment.delete.delay.ms.
		Props: []string{"log.segment.delete.delay.ms=1000"}}, &shared)
	stopCluster()
	stopTiered()
	stopJBOD()
	os.Exit(code)
}

// The 3-node cluster of the protection tests (protect_cluster_integration_test.go),
// started by the first test that asks for it and shared by the rest:
// allow.everyone.if.no.acl.found=false (Kafka's default), so anonymous
// clients and the non-super user limited hold exactly the ACLs a test
// gives them.
var (
	clusterMu  sync.Mutex
	cluster    *kafkatest.Cluster
	clusterErr error
)

func sharedCluster(t testing.TB) *kafkatest.Cluster {
	t.Helper()
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if cluster == nil && clusterErr == nil {
		cluster, clusterErr = kafkatest.StartCluster(kafkatest.ClusterOptions{DenyIfNoACL: true})
		if clusterErr == nil {
			t.Logf("cluster of 3 nodes up in %s", cluster.StartDuration.Round(100*time.Millisecond))
		}
	}
	if clusterErr != nil {
		t.Fatalf("the protection tests need a real 3-node cluster and it did not start: %v", clusterErr)
	}
	return cluster
}

func stopCluster() {
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kafkatest:", err)
		}
		cluster = nil
	}
}

// logBuf collects JSON log lines.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the decoded lines whose msg is one of msgs.
func (l *logBuf) lines(msgs ...string) []map[string]any {
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.mu.Unlock()
	return parseLines(data, msgs...)
}

func parseLines(data []byte, msgs ...string) []map[string]any {
	var out []map[string]any
	for _, line := range bytes.Split(data, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		for _, msg := range msgs {
			if m["msg"] == msg {
				out = append(out, m)
			}
		}
	}
	return out
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// source is a snapshot source the test runs: the test-only scanner or the
// agent's live watcher.
type source interface {
	enforcer.SnapshotSource
	Run(ctx context.Context) error
}

// guard is an enforcer running in the test process.
type guard struct {
	e     *enforcer.Enforcer
	reg   *prometheus.Registry
	logs  *logBuf
	src   source
	admin *kafkaadmin.Enforce
	stop  func()
}

// purgeMechanics lifts the purge caps (spec R7.3) for the tests of the
// bands' mechanics (order, targets, fractions, protect/lift cycles): they
// purge more in minutes than the conservative default caps allow in a day.
var purgeMechanics = enforcer.PurgeConfig{MaxPercentPerPass: 100, MaxPercentPerHour: 100, MaxPercentPerDay: 100}

func newAdmin(t testing.TB, b *kafkatest.Broker, ownTopic string) *kafkaadmin.Enforce {
	t.Helper()
	return newAdminOn(t, []string{b.SASLAddr}, b.GuardConfig(), ownTopic)
}

// newAdminOn connects the guard's admin API to addrs.
func newAdminOn(t testing.TB, addrs []string, cfg *sarama.Config, ownTopic string) *kafkaadmin.Enforce {
	t.Helper()
	a, err := kafkaadmin.NewEnforce(addrs, cfg, ownTopic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// newEvidence reads the evidence (spec R7) of the brokers at addrs as the
// guard.
func newEvidence(t testing.TB, addrs []string, cfg *sarama.Config) *kafkaadmin.Evidence {
	t.Helper()
	c, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return kafkaadmin.NewEvidence(c)
}

// guardSpec is the enforcer a test runs.
type guardSpec struct {
	cfg      enforcer.Config
	src      source
	clock    enforcer.Clock // nil: realClock{}
	ownTopic string         // the ownership topic
	echo     bool           // also log to stderr
	// addrs: the SASL addresses to connect to (default: the broker's).
	addrs []string
	// wrap: the admin API the enforcer uses, built on the guard's (nil:
	// the guard's itself); g.admin stays the guard's.
	wrap func(*kafkaadmin.Enforce) enforcer.Admin
	// instance: the agent instance's name (default: the host name).
	instance string
}

// startGuard runs s.src and an enforcer until the test ends.
func startGuard(t testing.TB, b *kafkatest.Broker, s guardSpec) *guard {
	t.Helper()
	g := newGuard(t, b, s)
	g.start(t)
	return g
}

// newGuard builds the enforcer without running it (tests that drive
// Reconcile themselves).
func newGuard(t testing.TB, b *kafkatest.Broker, s guardSpec) *guard {
	t.Helper()
	src, clock := s.src, s.clock
	if clock == nil {
		clock = realClock{}
	}
	addrs := s.addrs
	if addrs == nil {
		addrs = []string{b.SASLAddr}
	}
	g := &guard{reg: prometheus.NewRegistry(), logs: &logBuf{}, src: src, admin: newAdminOn(t, addrs, b.GuardConfig(), s.ownTopic)}
	created := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			g.logs.mu.Lock()
			defer g.logs.mu.Unlock()
			t.Logf("the log of the agent %q on node %d created at %s:\n%s", s.instance, b.NodeID, created.Format("15:04:05.000"), g.logs.buf.String())
		}
	})
	var w io.Writer = g.logs
	if s.echo {
		w = io.MultiWriter(g.logs, os.Stderr)
	}
	logger := slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var admin enforcer.Admin = g.admin
	if s.wrap != nil {
		admin = s.wrap(g.admin)
	}
	e, err := enforcer.New(s.cfg, logger, g.reg, enforcer.Deps{Snapshots: src, Admin: admin, Clock: clock, Evidence: newEvidence(t, addrs, b.GuardConfig()),
		Instance: s.instance})
	if err != nil {
		t.Fatal(err)
	}
	g.e = e
	g.stop = func() {}
	return g
}

// start runs the guard's source and enforcer until the test ends (or stop).
func (g *guard) start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); g.src.Run(ctx) }()
	go func() { defer wg.Done(); g.e.Run(ctx) }()
	var once sync.Once
	g.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(g.stop)
}

// metric sums the samples of a metric family whose labels include want.
func metric(reg *prometheus.Registry, name string, want map[string]string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

// waitReconciles waits for n more reconcile passes.
func (g *guard) waitReconciles(t testing.TB, n int) {
	t.Helper()
	start := metric(g.reg, "kafka_disk_guard_reconciles_total", nil)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if got := metric(g.reg, "kafka_disk_guard_reconciles_total", nil); got < start+float64(n) {
			return fmt.Errorf("%v reconciles of %d", got-start, n)
		}
		return nil
	})
}

// offsets returns the broker's log start offset and high watermark.
func offsets(t testing.TB, a *kafkaadmin.Enforce, topic string, parts int32) map[int32]enforcer.Offsets {
	t.Helper()
	var tps []enforcer.TopicPartition
	for p := range parts {
		tps = append(tps, enforcer.TopicPartition{Topic: topic, Partition: p})
	}
	got, err := a.Offsets(context.Background(), tps)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]enforcer.Offsets{}
	for tp, o := range got {
		out[tp.Partition] = o
	}
	return out
}

// topicACLs lists the ACLs on one topic (literal).
func topicACLs(t testing.TB, a *kafkaadmin.Enforce, topic string) []enforcer.ACL {
	t.Helper()
	all, err := a.TopicACLs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []enforcer.ACL
	for _, x := range all {
		if x.Topic == topic {
			out = append(out, x)
		}
	}
	return out
}

func hasACL(acls []enforcer.ACL, principal, op, perm string) bool {
	for _, a := range acls {
		if a.Principal == principal && a.Operation == op && a.Permission == perm {
			return true
		}
	}
	return false
}

// load is what produceRounds writes.
type load struct {
	partitions    int32
	rounds        int
	records, size int // records per partition and round, of size bytes
}

// produceRounds writes rounds x records of size bytes to each partition
// in turn, so segment timestamps interleave across partitions.
func produceRounds(t testing.TB, b *kafkatest.Broker, topic string, l load) {
	t.Helper()
	p := b.Producer(t)
	value := bytes.Repeat([]byte("v"), l.size)
	for range l.rounds {
		for part := range l.partitions {
			msgs := make([]*sarama.ProducerMessage, l.records)
			for i := range msgs {
				msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.ByteEncoder(value)}
			}
			// One record per request keeps segments small and many.
			for _, m := range msgs {
				if _, _, err := p.SendMessage(m); err != nil {
					t.Fatalf("produce %s-%d: %v", topic, part, err)
				}
			}
		}
	}
}

// fixedCapacity is a configured capacity the test moves.
type fixedCapacity struct {
	mu sync.Mutex
	v  uint64
}

func (c *fixedCapacity) get() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

func (c *fixedCapacity) set(v uint64) {
	c.mu.Lock()
	c.v = v
	c.mu.Unlock()
}

// usedBytes is what a Source with a configured capacity counts as used.
func usedBytes(src *scantest.Source) uint64 {
	return src.ScanOnce().LogDirs[0].Usage.UsedBytes
}

func ptr[T any](v T) *T { return &v }

// ---- child process: an agent that can be killed with SIGKILL ----

const childEnv = "KDG_ENFORCER_CHILD"

// childMain runs an enforcer against the broker named in the environment,
// with a configured capacity read from a file at every scan, until killed.
func childMain() int {
	getenv := os.Getenv
	id, _ := strconv.Atoi(getenv("KDG_CHILD_BROKER_ID"))
	capFile := getenv("KDG_CHILD_CAPACITY_FILE")
	topics := map[string]bool{}
	for _, t := range strings.Split(getenv("KDG_CHILD_TOPICS"), ",") {
		topics[t] = true
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = "kafka-disk-guard-child"
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	cfg.Net.SASL.User = kafkatest.GuardUser
	cfg.Net.SASL.Password = kafkatest.GuardPassword
	admin, err := kafkaadmin.NewEnforce(strings.Split(getenv("KDG_CHILD_SASL"), ","), cfg, getenv("KDG_CHILD_OWNERSHIP_TOPIC"))
	if err != nil {
		logger.Error("admin", "err", err)
		return 1
	}
	client, err := sarama.NewClient(strings.Split(getenv("KDG_CHILD_SASL"), ","), cfg)
	if err != nil {
		logger.Error("client", "err", err)
		return 1
	}
	defer client.Close()
	src := &scantest.Source{LogDir: getenv("KDG_CHILD_LOG_DIR"), Topics: topics, ScanEvery: 100 * time.Millisecond,
		Capacity: func() uint64 {
			data, _ := os.ReadFile(capFile)
			v, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
			return v
		}}
	lease, _ := time.ParseDuration(getenv("KDG_CHILD_LEASE"))
	e, err := enforcer.New(enforcer.Config{Enabled: true, BrokerID: ptr(int32(id)), Interval: 200 * time.Millisecond,
		Protection: enforcer.ProtectionConfig{LeaseDuration: lease}},
		logger, prometheus.NewRegistry(), enforcer.Deps{Snapshots: src, Admin: admin, Clock: realClock{}, Evidence: kafkaadmin.NewEvidence(client)})
	if err != nil {
		logger.Error("enforcer", "err", err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	go src.Run(ctx)
	if err := e.Run(ctx); err != nil {
		return 1
	}
	return 0
}

// child is an agent process.
type child struct {
	proc *os.Process
	logs *logBuf
	done chan struct{}
}

// childSpec is the agent process a test runs.
type childSpec struct {
	brokerID     int
	capacityFile string // holds the log dir's capacity in bytes
	topics       string // comma-separated topics it guards
	ownTopic     string // the ownership topic
	addrs        []string
	lease        time.Duration // 0: the default
}

func startChild(t *testing.T, b *kafkatest.Broker, s childSpec) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{logs: &logBuf{}, done: make(chan struct{})}
	if s.addrs == nil {
		s.addrs = []string{b.SASLAddr}
	}
	attr := &os.ProcAttr{Env: append(os.Environ(),
		childEnv+"=1",
		"KDG_CHILD_BROKER_ID="+strconv.Itoa(s.brokerID),
		"KDG_CHILD_CAPACITY_FILE="+s.capacityFile,
		"KDG_CHILD_TOPICS="+s.topics,
		"KDG_CHILD_SASL="+strings.Join(s.addrs, ","),
		"KDG_CHILD_LEASE="+s.lease.String(),
		"KDG_CHILD_LOG_DIR="+b.LogDir,
		"KDG_CHILD_OWNERSHIP_TOPIC="+s.ownTopic,
	)}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	attr.Files = []*os.File{nil, w, w}
	proc, err := os.StartProcess(exe, []string{exe, "-test.run=^$"}, attr)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	c.proc = proc
	go func() {
		io.Copy(c.logs, r)
		r.Close()
	}()
	go func() { proc.Wait(); close(c.done) }()
	t.Cleanup(func() { c.kill(t) })
	return c
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill(t *testing.T) {
	if err := c.proc.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Logf("kill child: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Error("child did not die")
	}
}

func writeCapacity(t *testing.T, path string, v uint64) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(v, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// classifyAllClosed marks every closed segment of the named topics
// eligible by time (standing in for the agent's classification).
func classifyAllClosed(topics ...string) func(string, []agent.Segment) {
	return func(topic string, segs []agent.Segment) {
		for _, t := range topics {
			if t == topic {
				for i := range segs {
					segs[i].State = agent.StateEligible
					segs[i].Reason = agent.ReasonRetentionTime
					segs[i].ExpiredBytes = segs[i].LogBytes
				}
			}
		}
	}
}
