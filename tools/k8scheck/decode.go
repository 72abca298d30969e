// Package k8scheck checks rendered Kubernetes manifests offline for what a
// real API server does not: every object is decoded strictly (unknown,
// duplicate and case-mismatched fields are errors; the API server only
// warns about unknown fields and drops them), the agent's config file is
// decoded strictly and checked against the container's mounts (log dirs
// under read-only mounts, secret files mounted), names that refer across
// objects resolve (probe, Service, ServiceMonitor, PodMonitor and
// NetworkPolicy ports), the PrometheusRule's expressions parse as PromQL,
// dashboards are JSON, the uninstall hook runs `protection lift --all` with
// a deadline, host and mount paths are absolute.
//
// What the API server validates (names, labels, volume and port syntax,
// requests under limits, selectors matching templates, restart policies),
// and what the docs promise of the stored objects (security contexts,
// resources, probes, read-only mounts, Pod Security, no token, the hook's
// order), is checked on a real control plane: tools/k8s/charttest.
package k8scheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Object is one decoded manifest.
type Object struct {
	GVK  schema.GroupVersionKind
	Name string
	Obj  any // pointer to the typed object
}

// String names the object for error messages.
func (o Object) String() string { return o.GVK.Kind + "/" + o.Name }

// SplitDocuments splits a multi-document YAML stream, dropping empty
// documents (helm template emits comments-only ones).
func SplitDocuments(r io.Reader) ([][]byte, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		d, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split yaml documents: %w", err)
		}
		if isEmptyDoc(d) {
			continue
		}
		docs = append(docs, d)
	}
}

func isEmptyDoc(d []byte) bool {
	for _, line := range strings.Split(string(d), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && t != "---" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// newTyped returns an empty typed object for a GroupVersionKind this chart
// may render; anything else is an error (strict: no unknown kinds).
func newTyped(gvk schema.GroupVersionKind) (any, error) {
	switch gvk {
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		return &corev1.ConfigMap{}, nil
	case corev1.SchemeGroupVersion.WithKind("Secret"):
		return &corev1.Secret{}, nil
	case corev1.SchemeGroupVersion.WithKind("Service"):
		return &corev1.Service{}, nil
	case corev1.SchemeGroupVersion.WithKind("ServiceAccount"):
		return &corev1.ServiceAccount{}, nil
	case appsv1.SchemeGroupVersion.WithKind("DaemonSet"):
		return &appsv1.DaemonSet{}, nil
	case batchv1.SchemeGroupVersion.WithKind("Job"):
		return &batchv1.Job{}, nil
	case monitoringv1.SchemeGroupVersion.WithKind("ServiceMonitor"):
		return &monitoringv1.ServiceMonitor{}, nil
	case monitoringv1.SchemeGroupVersion.WithKind("PodMonitor"):
		return &monitoringv1.PodMonitor{}, nil
	case monitoringv1.SchemeGroupVersion.WithKind("PrometheusRule"):
		return &monitoringv1.PrometheusRule{}, nil
	case networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("unsupported kind %s", gvk)
}

// StrictUnmarshal converts YAML to JSON (rejecting duplicate keys) and
// decodes it into v, rejecting unknown and case-mismatched fields the way
// the API server's strict field validation does.
func StrictUnmarshal(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return fmt.Errorf("yaml to json: %w", err)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("strict decoding: %w", errors.Join(strictErrs...))
	}
	return nil
}

// Decode strictly decodes one manifest.
func Decode(doc []byte) (Object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return Object{}, fmt.Errorf("read type meta: %w", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return Object{}, fmt.Errorf("document without apiVersion/kind: %.80q", bytes.TrimSpace(doc))
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return Object{}, fmt.Errorf("apiVersion %q: %w", tm.APIVersion, err)
	}
	o := Object{GVK: gv.WithKind(tm.Kind), Name: tm.Metadata.Name}
	typed, err := newTyped(o.GVK)
	if err != nil {
		return o, fmt.Errorf("%s: %w", o, err)
	}
	if err := StrictUnmarshal(doc, typed); err != nil {
		return o, fmt.Errorf("%s: %w", o, err)
	}
	o.Obj = typed
	return o, nil
}
