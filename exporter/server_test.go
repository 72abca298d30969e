package exporter

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// mutableSource is a snapshot source tests update while the server runs.
type mutableSource struct {
	mu   sync.Mutex
	snap *agent.Snapshot
}

func (s *mutableSource) Snapshot() *agent.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap
}

func (s *mutableSource) set(snap *agent.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap = snap
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthAndReadiness(t *testing.T) {
	now := fixtureNow()
	tests := []struct {
		name      string
		snap      *agent.Snapshot
		wantReady int
		wantBody  string
	}{
		{"no snapshot yet", nil, http.StatusServiceUnavailable, "no full scan yet"},
		{"snapshot without a full scan", &agent.Snapshot{Time: now}, http.StatusServiceUnavailable, "no full scan yet"},
		{"fresh full scan", &agent.Snapshot{Time: now.Add(-time.Minute), Health: agent.Health{LastFullScan: now.Add(-time.Minute)}}, http.StatusOK, "ready"},
		{"old full scan, fresh partition rereads", &agent.Snapshot{Time: now.Add(-time.Second), Health: agent.Health{LastFullScan: now.Add(-time.Hour)}}, http.StatusOK, "ready"},
		{"stale", &agent.Snapshot{Time: now.Add(-6 * time.Minute), Health: agent.Health{LastFullScan: now.Add(-6 * time.Minute)}}, http.StatusServiceUnavailable, "stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := staticSource{tt.snap}
			srv, err := NewServer(ServerConfig{Now: fixtureNow}, discard(), prometheus.NewRegistry(), src)
			if err != nil {
				t.Fatal(err)
			}
			if code, _ := get(t, srv.Handler(), "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz = %d, want 200 whatever the snapshot", code)
			}
			code, body := get(t, srv.Handler(), "/readyz")
			if code != tt.wantReady || !strings.Contains(body, tt.wantBody) {
				t.Errorf("/readyz = %d %q, want %d containing %q", code, body, tt.wantReady, tt.wantBody)
			}
		})
	}
}

func TestLandingPage(t *testing.T) {
	srv, err := NewServer(ServerConfig{Version: "1.2.3"}, discard(), prometheus.NewRegistry(), staticSource{})
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv.Handler(), "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	for _, want := range []string{"kafka-disk-guard", `href="/metrics"`, "1.2.3"} {
		if !strings.Contains(body, want) {
			t.Errorf("landing page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "debug/pprof") {
		t.Error("landing page links pprof, which the server does not serve")
	}
}

// failingCollector makes gathering fail, as a broken collector would.
type failingCollector struct{ d *prometheus.Desc }

func (f failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- f.d }
func (f failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.d, errors.New("boom"))
}

// TestMetricsContinueOnError: a failing collector does not hide the others.
func TestMetricsContinueOnError(t *testing.T) {
	src := staticSource{fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	reg.MustRegister(failingCollector{prometheus.NewDesc("other_broken", "h", nil, nil)})
	srv, err := NewServer(ServerConfig{}, discard(), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv.Handler(), "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "kafka_disk_guard_log_dir_usage_ratio") {
		t.Errorf("GET /metrics = %d, want 200 with the exporter's metrics:\n%s", code, body)
	}
}

// runServer starts srv.Run and returns the base address and a stop
// function that cancels and checks Run returned nil.
func runServer(t *testing.T, srv *Server) (string, func()) {
	t.Helper()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	return srv.Addr().String(), func() { once.Do(func() { stopServer(t, cancel, done) }) }
}

func stopServer(t *testing.T, cancel func(), done chan error) {
	{
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run after cancel = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	src := staticSource{fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0"}, discard(), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := runServer(t, srv)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "kafka_disk_guard_segments{") {
		t.Errorf("GET /metrics = %d:\n%s", resp.StatusCode, body)
	}
	stop()
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still listening after shutdown")
	}
}

// The bcrypt hash of "scrape-secret", as the web config file wants it.
const scrapeSecretHash = "$2a$04$Idb1eKu0Oyj8p7.RmvKYyuCObMixjdZTfuk9woIE8Si6Q1HDm.pWS"

func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	must(t, os.WriteFile(certFile, certPEM, 0o600))
	must(t, os.WriteFile(keyFile, keyPEM, 0o600))
	webConfig := filepath.Join(dir, "web.yml")
	must(t, os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  prometheus: "+scrapeSecretHash+"\n"), 0o600))

	src := staticSource{fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0", WebConfigFile: webConfig}, discard(), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := runServer(t, srv)
	defer stop()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	tests := []struct {
		name       string
		user, pass string
		want       int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", "prometheus", "nope", http.StatusUnauthorized},
		{"right password", "prometheus", "scrape-secret", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/metrics", nil)
			if tt.user != "" {
				req.SetBasicAuth(tt.user, tt.pass)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	t.Run("plain http refused", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Error("plain HTTP served metrics with TLS configured")
			}
		}
	})
}

// With basic auth and TLS on the main listener, the probe listener answers
// /healthz and /readyz over plain HTTP without credentials, and nothing
// else; the main listener still wants credentials for them.
func TestProbeListenerWithoutCredentials(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	must(t, os.WriteFile(certFile, certPEM, 0o600))
	must(t, os.WriteFile(keyFile, keyPEM, 0o600))
	webConfig := filepath.Join(dir, "web.yml")
	must(t, os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  prometheus: "+scrapeSecretHash+"\n"), 0o600))
	src := staticSource{fixtureSnapshot()}
	reg := newTestRegistry(t, Config{}, src)
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0", ProbeListenAddress: "127.0.0.1:0", WebConfigFile: webConfig,
		Now: func() time.Time { return fixtureSnapshot().Time }}, discard(), reg, src)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := runServer(t, srv)
	defer stop()
	probe := srv.ProbeAddr().String()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, "/": 404} {
		resp, err := http.Get("http://" + probe + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("probe listener %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("main listener /healthz without credentials: %d, want 401", resp.StatusCode)
	}
	stop()
	if _, err := net.DialTimeout("tcp", probe, time.Second); err == nil {
		t.Error("probe listener still open after shutdown")
	}
}

// A client that sends its request headers slowly is cut off by the
// server's timeouts instead of holding a connection for ever.
func TestSlowClientTimesOut(t *testing.T) {
	src := staticSource{fixtureSnapshot()}
	srv, err := NewServer(ServerConfig{ListenAddress: "127.0.0.1:0", ReadHeaderTimeout: 200 * time.Millisecond}, discard(), prometheus.NewRegistry(), src)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := runServer(t, srv)
	defer stop()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			break // closed by the server (or the deadline, checked below)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("connection held %s; the header timeout is 200ms", d)
	}
}

func TestServerConfigValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	must(t, os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n"), 0o600))
	tests := []struct {
		name    string
		cfg     ServerConfig
		wantErr string
	}{
		{"defaults", ServerConfig{}, ""},
		{"bad address", ServerConfig{ListenAddress: "9644"}, "web.listenAddress"},
		{"bad probe address", ServerConfig{ProbeListenAddress: "9645"}, "web.probeListenAddress"},
		{"probe address is the listen address", ServerConfig{ListenAddress: ":9644", ProbeListenAddress: ":9644"}, "web.probeListenAddress"},
		{"bad web config", ServerConfig{WebConfigFile: bad}, "web.configFile"},
		{"missing web config", ServerConfig{WebConfigFile: filepath.Join(dir, "missing.yml")}, "web.configFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewServer(tt.cfg, discard(), prometheus.NewRegistry(), staticSource{})
			if tt.wantErr == "" {
				c := tt.cfg.WithDefaults()
				if err != nil || c.ListenAddress != DefaultListenAddress || c.StaleAfter != 5*time.Minute || c.WriteTimeout != time.Minute {
					t.Errorf("NewServer: %v, cfg %+v", err, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewServer: %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
