//go:build integration

package reserve_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

const gib = int64(1) << 30

// gate lets the test start the guard's HTTP server before the broker (the
// broker needs its URL) and make the guard answer 503 on purpose.
type gate struct {
	mu   sync.Mutex
	h    http.Handler
	down bool
}

func (g *gate) set(h http.Handler, down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.h, g.down = h, down
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	h, down := g.h, g.down
	g.mu.Unlock()
	if down || h == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"guard made unreachable by the test"}`))
		return
	}
	h.ServeHTTP(w, r)
}

// pluginBuild builds the CreateTopicPolicy jar with Maven once per test run.
var pluginBuild = sync.OnceValues(func() (string, error) {
	root, err := kafkatest.RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "build-plugin.sh")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build plugin: %w\n%s", err, out)
	}
	jar := filepath.Join(root, "plugin", "target", "kafka-disk-guard-policy.jar")
	_, err = os.Stat(jar)
	return jar, err
})

func buildPlugin(t *testing.T) string {
	t.Helper()
	jar, err := pluginBuild()
	if err != nil {
		t.Fatal(err)
	}
	return jar
}

func buildCLI(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kafka-disk-guard")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kafka-disk-guard")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build cli: %v\n%s", err, out)
	}
	return bin
}

// seed example 1: 1 GiB retention, 512 MiB segments: 1.56 GiB per partition.
var seedConfigs = map[string]string{"retention.bytes": "1073741824", "segment.bytes": "536870912"}

const perPartition = gib + 512<<20 + 2*10<<20*3

func topicDetail(partitions int32) *sarama.TopicDetail {
	entries := map[string]*string{}
	for k, v := range seedConfigs {
		entries[k] = &v
	}
	return &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}
}

// R5.4 end to end: a real Kafka 4.4 broker loads the plugin, which asks the
// guard's HTTP handler (served here on loopback) at every CreateTopics.
func TestAdmissionOnRealBroker(t *testing.T) {
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	jar := buildPlugin(t)
	cli := buildCLI(t, root)

	// Each broker "has" 10 GiB of configured storage; the limit is 90%.
	cfg := reserve.Config{BrokerStorageBytes: 10 * gib}
	g := &gate{}
	mux := http.NewServeMux()
	mux.Handle("/api/v1/reserve/check", g)
	guard := httptest.NewServer(mux)
	t.Cleanup(guard.Close)

	broker, err := kafkatest.Start(kafkatest.Options{
		Classpath: []string{jar},
		Props: []string{
			"create.topic.policy.class.name=io.kafkadiskguard.policy.ReservedSpacePolicy",
			"kafka.disk.guard.url=" + guard.URL + "/api/v1/reserve/check",
			"kafka.disk.guard.timeout.ms=5000",
			"kafka.disk.guard.on.unreachable=refuse",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server.log tail:\n%s", tail(broker.ServerLog(), 60))
		}
		if err := broker.Stop(); err != nil {
			t.Error(err)
		}
	})
	// The guard has its own client: Kafka answers one request per
	// connection at a time, and the policy call holds the client's
	// CreateTopics open until the guard has read the cluster.
	admin := broker.Admin(t)
	reader := kafkaadmin.NewClusterReader(broker.Admin(t))
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	model, err := reserve.NewModel(cfg, logger, reg, reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	h, err := reserve.NewHandler(cfg, logger, reg, model)
	if err != nil {
		t.Fatal(err)
	}
	g.set(h, false)

	if !strings.Contains(broker.ServerLog(), "kafka-disk-guard reserved-space policy asks") {
		t.Fatalf("the broker did not load the policy")
	}

	t.Run("R5.3 DescribeLogDirs v4 reports the log dir's volume size", func(t *testing.T) {
		info, err := reader.ReadCluster(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Brokers) != 1 || len(info.Brokers[0].LogDirs) != 1 {
			t.Fatalf("brokers %+v", info.Brokers)
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(broker.LogDir, &fs); err != nil {
			t.Fatal(err)
		}
		want := int64(fs.Blocks) * fs.Frsize
		if got := info.Brokers[0].LogDirs[0].TotalBytes; got != want {
			t.Fatalf("total bytes = %d, statfs says %d", got, want)
		}
		if info.BrokerConfig["log.segment.bytes"] == "" {
			t.Fatalf("broker config lacks log.segment.bytes: %v", info.BrokerConfig)
		}
	})

	t.Run("R5.4 a topic that fits is created", func(t *testing.T) {
		if err := admin.CreateTopic("fits", topicDetail(2), false); err != nil {
			t.Fatalf("create: %v", err)
		}
		kafkatest.Eventually(t, 20*time.Second, func() error {
			st := state(t, reader, cfg)
			if got := st.Topics["fits"].ReservedBytes; got != 2*perPartition {
				return fmt.Errorf("fits reserves %d, want %d", got, 2*perPartition)
			}
			return nil
		})
		// Until its next read the model counts "fits" as a pending
		// reservation; read now so later checks know the topic itself.
		if err := model.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	})

	// 2 partitions (3.12 GiB) exist; 4 more would make 9.35 GiB of 10 GiB.
	t.Run("R5.4 a topic past the limit gets POLICY_VIOLATION at a Sarama client", func(t *testing.T) {
		for _, validateOnly := range []bool{true, false} {
			err := admin.CreateTopic("too-big", topicDetail(4), validateOnly)
			if !errors.Is(err, sarama.ErrPolicyViolation) {
				t.Fatalf("validateOnly=%v: err = %v, want POLICY_VIOLATION", validateOnly, err)
			}
			for _, want := range []string{"reserved storage limit of 90% exceeded", "cluster would be at 93.5%",
				"current 3.12 GiB = 31.2%", "requested 6.23 GiB", "create topic too-big"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err.Error(), want)
				}
			}
		}
		assertNoTopic(t, admin, "too-big")
	})

	t.Run("R5.4 a manual replica assignment past the limit is refused too", func(t *testing.T) {
		d := topicDetail(-1)
		d.ReplicationFactor = -1
		d.ReplicaAssignment = map[int32][]int32{0: {1}, 1: {1}, 2: {1}, 3: {1}}
		err := admin.CreateTopic("too-big-assigned", d, false)
		if !errors.Is(err, sarama.ErrPolicyViolation) {
			t.Fatalf("err = %v, want POLICY_VIOLATION", err)
		}
		for _, want := range []string{"broker 1 would be at 93.5%", "create topic too-big-assigned: 4 partition(s) x 1 replica(s)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err.Error(), want)
			}
		}
		assertNoTopic(t, admin, "too-big-assigned")
	})

	t.Run("R5.4 a topic past the limit is refused at Kafka's TopicCommand", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(root, "scripts", "kafka.sh"), "tool", "org.apache.kafka.tools.TopicCommand",
			"--bootstrap-server", broker.Addr, "--create", "--topic", "too-big", "--partitions", "4", "--replication-factor", "1",
			"--config", "retention.bytes=1073741824", "--config", "segment.bytes=536870912")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("TopicCommand succeeded:\n%s", out)
		}
		for _, want := range []string{"Error while executing topic command", "reserved storage limit of 90% exceeded: cluster would be at 93.5%"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("TopicCommand output lacks %q:\n%s", want, out)
			}
		}
		assertNoTopic(t, admin, "too-big")
	})

	t.Run("R5.4 the CLI online answers the same and exits 1", func(t *testing.T) {
		// The password from the environment: never a flag (ps shows flags).
		cmd := exec.Command(cli, "reserve", "--bootstrap-server", broker.SASLAddr,
			"--sasl-mechanism", "PLAIN", "--sasl-username", kafkatest.GuardUser,
			"--broker-storage-bytes", "10GiB", "--topic", "too-big", "--partitions", "4",
			"--config", "retention.bytes=1073741824", "--config", "segment.bytes=536870912")
		cmd.Env = append(os.Environ(), "KDG_SASL_PASSWORD="+kafkatest.GuardPassword)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit %v, want 1:\n%s", err, out)
		}
		for _, want := range []string{"PolicyViolation: reserved storage limit of 90% exceeded", "broker 1 (+4)", "93.5%"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// The same connection from a Kafka client properties file.
		props := filepath.Join(t.TempDir(), "client.properties")
		if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\""+kafkatest.GuardUser+
			"\" password=\""+kafkatest.GuardPassword+"\";\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err = exec.Command(cli, "reserve", "--bootstrap-server", broker.SASLAddr, "--command-config", props,
			"--broker-storage-bytes", "10GiB", "--topic", "fine", "--partitions", "1",
			"--config", "retention.bytes=1073741824", "--config", "segment.bytes=536870912").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "result: allowed") {
			t.Fatalf("fitting topic: %v\n%s", err, out)
		}
	})

	// Kafka 4.4's controller applies CreateTopicPolicy to CreateTopics only
	// (ReplicationControlManager.createPartitions never calls it): the broker
	// itself cannot refuse CreatePartitions. The guard's answer (HTTP and
	// CLI) still refuses, and counts the partitions once they exist.
	t.Run("R5.4 adding partitions past the limit: refused by the guard, not applied by Kafka 4.4", func(t *testing.T) {
		body, _ := json.Marshal(reserve.Request{Operation: reserve.CreatePartitions, Topic: "fits", Partitions: 6})
		res, err := http.Post(guard.URL+"/api/v1/reserve/check", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var d reserve.Decision
		err = json.NewDecoder(res.Body).Decode(&d)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("status %d, %v", res.StatusCode, err)
		}
		if d.Allowed || !strings.Contains(d.Reason, "add partitions to topic fits: 4 partition(s)") || !strings.Contains(d.Reason, "limit of 90%") {
			t.Fatalf("guard decision %+v", d)
		}

		if err := admin.CreatePartitions("fits", 6, nil, false); err != nil {
			t.Fatalf("Kafka 4.4 refused CreatePartitions (does it apply the policy now? update docs/admission.md): %v", err)
		}
		kafkatest.Eventually(t, 20*time.Second, func() error {
			if got := state(t, reader, cfg).ReservedBytes; got != 6*perPartition {
				return fmt.Errorf("reserved %d, want %d", got, 6*perPartition)
			}
			return nil
		})
		// The model learns partitions added around the guard at its next
		// read.
		if err := model.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Now over the limit: even a small topic is refused.
		err = admin.CreateTopic("tiny", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"retention.bytes": ptr("1048576"), "segment.bytes": ptr("1048576")}}, false)
		if !errors.Is(err, sarama.ErrPolicyViolation) || !strings.Contains(err.Error(), "current 9.35 GiB = 93.5%") {
			t.Fatalf("err = %v, want POLICY_VIOLATION at 93.5%%", err)
		}
	})

	t.Run("R5.4 guard unreachable with on.unreachable=refuse", func(t *testing.T) {
		g.set(h, true)
		defer g.set(h, false)
		err := admin.CreateTopic("while-down", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
		if !errors.Is(err, sarama.ErrPolicyViolation) {
			t.Fatalf("err = %v, want POLICY_VIOLATION", err)
		}
		for _, want := range []string{"could not check the reserved storage limit", "HTTP 503", "kafka.disk.guard.on.unreachable=refuse"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err.Error(), want)
			}
		}
	})

	t.Run("R5.4 Kafka's internal topics are admitted without asking, from the guard's list", func(t *testing.T) {
		// The guard cannot answer and on.unreachable=refuse: only the
		// plugin's list of internal topics (a resource generated from
		// agent.KafkaInternalTopics) lets the broker create
		// __consumer_offsets for a consumer group.
		g.set(h, true)
		defer g.set(h, false)
		client, err := sarama.NewClient([]string{broker.Addr}, broker.ClientConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		kafkatest.Eventually(t, 60*time.Second, func() error {
			_, err := client.Coordinator("kdg-internal-topics")
			return err
		})
		if log := broker.ServerLog(); !strings.Contains(log, "admits Kafka's internal topic __consumer_offsets without asking") {
			t.Errorf("the policy did not admit __consumer_offsets by its list:\n%s", tail(log, 40))
		}
	})

	t.Run("R8.4 the guard's ownership topic is admitted without asking", func(t *testing.T) {
		// Write protection must never wait for admission: even with the
		// guard unable to answer and on.unreachable=refuse, the ownership
		// topic (kafka.disk.guard.exempt.topics, by default its default
		// name) is created.
		g.set(h, true)
		defer g.set(h, false)
		err := admin.CreateTopic("__kafka_disk_guard_protection", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"cleanup.policy": ptr("compact")}}, false)
		if err != nil {
			t.Fatalf("R8.4/the ownership topic was refused: %v", err)
		}
		if log := broker.ServerLog(); !strings.Contains(log, "admits its ownership topic __kafka_disk_guard_protection without asking") {
			t.Errorf("the policy did not admit the ownership topic by its exemption:\n%s", tail(log, 40))
		}
	})
}

func ptr(s string) *string { return &s }

func state(t *testing.T, src reserve.ClusterSource, cfg reserve.Config) reserve.State {
	t.Helper()
	info, err := src.ReadCluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st, err := reserve.NewState(info, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func assertNoTopic(t *testing.T, admin sarama.ClusterAdmin, name string) {
	t.Helper()
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics[name]; ok {
		t.Fatalf("topic %s exists", name)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
