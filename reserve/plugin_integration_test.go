//go:build integration

package reserve_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/exporter"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// The bcrypt hash of "scrape-secret" (cost 4), as the exporter-toolkit web
// config wants it.
const admissionSecretHash = "$2a$04$Idb1eKu0Oyj8p7.RmvKYyuCObMixjdZTfuk9woIE8Si6Q1HDm.pWS"

// blackHole answers through h, or, while on, holds every request without
// ever answering (a guard that accepts connections and never replies: the
// worst case for the controller, which waits for a timeout).
type blackHole struct {
	mu      sync.Mutex
	h       http.Handler
	on      bool
	release chan struct{}
}

func (b *blackHole) set(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.on && !on {
		close(b.release)
	}
	if on && !b.on {
		b.release = make(chan struct{})
	}
	b.on = on
}

func (b *blackHole) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	on, release, h := b.on, b.release, b.h
	b.mu.Unlock()
	if on {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return
	}
	h.ServeHTTP(w, r)
}

// tlsFiles writes a CA and a server certificate for 127.0.0.1 signed by
// it; it returns the CA file and the server's certificate and key files.
func tlsFiles(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kdg test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	caFile, certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string]*pem.Block{caFile: {Type: "CERTIFICATE", Bytes: caDER}, certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

type noSnapshots struct{}

func (noSnapshots) Snapshot() *agent.Snapshot { return nil }

func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, label, value) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{%s=%q} not gathered", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// R5.4 with the guard as deployed: HTTPS and basic auth from an
// exporter-toolkit web config; the plugin authenticates and trusts a CA
// file of its own. Then the guard is black-holed: one CreateTopics of 10
// topics holds the controller for at most the wait budget (2.5 s by
// default), the topics are allowed (on.unreachable=allow) with a warning,
// and once the guard answers again the plugin reports the 10 fallbacks,
// which the guard counts.
func TestPluginAuthCABudgetAndFallbackReport(t *testing.T) {
	jar := buildPlugin(t)
	dir := t.TempDir()
	caFile, certFile, keyFile := tlsFiles(t, dir)
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  admission: "+admissionSecretHash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg := reserve.Config{BrokerStorageBytes: 10 * gib}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hole := &blackHole{}
	srv, err := exporter.NewServer(exporter.ServerConfig{ListenAddress: "127.0.0.1:0", WebConfigFile: webConfig,
		Routes: map[string]http.Handler{"/api/v1/reserve/check": hole}}, logger, reg, noSnapshots{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx := kafkatest.Context(t, 10*time.Minute)
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(ctx) }()
	url := "https://" + srv.Addr().String() + "/api/v1/reserve/check"

	broker, err := kafkatest.Start(kafkatest.Options{
		Classpath: []string{jar},
		Props: []string{
			"create.topic.policy.class.name=io.kafkadiskguard.policy.ReservedSpacePolicy",
			"kafka.disk.guard.url=" + url,
			"kafka.disk.guard.basic.auth.username=admission",
			"kafka.disk.guard.basic.auth.password=scrape-secret",
			"kafka.disk.guard.ssl.ca.file=" + caFile,
			"kafka.disk.guard.breaker.open.ms=2000",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(broker.ServerLog(), "\n") {
				if strings.Contains(l, "kafka-disk-guard") {
					t.Log(l)
				}
			}
		}
		if err := broker.Stop(); err != nil {
			t.Error(err)
		}
	})
	if !strings.Contains(broker.ServerLog(), "waiting at most 2500 ms per 10000 ms") ||
		!strings.Contains(broker.ServerLog(), "basic auth: yes, CA file: "+caFile) {
		t.Fatalf("the broker did not load the policy with its defaults, basic auth and CA file")
	}
	model, err := reserve.NewModel(cfg, logger, reg, kafkaadmin.NewClusterReader(broker.Admin(t)), nil)
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
	hole.mu.Lock()
	hole.h = h
	hole.mu.Unlock()

	// The creating client waits for the controller: its request timeout
	// must outlast the wait budget.
	conf := broker.GuardConfig()
	conf.Admin.Timeout = 30 * time.Second
	conf.Net.ReadTimeout = 60 * time.Second
	admin, err := sarama.NewClusterAdmin([]string{broker.SASLAddr}, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })

	t.Run("R5.4 the plugin authenticates over TLS with its own CA", func(t *testing.T) {
		// The first request (a JVM's first TLS handshake on a busy
		// machine) may outlast timeout.ms: warm up until one is answered.
		kafkatest.Eventually(t, 60*time.Second, func() error {
			name := fmt.Sprintf("warm-up-%d", time.Now().UnixNano())
			if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				return err
			}
			if strings.Contains(broker.ServerLog(), "gave no answer for topic "+name+" ") {
				time.Sleep(time.Second)
				return fmt.Errorf("%s decided without the guard", name)
			}
			return nil
		})
		before := metricValue(t, reg, "kafka_disk_guard_admission_checks_total", "result", reserve.ResultAllowed)
		if err := admin.CreateTopic("fits", topicDetail(2), false); err != nil {
			t.Fatalf("create: %v", err)
		}
		if got := metricValue(t, reg, "kafka_disk_guard_admission_checks_total", "result", reserve.ResultAllowed); got != before+1 {
			t.Fatalf("allowed checks %v -> %v: the plugin did not reach the guard", before, got)
		}
		err := admin.CreateTopic("too-big", topicDetail(4), false)
		if err == nil || !strings.Contains(err.Error(), "reserved storage limit of 90% exceeded") {
			t.Fatalf("err = %v, want POLICY_VIOLATION", err)
		}
		// Without credentials the guard refuses: the plugin really sent them.
		pool := x509.NewCertPool()
		pem, _ := os.ReadFile(caFile)
		pool.AppendCertsFromPEM(pem)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		res, err := c.Post(url, "application/json", strings.NewReader(`{"topic":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("without credentials: %d, want 401", res.StatusCode)
		}
	})

	t.Run("R5.4 a black-holed guard holds one CreateTopics of 10 topics at most the wait budget", func(t *testing.T) {
		// The worst case: the whole budget unspent. Let the window
		// (wait.window.ms, 10 s) pass the warm-up's waits.
		time.Sleep(10500 * time.Millisecond)
		hole.set(true)
		topics := map[string]*sarama.TopicDetail{}
		for i := range 10 {
			topics[fmt.Sprintf("while-black-holed-%d", i)] = &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}
		}
		start := time.Now()
		err := createTopics(admin, topics)
		took := time.Since(start)
		hole.set(false)
		if err != nil {
			t.Fatalf("CreateTopics with the guard black-holed and on.unreachable=allow: %v", err)
		}
		t.Logf("CreateTopics of 10 topics, guard black-holed: %s", took.Round(time.Millisecond))
		for _, l := range strings.Split(broker.ServerLog(), "\n") {
			if strings.Contains(l, "while-black-holed-") {
				t.Log(l)
			}
		}
		if took > 3*time.Second {
			t.Fatalf("CreateTopics took %s with the guard black-holed; the wait budget is 2.5 s (goal 3 s)", took)
		}
		if n := strings.Count(broker.ServerLog(), "gave no answer for topic while-black-holed-"); n != 10 {
			t.Fatalf("%d fallback warnings in server.log, want 10", n)
		}
		if !strings.Contains(broker.ServerLog(), "3 failures in a row: circuit open") && !strings.Contains(broker.ServerLog(), "wait.budget.ms") {
			t.Errorf("server.log says neither that the circuit opened nor that the budget was spent")
		}
	})

	t.Run("R5.4 the plugin reports its fallbacks to the guard once it answers", func(t *testing.T) {
		counted := func() float64 {
			return metricValue(t, reg, "kafka_disk_guard_admission_plugin_fallbacks_total", "action", "allow")
		}
		// Warm-up fallbacks were reported by the requests that followed.
		before := counted()
		warm := float64(strings.Count(broker.ServerLog(), "gave no answer for topic warm-up-"))
		if before != warm {
			t.Fatalf("fallbacks counted before the black hole: %v, want the %v warm-up ones", before, warm)
		}
		// The breaker lets a request through after breaker.open.ms (2 s).
		kafkatest.Eventually(t, 30*time.Second, func() error {
			name := fmt.Sprintf("after-%d", time.Now().UnixNano())
			if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				return err
			}
			if got := counted(); got < before+10 {
				time.Sleep(500 * time.Millisecond)
				return fmt.Errorf("fallbacks counted: %v", got)
			}
			return nil
		})
		// Every topic decided without the guard so far (the 10, and those
		// created while the breaker was open or the budget spent), exactly.
		want := float64(strings.Count(broker.ServerLog(), "gave no answer for topic "))
		if got := counted(); got != want {
			t.Fatalf("fallbacks counted %v, the broker logged %v", got, want)
		}
		// Recorded once: the next request reports none.
		if err := admin.CreateTopic("after-report", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
			t.Fatal(err)
		}
		if got := counted(); got != want {
			t.Fatalf("fallbacks counted %v after one more topic, want still %v", got, want)
		}
	})
}

// createTopics sends one CreateTopics request naming every topic (the
// controller calls the policy once per topic, one after another) and
// checks each topic's result.
func createTopics(admin sarama.ClusterAdmin, topics map[string]*sarama.TopicDetail) error {
	b, err := admin.Controller()
	if err != nil {
		return err
	}
	rsp, err := b.CreateTopics(&sarama.CreateTopicsRequest{Version: 3, TopicDetails: topics, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	for name, e := range rsp.TopicErrors {
		if e != nil && e.Err != sarama.ErrNoError {
			return fmt.Errorf("topic %s: %v", name, e)
		}
	}
	return nil
}
