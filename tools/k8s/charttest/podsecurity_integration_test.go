//go:build integration

package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestStricterPodSecurityRefusesTheAgents installs the Strimzi values in
// namespaces that enforce baseline and restricted: helm install succeeds
// (PodSecurity does not refuse a DaemonSet), the DaemonSet controller's
// pods are refused for their hostPath volume, with the message
// docs/operating.md quotes; the uninstall hook's Job (no host path) is
// admitted even at restricted.
func TestStricterPodSecurityRefusesTheAgents(t *testing.T) {
	values, err := docBlock(k8s.root, "docs/operating.md", "# strimzi-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(k8s.root, "docs/operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"baseline", "restricted"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
				t.Fatal(err)
			}
			ns := "kdg-psa-" + level
			namespace(t, ns, level)
			for name, data := range strimziSecrets {
				secret(t, ns, name, data)
			}
			helmRun(t, "install", release, k8s.chart, "-n", ns, "-f", file)
			var refusal string
			eventually(t, 60*time.Second, "the DaemonSet controller's FailedCreate event", func() error {
				events, err := k8s.cs.CoreV1().Events(ns).List(ctx(t), metav1.ListOptions{
					FieldSelector: "involvedObject.kind=DaemonSet,reason=FailedCreate",
				})
				if err != nil {
					return err
				}
				for _, e := range events.Items {
					refusal = e.Message
					return nil
				}
				return fmt.Errorf("no event")
			})
			want := map[string]string{
				"baseline":   `violates PodSecurity "baseline:latest": hostPath volumes (volume "kubelet-pods")`,
				"restricted": `violates PodSecurity "restricted:latest": restricted volume types (volume "kubelet-pods" uses restricted volume type "hostPath")`,
			}[level]
			if !strings.Contains(refusal, want) {
				t.Errorf("FailedCreate: %s\nwant it to say %s", refusal, want)
			}
			// The docs quote what the level refuses (the volume name aside).
			quoted := want[:strings.Index(want, " (volume")]
			if !strings.Contains(string(doc), quoted) {
				t.Errorf("docs/operating.md does not say what %s refuses: %q", level, quoted)
			}
			pods, err := k8s.cs.CoreV1().Pods(ns).List(ctx(t), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) > 0 {
				t.Errorf("%d agent pods admitted at %s", len(pods.Items), level)
			}
			// The hook Job's pod is admitted: the uninstall completes.
			uninstall(t, ns, true, true)
		})
	}
}

// TestSidecarSnippet follows docs/operating.md's Bitnami sidecar commands:
// helm install in sidecar mode, the ConfigMap read with the docs' kubectl
// command, and its values applied to a pod shaped like Bitnami's broker in
// a namespace enforcing restricted: the API server and PodSecurity admit
// it; then an upgrade with a changed value and the uninstall.
func TestSidecarSnippet(t *testing.T) {
	block, err := docBlock(k8s.root, sidecarDoc, sidecarMarker)
	if err != nil {
		t.Fatal(err)
	}
	install, err := docCommand(block, "helm install")
	if err != nil {
		t.Fatal(err)
	}
	get, err := docCommand(block, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	ns := "kdg-sidecar"
	namespace(t, ns, "restricted")
	// The docs' commands, in the test's namespace and with the chart's path.
	for i, w := range install {
		switch {
		case w == "./charts/kafka-disk-guard":
			install[i] = k8s.chart
		case i > 0 && install[i-1] == "-n":
			install[i] = ns
		}
	}
	helmRun(t, install[1:]...)
	for i := range get {
		if i > 0 && get[i-1] == "-n" {
			get[i] = ns
		}
	}
	redirect := len(get) - 2 // "> kdg-sidecar-values.yaml"
	if get[redirect] != ">" {
		t.Fatalf("the docs' kubectl command does not write a file: %v", get)
	}
	snippet := kubectlRun(t, get[1:redirect]...)

	var bitnami struct {
		Broker struct {
			Sidecars     []corev1.Container `json:"sidecars"`
			ExtraVolumes []corev1.Volume    `json:"extraVolumes"`
		} `json:"broker"`
		Controller struct {
			Sidecars     []corev1.Container `json:"sidecars"`
			ExtraVolumes []corev1.Volume    `json:"extraVolumes"`
		} `json:"controller"`
	}
	if err := yaml.UnmarshalStrict([]byte(snippet), &bitnami); err != nil {
		t.Fatalf("bitnami-values.yaml: %v\n%s", err, snippet)
	}
	if len(bitnami.Broker.Sidecars) != 1 || len(bitnami.Controller.Sidecars) != 1 {
		t.Fatalf("bitnami-values.yaml: %d broker and %d controller sidecars", len(bitnami.Broker.Sidecars), len(bitnami.Controller.Sidecars))
	}
	// The broker's data volume is only ever read.
	for _, m := range bitnami.Broker.Sidecars[0].VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("the sidecar mounts %s writable at %s", m.Name, m.MountPath)
		}
	}

	// A pod as Bitnami's chart makes a broker (its default security
	// contexts), with the snippet's sidecar and volumes.
	yes, no, uid := true, false, int64(1001)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kafka-broker-0", Labels: map[string]string{"app.kubernetes.io/name": "kafka"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				FSGroup: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: append([]corev1.Container{{
				Name: "kafka", Image: "docker.io/bitnami/kafka:4.0",
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem: &yes, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/bitnami/kafka"}},
			}}, bitnami.Broker.Sidecars...),
			Volumes: append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				bitnami.Broker.ExtraVolumes...),
		},
	}
	if _, err := k8s.cs.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Bitnami broker pod with the sidecar, at restricted: %v", err)
	}
	eventually(t, 60*time.Second, "the broker pod with the sidecar running", func() error {
		p, err := k8s.cs.CoreV1().Pods(ns).Get(ctx(t), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})

	// Upgrade with a changed value: the config the sidecar reads follows.
	helmRun(t, "upgrade", release, k8s.chart, "-n", ns, "--reuse-values", "--set", "enforcer.enabled=true")
	cm, err := k8s.cs.CoreV1().ConfigMaps(ns).Get(ctx(t), fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Enforcer struct {
			Enabled bool `json:"enabled"`
		} `json:"enforcer"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil || !cfg.Enforcer.Enabled {
		t.Errorf("after the upgrade the config says enforcer.enabled %v (%v)", cfg.Enforcer.Enabled, err)
	}
	for _, r := range []string{"podmonitors", "prometheusrules"} {
		out := kubectlRun(t, "-n", ns, "get", r, "-o", "name")
		if !strings.Contains(out, fullname) {
			t.Errorf("no %s stored: %q", r, out)
		}
	}
	uninstall(t, ns, true, false)
}
