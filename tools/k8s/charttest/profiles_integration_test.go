//go:build integration

package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCIProfilesInstall installs every values profile of
// charts/kafka-disk-guard/ci/ for real: the API server stores each object
// its "# expect:" line names (validation, defaulting and admission are the
// API server's), the DaemonSet controller's pods pass admission, and the
// release uninstalls. This is the ground tools/k8scheck covered offline.
func TestCIProfilesInstall(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(k8s.chart, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci profiles: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), "-values.yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^# expect: *(.*)$`).FindSubmatch(b)
			if m == nil {
				t.Fatalf("%s has no '# expect:' line", file)
			}
			ns := "kdg-ci-" + name
			namespace(t, ns, recommendedLevel)
			if strings.Contains(string(b), "namespace: monitoring") {
				monitoringNamespace(t)
			}
			helmRun(t, "install", release, k8s.chart, "-n", ns, "-f", file)
			out := kubectlRun(t, "-n", ns, "get", "all,configmaps,secrets,serviceaccounts,networkpolicies,servicemonitors,podmonitors,prometheusrules",
				"-l", "app.kubernetes.io/instance="+release, "-o", "jsonpath={range .items[*]}{.kind}{\"\\n\"}{end}")
			stored := map[string]bool{}
			for _, k := range strings.Fields(out) {
				stored[k] = true
			}
			expect := strings.Split(strings.TrimSpace(string(m[1])), ",")
			for _, kind := range expect {
				if kind == "Job" {
					continue // the uninstall hook: it runs at uninstall
				}
				if !stored[kind] {
					t.Errorf("no %s stored (stored: %s)", kind, strings.Join(strings.Fields(out), ","))
				}
			}
			hook := strings.Contains(string(b), "bootstrapServers")
			var uninstallArgs []string
			if stored["DaemonSet"] {
				ds, err := k8s.cs.AppsV1().DaemonSets(ns).Get(ctx(t), fullname, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				kubeletPods := false
				for _, v := range ds.Spec.Template.Spec.Volumes {
					kubeletPods = kubeletPods || v.Name == "kubelet-pods"
				}
				checkPodSpec(t, "DaemonSet template", &ds.Spec.Template.Spec, kubeletPods)
				eventually(t, 60*time.Second, "agent pods admitted", func() error {
					d, err := k8s.cs.AppsV1().DaemonSets(ns).Get(ctx(t), fullname, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if d.Status.ObservedGeneration != d.Generation {
						return fmt.Errorf("DaemonSet not yet seen by its controller")
					}
					if d.Status.DesiredNumberScheduled == 0 {
						// The profile's nodeSelector matches no simulated
						// node: neither would the hook Job's pod run.
						hook, uninstallArgs = false, []string{"--no-hooks"}
						return nil
					}
					pods, err := k8s.cs.CoreV1().Pods(ns).List(ctx(t), metav1.ListOptions{LabelSelector: selector})
					if err != nil {
						return err
					}
					if len(pods.Items) == 0 {
						return fmt.Errorf("no pod")
					}
					return nil
				})
			}
			uninstall(t, ns, hook, stored["DaemonSet"], uninstallArgs...)
		})
	}
}

var monitoringOnce sync.Once

// monitoringNamespace creates the namespace a profile puts its dashboards in.
func monitoringNamespace(t *testing.T) {
	monitoringOnce.Do(func() { namespace(t, "monitoring", recommendedLevel) })
}
