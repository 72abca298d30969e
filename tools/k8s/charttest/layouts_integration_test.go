//go:build integration

package charttest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	release  = "kdg"
	fullname = "kdg-kafka-disk-guard"
	selector = "app.kubernetes.io/name=kafka-disk-guard,app.kubernetes.io/instance=kdg"
	// The Pod Security level docs/operating.md gives the agents' namespace.
	recommendedLevel = "privileged"
)

var (
	serviceMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
	podMonitors     = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}
	prometheusRules = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}
)

// TestDocumentedLayouts installs the chart with every DaemonSet layout's
// values exactly as the docs write them, upgrades it with a changed value
// and uninstalls it.
func TestDocumentedLayouts(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			values, err := docBlock(k8s.root, l.doc, l.marker)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
				t.Fatal(err)
			}
			ns := "kdg-" + l.name
			namespace(t, ns, recommendedLevel)
			for name, data := range l.secrets {
				secret(t, ns, name, data)
			}

			out := helmRun(t, "install", release, k8s.chart, "-n", ns, "-f", file)
			if strings.Contains(out, "PodSecurity") {
				t.Errorf("helm install warned about Pod Security at level %s:\n%s", recommendedLevel, out)
			}
			placement(t, ns, l.nodes)
			storedObjects(t, ns, l, values)

			helmRun(t, append([]string{"upgrade", release, k8s.chart, "-n", ns, "-f", file}, l.upgrade...)...)
			placement(t, ns, l.upgraded)
			storedObjects(t, ns, l, values)
			if slices.Contains(l.upgrade, "networkPolicy.enabled=true") {
				networkPolicy(t, ns)
			}

			uninstall(t, ns, l.hook, true)
		})
	}
}

// namespace creates ns with the Pod Security level enforced (and warned).
func namespace(t *testing.T, ns, level string) {
	t.Helper()
	_, err := k8s.cs.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns,
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": level,
			"pod-security.kubernetes.io/warn":    level,
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	// Namespaces are not deleted: the namespace controller's finalization
	// would only cost time, and every test has its own.
}

func secret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	_, err := k8s.cs.CoreV1().Secrets(ns).Create(ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
}

// placement waits until the DaemonSet runs exactly one ready, up-to-date
// pod on each of nodes and none elsewhere (the DaemonSet controller made
// them, the scheduler bound them, the simulated kubelet reported them
// Running).
func placement(t *testing.T, ns string, nodes []string) {
	t.Helper()
	want := slices.Clone(nodes)
	sort.Strings(want)
	eventually(t, 90*time.Second, ns+": agents on "+strings.Join(want, ","), func() error {
		ds, err := k8s.cs.AppsV1().DaemonSets(ns).Get(ctx(t), fullname, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n := int32(len(want))
		s := ds.Status
		if s.ObservedGeneration != ds.Generation || s.DesiredNumberScheduled != n || s.CurrentNumberScheduled != n ||
			s.UpdatedNumberScheduled != n || s.NumberReady != n || s.NumberMisscheduled != 0 {
			return fmt.Errorf("DaemonSet status %+v (generation %d)", s, ds.Generation)
		}
		pods, err := k8s.cs.CoreV1().Pods(ns).List(ctx(t), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		var got []string
		for _, p := range pods.Items {
			if p.Labels["app.kubernetes.io/component"] == "uninstall-hook" {
				continue
			}
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
			if owner := metav1.GetControllerOf(&p); owner == nil || owner.Kind != "DaemonSet" || owner.Name != fullname {
				return fmt.Errorf("pod %s: controller %v", p.Name, owner)
			}
			got = append(got, p.Spec.NodeName)
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("pods on %v", got)
		}
		return nil
	})
}

// storedObjects checks what the API server stored (after its defaulting)
// against what docs/operating.md says of the agents' pods.
func storedObjects(t *testing.T, ns string, l layout, values string) {
	t.Helper()
	c := ctx(t)
	ds, err := k8s.cs.AppsV1().DaemonSets(ns).Get(c, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPodSpec(t, "DaemonSet template", &ds.Spec.Template.Spec, l.kubeletPods)
	pods, err := k8s.cs.CoreV1().Pods(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["app.kubernetes.io/component"] != "uninstall-hook" {
			checkPodSpec(t, "pod "+p.Name, &p.Spec, l.kubeletPods)
		}
	}

	sa, err := k8s.cs.CoreV1().ServiceAccounts(ns).Get(c, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agents' ServiceAccount: %v", err)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount %s: automountServiceAccountToken %v, want false", sa.Name, sa.AutomountServiceAccountToken)
	}
	noRBAC(t, ns)

	// The monitors the values ask for, on the Prometheus Operator's CRDs.
	if strings.Contains(values, "serviceMonitor: {enabled: true}") {
		sm, err := k8s.dyn.Resource(serviceMonitors).Namespace(ns).Get(c, fullname, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ServiceMonitor: %v", err)
		}
		svc, err := k8s.cs.CoreV1().Services(ns).Get(c, fullname, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ServiceMonitor's Service: %v", err)
		}
		sel, _, _ := unstructuredMap(sm.Object, "spec", "selector", "matchLabels")
		for k, v := range sel {
			if svc.Labels[k] != v {
				t.Errorf("ServiceMonitor selects %s=%v; the Service has %q", k, v, svc.Labels[k])
			}
		}
		for k, v := range svc.Spec.Selector {
			if ds.Spec.Template.Labels[k] != v {
				t.Errorf("Service selects %s=%s; the agents' pods have %q", k, v, ds.Spec.Template.Labels[k])
			}
		}
	}
	if strings.Contains(values, "podMonitor: {enabled: true}") {
		if _, err := k8s.dyn.Resource(podMonitors).Namespace(ns).Get(c, fullname, metav1.GetOptions{}); err != nil {
			t.Fatalf("PodMonitor: %v", err)
		}
	}
	if strings.Contains(values, "prometheusRule: {enabled: true}") {
		if _, err := k8s.dyn.Resource(prometheusRules).Namespace(ns).Get(c, fullname, metav1.GetOptions{}); err != nil {
			t.Fatalf("PrometheusRule: %v", err)
		}
	}
}

func unstructuredMap(o map[string]any, path ...string) (map[string]any, bool, error) {
	for _, p := range path {
		next, ok := o[p].(map[string]any)
		if !ok {
			return nil, false, nil
		}
		o = next
	}
	return o, true, nil
}

// checkPodSpec checks one stored pod spec (a template or a pod the
// DaemonSet controller made): docs/operating.md, "Install on Kubernetes".
func checkPodSpec(t *testing.T, what string, spec *corev1.PodSpec, kubeletPods bool) {
	t.Helper()
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken %v, want false", what, spec.AutomountServiceAccountToken)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v, want non-root 65532, RuntimeDefault seccomp", what, psc)
	}
	if kubeletPods && (psc == nil || !slices.Contains(psc.SupplementalGroups, 0)) {
		t.Errorf("%s: supplementalGroups %v, want 0 (the kubelet's pod dirs are 0750 root:root)", what, psc.SupplementalGroups)
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.Projected == nil && v.HostPath == nil {
			t.Errorf("%s: volume %s is neither the config, a Secret nor a host path", what, v.Name)
		}
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
		if strings.HasPrefix(v.Name, "kube-api-access") {
			t.Errorf("%s: a service account token volume %s was mounted", what, v.Name)
		}
	}
	if len(hostPaths) == 0 {
		t.Errorf("%s: no host path volume", what)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Privileged != nil && *sc.Privileged ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s: container securityContext %+v, want read-only root, no privilege escalation, no capabilities", what, sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("%s: no %s request", what, r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("%s: no %s limit", what, r)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("%s: liveness probe %+v, want GET /healthz", what, c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: readiness probe %+v, want GET /readyz", what, c.ReadinessProbe)
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("%s: volume %s mounted writable at %s", what, m.Name, m.MountPath)
		}
		path, host := hostPaths[m.Name]
		if !host {
			continue
		}
		if m.MountPath != path {
			t.Errorf("%s: host path %s mounted at %s, want the same path", what, path, m.MountPath)
		}
		prop := corev1.MountPropagationNone
		if m.MountPropagation != nil {
			prop = *m.MountPropagation
		}
		if kubeletPods && (path != "/var/lib/kubelet/pods" || prop != corev1.MountPropagationHostToContainer) {
			t.Errorf("%s: kubelet pods mount %s with propagation %s, want /var/lib/kubelet/pods, HostToContainer", what, path, prop)
		}
		if !kubeletPods && prop != corev1.MountPropagationNone {
			t.Errorf("%s: host path %s mounted with propagation %s", what, path, prop)
		}
	}
}

// noRBAC checks that the release made no RBAC object and that its
// ServiceAccount may do nothing in the API (the agents never call it).
func noRBAC(t *testing.T, ns string) {
	t.Helper()
	c := ctx(t)
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	roles, err := k8s.cs.RbacV1().Roles(ns).List(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := k8s.cs.RbacV1().RoleBindings(ns).List(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(roles.Items)+len(bindings.Items) > 0 {
		t.Errorf("the release made %d Roles and %d RoleBindings; the docs say it needs none", len(roles.Items), len(bindings.Items))
	}
	user := "system:serviceaccount:" + ns + ":" + fullname
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "get", Resource: "secrets"},
		{Namespace: ns, Verb: "list", Resource: "pods"},
		{Namespace: ns, Verb: "get", Resource: "configmaps"},
		{Verb: "list", Resource: "nodes"},
	} {
		r, err := k8s.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &ra,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			t.Errorf("%s may %s %s", user, ra.Verb, ra.Resource)
		}
	}
}

// networkPolicy checks the stored NetworkPolicy selects the agents' pods
// and admits their web port by its name.
func networkPolicy(t *testing.T, ns string) {
	t.Helper()
	c := ctx(t)
	np, err := k8s.cs.NetworkingV1().NetworkPolicies(ns).Get(c, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("NetworkPolicy: %v", err)
	}
	ds, err := k8s.cs.AppsV1().DaemonSets(ns).Get(c, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%s; the agents' pods have %q", k, v, ds.Spec.Template.Labels[k])
		}
	}
	if len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Error("NetworkPolicy selects every pod of the namespace")
	}
	if len(np.Spec.Ingress) == 0 || len(np.Spec.Ingress[0].Ports) != 1 {
		t.Fatalf("NetworkPolicy ingress %+v", np.Spec.Ingress)
	}
	port := np.Spec.Ingress[0].Ports[0].Port.String()
	found := false
	for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
		found = found || p.Name == port
	}
	if !found {
		t.Errorf("NetworkPolicy admits port %q; the agent has no such port", port)
	}
}

// uninstall runs helm uninstall while watching the namespace's Jobs and
// DaemonSets: the pre-delete hook Job (when rendered) is created and
// completes before the DaemonSet (when there is one) is deleted; then
// nothing of the release is left.
func uninstall(t *testing.T, ns string, hook, daemonSet bool, helmArgs ...string) {
	t.Helper()
	c := ctx(t)
	jobs, err := k8s.cs.BatchV1().Jobs(ns).Watch(c, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Stop()
	dss, err := k8s.cs.AppsV1().DaemonSets(ns).Watch(c, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dss.Stop()

	helmRun(t, append([]string{"uninstall", release, "-n", ns}, helmArgs...)...)

	// One etcd: resource versions are its revisions, one order for all
	// kinds. Read what the watches saw, until the DaemonSet's deletion.
	var jobCreated, jobComplete, dsDeleted uint64
	rv := func(o metav1.Object) uint64 {
		v, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatalf("resource version %q: %v", o.GetResourceVersion(), err)
		}
		return v
	}
	// The two watches deliver independently: read both until quiet.
	timeout := time.After(30 * time.Second)
	for quiet := false; !quiet; {
		select {
		case <-time.After(3 * time.Second):
			quiet = true
		case e := <-jobs.ResultChan():
			j, ok := e.Object.(*batchv1.Job)
			if !ok || !strings.HasSuffix(j.Name, "-lift") {
				continue
			}
			if e.Type == watch.Added && jobCreated == 0 {
				jobCreated = rv(j)
				if a := j.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
					t.Errorf("hook Job %s: automountServiceAccountToken %v, want false", j.Name, a)
				}
			}
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue && jobComplete == 0 {
					jobComplete = rv(j)
				}
			}
		case e := <-dss.ResultChan():
			if d, ok := e.Object.(*appsv1.DaemonSet); ok && e.Type == watch.Deleted && d.Name == fullname {
				dsDeleted = rv(d)
			}
		case <-timeout:
			quiet = true
		}
	}
	if daemonSet && dsDeleted == 0 {
		t.Fatalf("no deletion of the DaemonSet seen (hook job created at %d, complete at %d)", jobCreated, jobComplete)
	}
	if !daemonSet {
		dsDeleted = math.MaxUint64
	}
	if hook {
		if jobCreated == 0 || jobComplete == 0 {
			t.Errorf("pre-delete hook Job: created at revision %d, complete at %d; DaemonSet deleted at %d", jobCreated, jobComplete, dsDeleted)
		} else if !(jobCreated < jobComplete && jobComplete < dsDeleted) {
			t.Errorf("order: hook Job created at revision %d, complete at %d, DaemonSet deleted at %d", jobCreated, jobComplete, dsDeleted)
		}
	} else if jobCreated != 0 {
		t.Errorf("a hook Job ran though the values set no kafka.bootstrapServers")
	}

	eventually(t, 60*time.Second, ns+": nothing of the release left", func() error {
		return leftovers(t, ns)
	})
}

// leftovers lists what of the release is still in ns.
func leftovers(t *testing.T, ns string) error {
	c := ctx(t)
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	var left []string
	pods, err := k8s.cs.CoreV1().Pods(ns).List(c, opts)
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		left = append(left, "pod/"+p.Name)
	}
	jobs, err := k8s.cs.BatchV1().Jobs(ns).List(c, opts)
	if err != nil {
		return err
	}
	for _, j := range jobs.Items {
		left = append(left, "job/"+j.Name)
	}
	cms, err := k8s.cs.CoreV1().ConfigMaps(ns).List(c, opts)
	if err != nil {
		return err
	}
	for _, cm := range cms.Items {
		left = append(left, "configmap/"+cm.Name)
	}
	secrets, err := k8s.cs.CoreV1().Secrets(ns).List(c, opts)
	if err != nil {
		return err
	}
	for _, s := range secrets.Items {
		left = append(left, "secret/"+s.Name)
	}
	sas, err := k8s.cs.CoreV1().ServiceAccounts(ns).List(c, opts)
	if err != nil {
		return err
	}
	for _, s := range sas.Items {
		left = append(left, "serviceaccount/"+s.Name)
	}
	for _, r := range []schema.GroupVersionResource{serviceMonitors, podMonitors, prometheusRules} {
		l, err := k8s.dyn.Resource(r).Namespace(ns).List(c, opts)
		if err != nil {
			return err
		}
		for _, o := range l.Items {
			left = append(left, r.Resource+"/"+o.GetName())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left: %s", strings.Join(left, ", "))
	}
	return nil
}
