//go:build integration

// Package charttest installs the Helm chart on a real Kubernetes control
// plane (scripts/k8s.sh: etcd, kube-apiserver with its default admission
// plugins, kube-controller-manager, kube-scheduler, simulated nodes) with
// the values the docs give, upgrades and uninstalls it, and checks what the
// API server stored and what the controllers did with it.
//
//	go test -tags integration ./charttest/     (from tools/k8s)
//
// The control plane is started once for the package (TestMain) and stopped
// at the end. KDG_K8S_KUBECONFIG=path uses a running one instead (one
// started by hand with scripts/k8s.sh up: its nodes must be the default
// ones).
package charttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// env is the control plane and tools every test uses.
type env struct {
	root       string // the repository
	chart      string
	helm       string
	kubectl    string
	kubeconfig string
	cs         kubernetes.Interface
	dyn        dynamic.Interface
}

var k8s env

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "charttest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		return 0, err
	}
	k8s.root = root
	k8s.chart = filepath.Join(root, "charts", "kafka-disk-guard")
	helm, err := output(exec.Command(filepath.Join(root, "scripts", "tools.sh"), "helm"))
	if err != nil {
		return 0, fmt.Errorf("helm: %w", err)
	}
	k8s.helm = strings.TrimSpace(helm)
	bin, err := output(exec.Command(filepath.Join(root, "scripts", "k8s.sh"), "build"))
	if err != nil {
		return 0, fmt.Errorf("build the control plane: %w", err)
	}
	k8s.kubectl = filepath.Join(strings.TrimSpace(bin), "kubectl")

	k8s.kubeconfig = os.Getenv("KDG_K8S_KUBECONFIG")
	if k8s.kubeconfig == "" {
		dir, err := os.MkdirTemp("", "kdg-k8s-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		script := filepath.Join(root, "scripts", "k8s.sh")
		// down before up's error is returned: up may have started some.
		defer func() { _ = exec.Command(script, "down", "--dir", dir).Run() }()
		start := time.Now()
		out, err := output(exec.Command(script, "up", "--dir", dir))
		if err != nil {
			for _, log := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kdg-nodesim"} {
				b, _ := os.ReadFile(filepath.Join(dir, log+".log"))
				fmt.Fprintf(os.Stderr, "--- %s.log (tail)\n%s\n", log, tail(string(b), 3000))
			}
			return 0, fmt.Errorf("scripts/k8s.sh up: %w", err)
		}
		fmt.Fprintf(os.Stderr, "charttest: control plane up in %s\n", time.Since(start).Round(time.Second))
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "KUBECONFIG="); ok {
				k8s.kubeconfig = v
			}
		}
		if k8s.kubeconfig == "" {
			return 0, fmt.Errorf("scripts/k8s.sh up printed no KUBECONFIG: %s", out)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k8s.kubeconfig)
	if err != nil {
		return 0, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	if k8s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return 0, err
	}
	if k8s.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// output runs cmd and returns its stdout; stderr goes into the error.
func output(cmd *exec.Cmd) (string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tail(stderr.String(), 4000))
	}
	return string(out), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// helmRun runs helm against the test control plane; it returns the
// combined output (warnings included).
func helmRun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(k8s.helm, append([]string{"--kubeconfig", k8s.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// The API server drops a field it does not know, with a warning only.
	if strings.Contains(string(out), "unknown field") {
		t.Errorf("helm %s: the API server dropped fields:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// kubectlRun runs kubectl against the test control plane; it returns stdout.
func kubectlRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := output(exec.Command(k8s.kubectl, append([]string{"--kubeconfig", k8s.kubeconfig}, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// eventually polls cond every 250 ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
