//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// The evidence tests (spec R7, issue 11) share one 3-node cluster,
// started by the first test that needs it: node 1's log dir is a small
// tmpfs (the guarded broker whose disk fills), nodes 2 and 3 have the
// machine's disk. allow.everyone.if.no.acl.found is false so the
// non-super user limited holds exactly the ACLs a test gives it; tests
// write as the super user admin. Retention checks and deletes run every
// second, so what the guard deletes leaves the disks within seconds.
var (
	clusterOnce sync.Once
	shared      *kafkatest.Cluster
	clusterErr  error
)

const node1Tmpfs = 96 << 20

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kafkatest:", err)
		}
	}
	os.Exit(code)
}

func evidenceCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		// Every node on its own tmpfs: node 1 small, to fill; nodes 2 and
		// 3 roomy, so that the relief tests' usage of them does not
		// depend on how full the machine's disk is (Kafka counts total
		// minus usable bytes, other files included).
		shared, clusterErr = kafkatest.StartCluster(kafkatest.ClusterOptions{
			DenyIfNoACL: true, Tmpfs: map[int32]string{1: "96m", 2: "1g", 3: "1g"},
			RetentionCheckMs: 1000, FileDeleteDelayMs: 1000,
			Props: []string{"log.segment.delete.delay.ms=1000"},
		})
		if clusterErr == nil {
			fmt.Fprintf(os.Stderr, "kafkatest: cluster of %d nodes up in %s\n", len(shared.Nodes), shared.StartDuration.Round(100*time.Millisecond))
		}
	})
	if clusterErr != nil {
		t.Fatalf("the evidence tests need a real cluster and it did not start: %v", clusterErr)
	}
	return shared
}

// guardOpts is the guard a test runs next to node 1.
type guardOpts struct {
	logDirs        []string // default: node 1's log dir
	user, password string   // default: the guard (a super user)
	capacity       uint64   // capacityBytes
	enforcer       enforcer.Config
	refresh        time.Duration // topicConfigs.refreshInterval (default 10s)
	clock          enforcer.MonotonicClock
	configFetcher  func(agent.ConfigFetcher) agent.ConfigFetcher // wraps the topic config fetcher
}

// runGuardOn runs `run` (serve, as the command wires it) against c until
// the test ends and returns its address and log.
func runGuardOn(t *testing.T, c *kafkatest.Cluster, o guardOpts) (string, *syncWriter) {
	t.Helper()
	addr, logs, _ := startGuardOn(t, c, o)
	return addr, logs
}

// startGuardOn is runGuardOn that also returns a function stopping the
// guard before the test ends.
func startGuardOn(t *testing.T, c *kafkatest.Cluster, o guardOpts) (string, *syncWriter, func()) {
	t.Helper()
	var cfg guardConfig
	cfg.LogDirs = o.logDirs
	if cfg.LogDirs == nil {
		cfg.LogDirs = []string{c.Node(1).LogDir}
	}
	cfg.CapacityBytes = o.capacity
	cfg.ReclassifyInterval = time.Second
	user, password := o.user, o.password
	if user == "" {
		user, password = kafkatest.GuardUser, kafkatest.GuardPassword
	}
	cfg.Kafka = kafkaadmin.Config{BootstrapServers: c.SASLAddrs(), SASL: kafkaadmin.SASLConfig{Mechanism: "PLAIN", Username: user, Password: password}}
	cfg.TopicConfigs.RefreshInterval = o.refresh
	if cfg.TopicConfigs.RefreshInterval == 0 {
		cfg.TopicConfigs.RefreshInterval = 10 * time.Second
	}
	cfg.Enforcer = o.enforcer
	if cfg.Enforcer.Interval == 0 {
		cfg.Enforcer.Interval = 500 * time.Millisecond
	}
	off := false
	cfg.Admission.Enabled = &off
	cfg.Web.ListenAddress = "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = cfg.WithDefaults()

	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncWriter{w: &bytes.Buffer{}}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), build{"test", ""},
			serveHooks{ready: func(a string) { addrc <- a }, clock: o.clock, configFetcher: o.configFetcher})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if t.Failed() {
				t.Logf("guard log:\n%s", logs.String())
			}
		})
	}
	t.Cleanup(stop)
	select {
	case a := <-addrc:
		return a, logs, stop
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen")
	}
	return "", nil, nil
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// metricSum sums the samples of a metric on /metrics whose labels include
// want; -1 when /metrics cannot be read.
func metricSum(addr, name string, want map[string]string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels := map[string]string{}
		if rest[0] == '{' {
			end := strings.LastIndex(rest, "}")
			for _, m := range labelRE.FindAllStringSubmatch(rest[:end], -1) {
				labels[m[1]] = m[2]
			}
			rest = rest[end+1:]
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil && match {
			sum += v
		}
	}
	return sum
}

// waitFor polls cond until it holds (60 s at most).
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// waitMetricValue waits until the metric's sum satisfies ok.
func waitMetricValue(t *testing.T, addr, name string, labels map[string]string, ok func(float64) bool) float64 {
	t.Helper()
	var v float64
	waitFor(t, name, func() error {
		if v = metricSum(addr, name, labels); !ok(v) {
			return fmt.Errorf("%s%v = %v", name, labels, v)
		}
		return nil
	})
	return v
}

func is(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// waitPasses waits for n more reconcile passes of the guard.
func waitPasses(t *testing.T, addr string, n int) {
	t.Helper()
	start := metricSum(addr, "kafka_disk_guard_reconciles_total", nil)
	waitMetricValue(t, addr, "kafka_disk_guard_reconciles_total", nil, func(v float64) bool { return v >= start+float64(n) })
}

// adminConfig is a Sarama config for the super user admin, writing to
// the partitions it names.
func adminConfig(c *kafkatest.Cluster) *sarama.Config {
	cfg := c.Nodes[0].UserConfig(kafkatest.AdminUser, kafkatest.AdminPassword)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Timeout = 30 * time.Second
	cfg.Net.ReadTimeout = 60 * time.Second
	return cfg
}

// produce writes n records of size bytes to one partition as admin, in
// batches of at most 8 KiB (a batch must fit the topics' small segments)
// or one record, stamped ts (CreateTime).
func produce(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, n, size int, ts time.Time) {
	t.Helper()
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := bytes.Repeat([]byte("k"), size)
	batch := max(1, 8192/size)
	for sent := 0; sent < n; {
		var msgs []*sarama.ProducerMessage
		for ; len(msgs) < batch && sent < n; sent++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.ByteEncoder(value), Timestamp: ts})
		}
		if err := p.SendMessages(msgs); err != nil {
			var pe sarama.ProducerErrors
			if errors.As(err, &pe) && len(pe) > 0 {
				err = pe[0].Err
			}
			t.Fatalf("produce to %s-%d: %v", topic, partition, err)
		}
	}
}

// logStart is the partition's log start offset, as its leader reports it.
func logStart(t *testing.T, c *kafkatest.Cluster, topic string, partition int32) int64 {
	t.Helper()
	cl, err := sarama.NewClient(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	off, err := cl.GetOffset(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("log start offset of %s-%d: %v", topic, partition, err)
	}
	return off
}

// dropTopic deletes a topic when the test ends and waits until no node
// holds any of its directories.
func dropTopic(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	t.Cleanup(func() {
		a, err := sarama.NewClusterAdmin(c.SASLAddrs(), adminConfig(c))
		if err != nil {
			t.Error(err)
			return
		}
		defer a.Close()
		if err := a.DeleteTopic(topic); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			t.Errorf("delete topic %s: %v", topic, err)
			return
		}
		kafkatest.Eventually(t, 60*time.Second, func() error {
			for _, n := range c.Nodes {
				entries, _ := os.ReadDir(n.LogDir)
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), topic+"-") {
						return fmt.Errorf("node %d still holds %s", n.NodeID, e.Name())
					}
				}
			}
			return nil
		})
	})
}

// duBytes is the disk bytes of everything under a log dir, or of one
// partition directory, as the agent's scan counts them.
func duBytes(dir string) int64 {
	s, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}
	if _, _, _, ok := agent.ParsePartitionDirName(filepath.Base(dir)); ok {
		ld := s.ScanLogDir(filepath.Dir(dir), nil)
		for _, p := range ld.Partitions {
			if p.Dir == filepath.Base(dir) {
				return p.DiskBytes
			}
		}
		return 0
	}
	return s.ScanLogDir(dir, nil).DiskBytes
}

// statfsRatio is the filesystem's used / total, as df counts.
func statfsRatio(path string) (float64, uint64, uint64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0, 0, 0
	}
	total, used := st.Blocks*uint64(st.Bsize), (st.Blocks-st.Bfree)*uint64(st.Bsize)
	return float64(used) / float64(total), used, total
}

// partitionOnDisk reads one partition directory of a node: its segments'
// first base offset and its disk bytes.
func partitionOnDisk(t *testing.T, logDir, topic string, partition int32) (first int64, diskBytes int64, segments int) {
	t.Helper()
	s, err := agent.NewScanner(agent.ScannerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ld := s.ScanLogDir(logDir, nil)
	for _, p := range ld.Partitions {
		if p.Topic == topic && p.Partition == partition && p.Kind == agent.KindLive && len(p.Segments) > 0 {
			return p.Segments[0].BaseOffset, p.DiskBytes - p.PendingDeleteBytes, len(p.Segments)
		}
	}
	return -1, 0, 0
}

// aclsOn lists the ACL bindings on a literal topic resource.
func aclsOn(t *testing.T, c *kafkatest.Cluster, topic string) []string {
	t.Helper()
	a, err := sarama.NewClusterAdmin(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	name := topic
	res, err := a.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternLiteral, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		for _, b := range r.Acls {
			out = append(out, fmt.Sprintf("%s %s %s", b.Principal, opName(b.Operation), permName(b.PermissionType)))
		}
	}
	return out
}

func opName(op sarama.AclOperation) string       { return strings.ToUpper(op.String()) }
func permName(p sarama.AclPermissionType) string { return strings.ToUpper(p.String()) }

// limitedACLs are the ALLOW bindings of rights.ACLs for the user limited:
// the rights the docs list, every feature, the default ownership topic.
func limitedACLs(without ...string) []*sarama.ResourceAcls {
	var out []*sarama.ResourceAcls
	for _, a := range rights.ACLs(enforcer.DefaultOwnershipTopic, rights.Features()...) {
		skip := false
		for _, w := range without {
			skip = skip || a.String() == w
		}
		if skip {
			continue
		}
		rt := sarama.AclResourceTopic
		if a.Resource == rights.Cluster {
			rt = sarama.AclResourceCluster
		}
		var op sarama.AclOperation
		if err := op.UnmarshalText([]byte(strings.ReplaceAll(string(a.Operation), "_", ""))); err != nil {
			panic(fmt.Sprintf("operation %s: %v", a.Operation, err))
		}
		out = append(out, &sarama.ResourceAcls{
			Resource: sarama.Resource{ResourceType: rt, ResourceName: a.Name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:" + kafkatest.LimitedUser, Host: "*", Operation: op, PermissionType: sarama.AclPermissionAllow}},
		})
	}
	return out
}

// revokeLimited removes every ACL of limited.
func revokeLimited(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	var all []string
	for _, a := range rights.ACLs(enforcer.DefaultOwnershipTopic, rights.Features()...) {
		all = append(all, a.String())
	}
	grantLimited(t, c, all...)
}

// grantLimited replaces the ACLs of limited with rights.ACLs minus
// without, and waits until the cluster answers with them.
func grantLimited(t *testing.T, c *kafkatest.Cluster, without ...string) {
	t.Helper()
	a, err := sarama.NewClusterAdmin(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	principal := "User:" + kafkatest.LimitedUser
	if _, err := a.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Principal: &principal, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}, false); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	want := limitedACLs(without...)
	if len(want) > 0 {
		if err := a.CreateACLs(want); err != nil {
			t.Fatalf("grant: %v", err)
		}
	}
	kafkatest.Eventually(t, 20*time.Second, func() error {
		res, err := a.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
			Principal: &principal, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
		if err != nil {
			return err
		}
		n := 0
		for _, r := range res {
			n += len(r.Acls)
		}
		if n != len(want) {
			return fmt.Errorf("%d ACLs of limited, want %d", n, len(want))
		}
		return nil
	})
}

// shiftClock is a wall clock that a test moves, over the real monotonic
// clock.
type shiftClock struct {
	start time.Time
	shift atomic.Int64
}

func newShiftClock() *shiftClock             { return &shiftClock{start: time.Now()} }
func (c *shiftClock) Now() time.Time         { return time.Now().Add(time.Duration(c.shift.Load())) }
func (c *shiftClock) Elapsed() time.Duration { return time.Since(c.start) }
func (c *shiftClock) jump(d time.Duration)   { c.shift.Add(int64(d)) }

// logsWith returns the guard's log lines whose msg starts with prefix.
func logsWith(t *testing.T, logs *syncWriter, prefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range logLines(t, logs.String()) {
		if m, _ := l["msg"].(string); strings.HasPrefix(m, prefix) {
			out = append(out, l)
		}
	}
	return out
}
