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
	v := validation{configMaps: map[string]*corev1.ConfigMap{}, services: map[string]*corev1.Service{}}
	for _, o := range objs {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok {
			v.configMaps[cm.Name] = cm
		}
	}
	for _, o := range objs {
		v.object(o)
	}
	// Cross-object: services select pods and name their ports; monitors
	// select services or pods and name their ports.
	for _, o := range objs {
		if svc, ok := o.Obj.(*corev1.Service); ok {
			v.service(o, svc)
		}
	}
	for _, o := range objs {
		switch t := o.Obj.(type) {
		case *monitoringv1.ServiceMonitor:
			v.serviceMonitor(o, t)
		case *networkingv1.NetworkPolicy:
			v.networkPolicy(o, t)
		case *monitoringv1.PodMonitor:
			v.podMonitor(o, t)
		}
	}
	return v.errs
}

// validation is one Validate run: the problems found and what the
// cross-object checks look up.
type validation struct {
	errs       []error
	configMaps map[string]*corev1.ConfigMap
	pods       []podSource // pod templates and sidecar snippets, for monitor checks
	services   map[string]*corev1.Service
}

func (v *validation) add(o Object, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
}

func (v *validation) addAll(o Object, errs []error) {
	for _, e := range errs {
		v.add(o, "%v", e)
	}
}

// object runs the checks of one object on its own, and collects the pods.
func (v *validation) object(o Object) {
	switch t := o.Obj.(type) {
	case *corev1.ConfigMap:
		for k := range t.Data {
			if strings.HasSuffix(k, ".json") && !json.Valid([]byte(t.Data[k])) {
				v.add(o, "data key %q: not valid JSON", k)
			}
		}
		if t.Labels["app.kubernetes.io/component"] == "sidecar-snippet" {
			ps, es := checkSidecarSnippet(t, v.configMaps)
			v.addAll(o, es)
			v.pods = append(v.pods, ps...)
		}
	case *appsv1.DaemonSet:
		v.addAll(o, checkPodSpec(&t.Spec.Template.Spec, v.configMaps))
		v.pods = append(v.pods, podSource{labels: t.Spec.Template.Labels, containers: t.Spec.Template.Spec.Containers})
	case *batchv1.Job:
		v.addAll(o, checkJob(t, v.configMaps))
	case *monitoringv1.PrometheusRule:
		v.addAll(o, checkRules(t))
	}
}

// service checks that a service's named target ports are container ports
// of the pods it selects.
func (v *validation) service(o Object, svc *corev1.Service) {
	v.services[svc.Name] = svc
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type == intstr.String && !anyPodHasPort(v.pods, svc.Spec.Selector, p.TargetPort.StrVal) {
			v.add(o, "targetPort %q is no container port of a selected pod", p.TargetPort.StrVal)
		}
	}
}

// serviceMonitor checks that a ServiceMonitor selects rendered services
// and names their ports.
func (v *validation) serviceMonitor(o Object, t *monitoringv1.ServiceMonitor) {
	sel, err := metav1.LabelSelectorAsSelector(&t.Spec.Selector)
	if err != nil || sel.Empty() {
		v.add(o, "bad or empty selector: %v", err)
		return
	}
	var matched []*corev1.Service
	for _, s := range v.services {
		if sel.Matches(labels.Set(s.Labels)) {
			matched = append(matched, s)
		}
	}
	if len(matched) == 0 {
		v.add(o, "selector %s matches no rendered Service", sel)
	}
	for _, ep := range t.Spec.Endpoints {
		for _, s := range matched {
			if !serviceHasPort(s, ep.Port) {
				v.add(o, "endpoint port %q not on service %s", ep.Port, s.Name)
			}
		}
	}
}

// networkPolicy checks that a NetworkPolicy selects rendered pods and
// names their container ports.
func (v *validation) networkPolicy(o Object, t *networkingv1.NetworkPolicy) {
	sel, err := metav1.LabelSelectorAsSelector(&t.Spec.PodSelector)
	if err != nil || sel.Empty() {
		v.add(o, "bad or empty podSelector: %v", err)
		return
	}
	var selected []podSource
	for _, p := range v.pods {
		if p.labels != nil && sel.Matches(labels.Set(p.labels)) {
			selected = append(selected, p)
		}
	}
	if len(selected) == 0 {
		v.add(o, "podSelector %s selects no rendered pod", sel)
	}
	for _, r := range t.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.Type == intstr.String && !anyContainerHasPort(selected, p.Port.StrVal) {
				v.add(o, "ingress port %q is no container port of the selected pods", p.Port.StrVal)
			}
		}
	}
}

// podMonitor checks that a PodMonitor has a selector and names container
// ports of the agent.
func (v *validation) podMonitor(o Object, t *monitoringv1.PodMonitor) {
	if len(t.Spec.Selector.MatchLabels) == 0 && len(t.Spec.Selector.MatchExpressions) == 0 {
		v.add(o, "empty selector")
	}
	for _, ep := range t.Spec.PodMetricsEndpoints {
		if ep.Port == nil || *ep.Port == "" {
			v.add(o, "podMetricsEndpoint without a port name")
			continue
		}
		if !anyContainerHasPort(v.pods, *ep.Port) {
			v.add(o, "endpoint port %q is no container port of the agent", *ep.Port)
		}
	}
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
