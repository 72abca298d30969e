//go:build integration

// Package e2etest holds what the end-to-end tests (the image test and the
// monitoring-stack test) share: the repository, the chart as Helm renders
// it, free ports and the processes they start.
package e2etest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// Root is the repository root.
func Root(t testing.TB) string {
	t.Helper()
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Chart is the chart's directory.
func Chart(t testing.TB) string { return filepath.Join(Root(t), "charts", "kafka-disk-guard") }

// ChartMeta is what the tests read from Chart.yaml.
type ChartMeta struct {
	Version    string `yaml:"version"`
	AppVersion string `yaml:"appVersion"`
	Home       string `yaml:"home"`
}

// ReadChart reads Chart.yaml.
func ReadChart(t testing.TB) ChartMeta {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Chart(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m ChartMeta
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if m.AppVersion == "" {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return m
}

// Helm returns the pinned helm (scripts/tools.sh builds it once).
func Helm(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(Root(t), "scripts", "tools.sh"), "helm").Output()
	if err != nil {
		t.Fatalf("scripts/tools.sh helm: %v\n%s", err, stderrOf(err))
	}
	return strings.TrimSpace(string(out))
}

func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// Object is one rendered Kubernetes object.
type Object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec yaml.Node         `yaml:"spec"`
}

// KubeVersion is the Kubernetes version charts are rendered for (as in
// scripts/check-deploy.sh).
const KubeVersion = "1.33.0"

// Template renders the chart (release kdg, namespace kafka) with helm
// template and the extra arguments, and decodes every object.
func Template(t testing.TB, args ...string) []Object {
	t.Helper()
	cmd := exec.Command(Helm(t), append([]string{"template", "kdg", Chart(t), "--namespace", "kafka", "--kube-version", KubeVersion}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderrOf(err))
	}
	var objs []Object
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o Object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decode helm template output: %v", err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// RenderedConfig returns the guard's config file the chart renders (the
// ConfigMap key config.yaml).
func RenderedConfig(t testing.TB, objs []Object) string {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "ConfigMap" && o.Data["config.yaml"] != "" {
			return o.Data["config.yaml"]
		}
	}
	t.Fatal("the chart rendered no ConfigMap with config.yaml")
	return ""
}

// FreePort returns a port free on 127.0.0.1 just now, below Linux's
// ephemeral range (32768-60999), where no client's outgoing connection
// takes it before the server the test starts binds it.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		port := 12000 + rand.IntN(32768-12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free port on 127.0.0.1 below 32768")
	return 0
}

// WriteFile writes a file under dir and returns its path.
func WriteFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Process is a long-running program started by a test; its output goes to
// a file, shown when the test fails.
type Process struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	err     error
}

// Start starts a program in its own process group. It is stopped (SIGTERM,
// then SIGKILL after 10 s) when the test ends.
func Start(t testing.TB, name string, dir string, argv ...string) *Process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- %s output (last 60 lines):\n%s", name, p.Tail(60))
		}
	})
	return p
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *Process) Stop() {
	if ok, _ := p.Exited(); ok {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Tail returns the last n lines of the output.
func (p *Process) Tail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Output returns everything the process wrote.
func (p *Process) Output() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// Poll calls f every interval until it returns nil or ctx ends.
func Poll(ctx context.Context, interval time.Duration, f func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		if last = f(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
