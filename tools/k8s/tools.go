//go:build tools

// Package k8s pins the Kubernetes control plane that scripts/k8s.sh builds
// for the chart tests: kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl of k8s.io/kubernetes, built with go build from
// this module (etcd is the module in etcd/).
package k8s

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
