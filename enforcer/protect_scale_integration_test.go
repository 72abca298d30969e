//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// BenchmarkProtectTenThousandTopics measures write protection of one log
// dir of 10,000 topics on the shared broker (one node, a real
// StandardAuthorizer), with the guard running: from the snapshot that
// crosses the protect band to the first refused produce on the
// fastest-growing topic, and to the last topic protected (a refused
// produce on the topic protected last, and every topic's bindings read
// back). Five topics grow before the crossing, the fastest named last by
// name. Two shapes: absence (the broker's
// allow.everyone.if.no.acl.found=true: five ALLOW bindings a topic,
// 50,000 in all) and deny (the guard told false: one DENY a topic). A
// benchmark, not a test: creating the topics takes minutes, so
// scripts/test.sh does not run it:
//
//	go test -tags integration -p 1 -run '^$' -bench ProtectTenThousandTopics -benchtime 1x ./enforcer/
//
// KDG_BENCH_TOPICS changes the number of topics (at most 10,000: the
// clean-up's filters), KDG_BENCH_SHAPES the shapes (deny,absence).
func BenchmarkProtectTenThousandTopics(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("KDG_BENCH_TOPICS")); err == nil && v >= 10 {
		n = v
	}
	topics := make([]string, n)
	set := map[string]bool{}
	for i := range topics {
		topics[i] = fmt.Sprintf("scale.orders-service.events-v1-%05d", i)
		set[topics[i]] = true
	}
	start := time.Now()
	createTopicsOnBroker(b, shared, topics)
	b.Logf("created %d topics in %s", n, time.Since(start).Round(time.Millisecond))
	b.Cleanup(func() { deleteTopicsOnBroker(b, shared, topics) })

	// The growing topics, fastest first: spread over the names, the
	// fastest last in name order.
	hot := []string{topics[n-1], topics[n/2], topics[n/4], topics[n/8], topics[1]}
	capacity := &fixedCapacity{v: 1 << 40}
	scan := &scantest.Source{LogDir: shared.LogDir, Topics: set, Capacity: capacity.get}
	before := logSizes(scan.ScanOnce()) // now: the scanner shares unchanged data with the next scan
	t0 := time.Now()
	for i, tp := range hot {
		shared.Produce(b, tp, 0, (len(hot)-i)*100, 1000)
	}
	after := scan.ScanOnce()
	grown := withRates(before, after, time.Since(t0))
	used := after.LogDirs[0].Usage.UsedBytes
	calm := atUsage(grown, shared.LogDir, uint64(float64(used)/0.50))
	full := atUsage(grown, shared.LogDir, uint64(float64(used)/0.95))

	shapes := map[string]string{
		// Told false, the guard denies WRITE to User:* (one binding a
		// topic): its shape on a broker with Kafka's default.
		"deny": "false",
		// The guard's shape on a broker with allow.everyone.if.no.acl.found=true:
		// five ALLOW bindings a topic.
		"absence": "true",
	}
	names := []string{"deny", "absence"}
	if v := os.Getenv("KDG_BENCH_SHAPES"); v != "" {
		names = strings.Split(v, ",")
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			benchCrossing(b, name, shapes[name], topics, hot, calm, full)
		})
	}
}

// benchCrossing runs a guard at calm, crosses to full and measures.
func benchCrossing(b *testing.B, shape, allowEveryone string, topics, hot []string, calm, full *agent.Snapshot) {
	n := len(topics)
	set := map[string]bool{}
	for _, tp := range topics {
		set[tp] = true
	}
	own := "__kdg_bench_scale_" + shape
	src := &crossingSource{snap: calm}
	cfg := enforcer.Config{Enabled: true, Interval: time.Second, Protection: enforcer.ProtectionConfig{
		AllowEveryoneIfNoACLFound: allowEveryone, RecordTimeout: 5 * time.Second}}
	g := startGuard(b, shared, guardSpec{cfg: cfg, src: src, ownTopic: own})
	g.waitReconciles(b, 2)

	// Probes: anonymous producers (allowed until protected) on the
	// fastest topic and on the topic the order protects last.
	last := topics[n-2] // the last of the topics that do not grow, by name
	probes := map[string]*probe{}
	for _, tp := range []string{hot[0], last} {
		probes[tp] = startProbe(b, tp)
	}
	time.Sleep(500 * time.Millisecond) // the probes are producing
	for tp, p := range probes {
		if p.refusedAt() != nil {
			b.Fatalf("%s refused before the crossing: %v", tp, p.err)
		}
	}

	b.ResetTimer()
	crossed := src.publish(full)
	b.Logf("crossed at %s", crossed.UTC().Format(time.RFC3339Nano))
	kafkatest.Eventually(b, 600*time.Second, func() error {
		for tp, p := range probes {
			if p.refusedAt() == nil {
				return fmt.Errorf("%s not refused yet", tp)
			}
		}
		return nil
	})
	var allBack time.Duration
	kafkatest.Eventually(b, 120*time.Second, func() error {
		acls, err := g.admin.TopicACLs(context.Background())
		if err != nil {
			return err
		}
		protected := map[string]bool{}
		for _, a := range acls {
			if set[a.Topic] {
				protected[a.Topic] = true
			}
		}
		if len(protected) < n {
			return fmt.Errorf("%d of %d topics protected", len(protected), n)
		}
		allBack = time.Since(crossed)
		return nil
	})
	b.StopTimer()
	first := probes[hot[0]].refusedAt().Sub(crossed)
	lastAt := probes[last].refusedAt().Sub(crossed)
	b.ReportMetric(first.Seconds(), "s-first-refusal")
	b.ReportMetric(lastAt.Seconds(), "s-last-refusal")
	b.ReportMetric(allBack.Seconds(), "s-all-read-back")
	b.Logf("R8.4/%d topics: crossing -> first refused produce on the fastest topic %s; -> refused produce on the topic protected last %s; every topic's bindings read back after %s",
		n, first.Round(time.Millisecond), lastAt.Round(time.Millisecond), allBack.Round(time.Millisecond))
	for _, l := range g.logs.lines("reconcile pass", "write protection created") {
		b.Logf("%v", l)
	}
	g.stop()
	// The bindings go in one DeleteAcls filter an operation: the guard's
	// own release names one filter a binding, and Kafka's controller
	// matches each filter against every ACL (50,000 x 50,000 here); a
	// filter may remove at most 10,000 ACLs.
	start := time.Now()
	admin := shared.Admin(b)
	for _, op := range []sarama.AclOperation{sarama.AclOperationWrite, sarama.AclOperationRead, sarama.AclOperationAlter,
		sarama.AclOperationAlterConfigs, sarama.AclOperationCreate, sarama.AclOperationDelete} {
		if _, err := admin.DeleteACL(sarama.AclFilter{Version: 1, ResourceType: sarama.AclResourceTopic,
			ResourcePatternTypeFilter: sarama.AclPatternLiteral, Principal: ptr(enforcer.AnyPrincipal), Host: ptr(enforcer.AnyHost),
			Operation: op, PermissionType: sarama.AclPermissionAny}, false); err != nil {
			b.Fatalf("delete the bindings: %v", err)
		}
	}
	b.Logf("bindings deleted in %s", time.Since(start).Round(time.Millisecond))
}

// logSizes is each partition's .log bytes.
func logSizes(s *agent.Snapshot) map[agent.TopicPartition]int64 {
	size := map[agent.TopicPartition]int64{}
	for _, p := range s.LogDirs[0].Partitions {
		size[agent.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = logBytes(*p)
	}
	return size
}

// withRates returns after with each partition's appended bytes and write
// rate since the sizes before (what the agent's loop observes of a
// growing partition).
func withRates(size map[agent.TopicPartition]int64, after *agent.Snapshot, dt time.Duration) *agent.Snapshot {
	out := *after
	ld := after.LogDirs[0]
	ld.Partitions = slices.Clone(ld.Partitions)
	for i := range ld.Partitions {
		p := *ld.Partitions[i] // shared with the agent's snapshot
		if d := logBytes(p) - size[agent.TopicPartition{Topic: p.Topic, Partition: p.Partition}]; d > 0 {
			p.AppendedBytes = uint64(d)
			p.WriteRateBytesPerSecond = float64(d) / dt.Seconds()
		}
		ld.Partitions[i] = &p
	}
	out.LogDirs = []agent.LogDir{ld}
	return &out
}

// logBytes is the partition's .log bytes (as written: the scan's tail read).
func logBytes(p agent.Partition) int64 {
	var n int64
	for i, sg := range p.Segments {
		if i == len(p.Segments)-1 && p.ActiveWrittenBytes >= 0 {
			n += p.ActiveWrittenBytes
			continue
		}
		n += sg.LogBytes
	}
	return n
}

// atUsage is s with the log dir's usage against capacity.
func atUsage(s *agent.Snapshot, logDir string, capacity uint64) *agent.Snapshot {
	out := *s
	ld := s.LogDirs[0]
	ld.Usage, _ = agent.DiskUsage(logDir, capacity, int64(s.LogDirs[0].Usage.UsedBytes))
	out.LogDirs = []agent.LogDir{ld}
	return &out
}

// crossingSource publishes the snapshot a benchmark sets, stamped now, and
// again every second (it stays fresh).
type crossingSource struct {
	mu      sync.Mutex
	snap    *agent.Snapshot
	updated chan struct{}
	once    sync.Once
}

func (s *crossingSource) init() { s.once.Do(func() { s.updated = make(chan struct{}, 1) }) }

func (s *crossingSource) Snapshot() *agent.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

func (s *crossingSource) Updated() <-chan struct{} { s.init(); return s.updated }

// publish makes snap the current snapshot and returns the time it was
// published.
func (s *crossingSource) publish(snap *agent.Snapshot) time.Time {
	s.init()
	cp := *snap
	cp.Time = time.Now()
	s.mu.Lock()
	s.snap = &cp
	s.mu.Unlock()
	select {
	case s.updated <- struct{}{}:
	default:
	}
	return cp.Time
}

func (s *crossingSource) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.publish(s.Snapshot())
		}
	}
}

// probe produces to a topic as an anonymous client, one record at a time,
// until it is refused.
type probe struct {
	mu  sync.Mutex
	at  *time.Time
	err error
}

func (p *probe) refusedAt() *time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at
}

func startProbe(b testing.TB, topic string) *probe {
	cfg := shared.ClientConfig()
	cfg.Producer.Retry.Max = 0
	prod, err := sarama.NewSyncProducer([]string{shared.Addr}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := &probe{}
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("probe")})
			if refused(err) {
				now := time.Now()
				p.mu.Lock()
				p.at, p.err = &now, err
				p.mu.Unlock()
				return
			}
			if err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	b.Cleanup(func() { close(stop); <-done; prod.Close() })
	return p
}

// createTopicsOnBroker creates topics of one partition on the shared
// broker, 500 a CreateTopics request, and waits for their directories.
func createTopicsOnBroker(b testing.TB, br *kafkatest.Broker, topics []string) {
	b.Helper()
	ctrl, err := br.Admin(b).Controller()
	if err != nil {
		b.Fatal(err)
	}
	for start := 0; start < len(topics); start += 500 {
		req := &sarama.CreateTopicsRequest{Version: 3, Timeout: 60 * time.Second, TopicDetails: map[string]*sarama.TopicDetail{}}
		for _, tp := range topics[start:min(start+500, len(topics))] {
			req.TopicDetails[tp] = &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}
		}
		rsp, err := ctrl.CreateTopics(req)
		if err != nil {
			b.Fatal(err)
		}
		for tp, e := range rsp.TopicErrors {
			if e != nil && !errors.Is(e.Err, sarama.ErrNoError) && !errors.Is(e.Err, sarama.ErrTopicAlreadyExists) {
				b.Fatalf("create %s: %v", tp, e.Err)
			}
		}
	}
	kafkatest.Eventually(b, 30*time.Minute, func() error {
		missing := 0
		for _, tp := range topics {
			if !dirExists(filepath.Join(br.LogDir, tp+"-0")) {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d partition directories missing", missing)
		}
		return nil
	})
}

func deleteTopicsOnBroker(b testing.TB, br *kafkatest.Broker, topics []string) {
	ctrl, err := br.Admin(b).Controller()
	if err != nil {
		b.Logf("delete topics: %v", err)
		return
	}
	for start := 0; start < len(topics); start += 500 {
		req := &sarama.DeleteTopicsRequest{Version: 3, Timeout: 60 * time.Second, Topics: topics[start:min(start+500, len(topics))]}
		if _, err := ctrl.DeleteTopics(req); err != nil {
			b.Logf("delete topics: %v", err)
			return
		}
	}
}
