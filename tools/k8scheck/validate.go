package k8scheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Validate runs per-object and cross-object checks over a set of decoded
// objects (one helm template rendering) and returns every problem found.
func Validate(objs []Object) []error {
	var errs []error
	add := func(o Object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
	}
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = cm
		}
	}
	var pods []podSource // pod templates and sidecar snippets, for monitor checks
	for _, o := range objs {
		switch t := o.Obj.(type) {
		case *corev1.ConfigMap:
			for k := range t.Data {
				if strings.HasSuffix(k, ".json") && !json.Valid([]byte(t.Data[k])) {
					add(o, "data key %q: not valid JSON", k)
				}
			}
			if t.Labels["app.kubernetes.io/component"] == "sidecar-snippet" {
				ps, es := checkSidecarSnippet(t, configMaps)
				for _, e := range es {
					add(o, "%v", e)
				}
				pods = append(pods, ps...)
			}
		case *appsv1.DaemonSet:
			for _, e := range checkPodSpec(&t.Spec.Template.Spec, configMaps) {
				add(o, "%v", e)
			}
			pods = append(pods, podSource{labels: t.Spec.Template.Labels, containers: t.Spec.Template.Spec.Containers})
		case *batchv1.Job:
			for _, e := range checkJob(t, configMaps) {
				add(o, "%v", e)
			}
		case *monitoringv1.PrometheusRule:
			for _, e := range checkRules(t) {
				add(o, "%v", e)
			}
		}
	}
	// Cross-object: services select pods and name their ports; monitors
	// select services or pods and name their ports.
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		svc, ok := o.Obj.(*corev1.Service)
		if !ok {
			continue
		}
		services[svc.Name] = svc
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type == intstr.String && !anyPodHasPort(pods, svc.Spec.Selector, p.TargetPort.StrVal) {
				add(o, "targetPort %q is no container port of a selected pod", p.TargetPort.StrVal)
			}
		}
	}
	for _, o := range objs {
		switch t := o.Obj.(type) {
		case *monitoringv1.ServiceMonitor:
			sel, err := metav1.LabelSelectorAsSelector(&t.Spec.Selector)
			if err != nil || sel.Empty() {
				add(o, "bad or empty selector: %v", err)
				continue
			}
			var matched []*corev1.Service
			for _, s := range services {
				if sel.Matches(labels.Set(s.Labels)) {
					matched = append(matched, s)
				}
			}
			if len(matched) == 0 {
				add(o, "selector %s matches no rendered Service", sel)
			}
			for _, ep := range t.Spec.Endpoints {
				for _, s := range matched {
					if !serviceHasPort(s, ep.Port) {
						add(o, "endpoint port %q not on service %s", ep.Port, s.Name)
					}
				}
			}
		case *networkingv1.NetworkPolicy:
			sel, err := metav1.LabelSelectorAsSelector(&t.Spec.PodSelector)
			if err != nil || sel.Empty() {
				add(o, "bad or empty podSelector: %v", err)
				continue
			}
			var selected []podSource
			for _, p := range pods {
				if p.labels != nil && sel.Matches(labels.Set(p.labels)) {
					selected = append(selected, p)
				}
			}
			if len(selected) == 0 {
				add(o, "podSelector %s selects no rendered pod", sel)
			}
			for _, r := range t.Spec.Ingress {
				for _, p := range r.Ports {
					if p.Port != nil && p.Port.Type == intstr.String && !anyContainerHasPort(selected, p.Port.StrVal) {
						add(o, "ingress port %q is no container port of the selected pods", p.Port.StrVal)
					}
				}
			}
		case *monitoringv1.PodMonitor:
			if len(t.Spec.Selector.MatchLabels) == 0 && len(t.Spec.Selector.MatchExpressions) == 0 {
				add(o, "empty selector")
			}
			for _, ep := range t.Spec.PodMetricsEndpoints {
				if ep.Port == nil || *ep.Port == "" {
					add(o, "podMetricsEndpoint without a port name")
					continue
				}
				if !anyContainerHasPort(pods, *ep.Port) {
					add(o, "endpoint port %q is no container port of the agent", *ep.Port)
				}
			}
		}
	}
	return errs
}

type podSource struct {
	labels     map[string]string
	containers []corev1.Container
}

func serviceHasPort(s *corev1.Service, name string) bool {
	for _, p := range s.Spec.Ports {
		if name != "" && p.Name == name {
			return true
		}
	}
	return false
}

func anyPodHasPort(pods []podSource, selector map[string]string, port string) bool {
	for _, p := range pods {
		if p.labels != nil && labels.SelectorFromSet(selector).Matches(labels.Set(p.labels)) && containersHavePort(p.containers, port) {
			return true
		}
	}
	return false
}

func anyContainerHasPort(pods []podSource, port string) bool {
	for _, p := range pods {
		if containersHavePort(p.containers, port) {
			return true
		}
	}
	return false
}

func containersHavePort(cs []corev1.Container, port string) bool {
	for _, c := range cs {
		for _, p := range c.Ports {
			if p.Name == port {
				return true
			}
		}
	}
	return false
}

// checkRules parses every rule expression of a PrometheusRule.
func checkRules(r *monitoringv1.PrometheusRule) []error {
	var errs []error
	p := parser.NewParser(parser.Options{})
	if len(r.Spec.Groups) == 0 {
		errs = append(errs, errors.New("no rule groups"))
	}
	for _, g := range r.Spec.Groups {
		if len(g.Rules) == 0 {
			errs = append(errs, fmt.Errorf("group %q has no rules", g.Name))
		}
		for _, rule := range g.Rules {
			if _, err := p.ParseExpr(rule.Expr.String()); err != nil {
				errs = append(errs, fmt.Errorf("group %q rule %q: %w", g.Name, rule.Alert, err))
			}
			if rule.Alert == "" && rule.Record == "" {
				errs = append(errs, fmt.Errorf("group %q: rule without alert or record name", g.Name))
			}
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// underAny reports whether p (a path or glob) lies at or below one of dirs.
func underAny(p string, dirs []string) bool {
	// For a glob, the fixed prefix up to the first wildcard must be mounted.
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		p = path.Dir(p[:i] + "x")
	}
	p = path.Clean(p)
	for _, d := range dirs {
		d = path.Clean(d)
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
