// Command kdg-nodesim stands in for the kubelets of the test control plane
// (scripts/k8s.sh): it registers simulated nodes, keeps them Ready (a
// heartbeat on their Lease and their Ready condition) and plays the kubelet's
// part for the pods bound to them. Nothing runs: a pod of a Job is reported
// Succeeded at once, every other pod Running and Ready; a pod being deleted
// is removed as soon as it is marked (grace period 0).
//
//	kdg-nodesim -kubeconfig KUBECONFIG \
//	    -node 'kdg-broker-1:kafka-pool=brokers' \
//	    -node 'kdg-broker-3:kafka-pool=brokers:dedicated=kafka:NoSchedule' \
//	    -node kdg-worker-1
//
// A -node value is NAME[:LABEL=VALUE,...[:KEY=VALUE:EFFECT]] (labels, then
// one taint). It stops on SIGINT or SIGTERM and leaves the nodes registered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// heartbeat is how often a node renews its Lease and Ready condition; the
// node lifecycle controller marks a node unreachable after 40 s without.
const heartbeat = 10 * time.Second

type nodeFlags []string

func (n *nodeFlags) String() string     { return strings.Join(*n, " ") }
func (n *nodeFlags) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	var nodes nodeFlags
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	flag.Var(&nodes, "node", "a simulated node: NAME[:LABEL=VALUE,...[:KEY=VALUE:EFFECT]] (repeatable)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*kubeconfig, nodes, log); err != nil {
		log.Error("kdg-nodesim", "err", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, specs []string, log *slog.Logger) error {
	if len(specs) == 0 {
		return errors.New("no -node given")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	s := &sim{cs: cs, log: log, nodes: map[string]*corev1.Node{}}
	for i, spec := range specs {
		n, err := parseNode(spec, i)
		if err != nil {
			return err
		}
		if err := s.register(ctx, n); err != nil {
			return err
		}
		s.nodes[n.Name] = n
	}
	go s.heartbeats(ctx)

	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.pod(ctx, o) },
		UpdateFunc: func(_, o any) { s.pod(ctx, o) },
	}); err != nil {
		return fmt.Errorf("pod handler: %w", err)
	}
	factory.Start(ctx.Done())
	log.Info("nodes ready", "nodes", len(s.nodes))
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// parseNode reads NAME[:LABELS[:KEY=VALUE:EFFECT]].
func parseNode(spec string, i int) (*corev1.Node, error) {
	parts := strings.SplitN(spec, ":", 3)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: parts[0], Labels: map[string]string{
		"kubernetes.io/hostname": parts[0],
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kdg-nodesim",
	}}}
	if parts[0] == "" {
		return nil, fmt.Errorf("node %q: no name", spec)
	}
	if len(parts) > 1 && parts[1] != "" {
		for _, kv := range strings.Split(parts[1], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("node %q: label %q is not KEY=VALUE", spec, kv)
			}
			n.Labels[k] = v
		}
	}
	if len(parts) > 2 {
		kv, effect, ok := strings.Cut(parts[2], ":")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			return nil, fmt.Errorf("node %q: taint %q is not KEY=VALUE:EFFECT", spec, parts[2])
		}
		n.Spec.Taints = []corev1.Taint{{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}}
	}
	n.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", i+10)},
			{Type: corev1.NodeHostName, Address: parts[0]},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
			ContainerRuntimeVersion: "kdg-nodesim://0",
		},
		Phase: corev1.NodeRunning,
	}
	n.Status.Allocatable = n.Status.Capacity
	return n, nil
}

type sim struct {
	cs    kubernetes.Interface
	log   *slog.Logger
	nodes map[string]*corev1.Node
}

// register creates the node (or takes over one of the same name) and
// reports it Ready.
func (s *sim) register(ctx context.Context, want *corev1.Node) error {
	got, err := s.cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = s.cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", want.Name, err)
	}
	_ = got
	return s.beat(ctx, want)
}

func (s *sim) heartbeats(ctx context.Context) {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, n := range s.nodes {
			if err := s.beat(ctx, n); err != nil && ctx.Err() == nil {
				s.log.Warn("heartbeat", "node", n.Name, "err", err)
			}
		}
	}
}

// beat renews the node's Lease and sets its conditions: Ready, no pressure.
func (s *sim) beat(ctx context.Context, want *corev1.Node) error {
	now := metav1.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := want.Status.DeepCopy()
		cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason string) corev1.NodeCondition {
			return corev1.NodeCondition{Type: t, Status: status, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
		}
		st.Conditions = []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
		}
		for i, c := range st.Conditions {
			for _, old := range n.Status.Conditions {
				if old.Type == c.Type && old.Status == c.Status {
					st.Conditions[i].LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		n.Status = *st
		_, err = s.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	leases := s.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	renew := metav1.NewMicroTime(now.Time)
	holder, duration := want.Name, int32(40)
	l, err := leases.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: want.Name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &renew},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &duration, &renew
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// pod plays the kubelet for a pod bound to a simulated node.
func (s *sim) pod(ctx context.Context, o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	n, ok := s.nodes[p.Spec.NodeName]
	if !ok {
		return
	}
	if p.DeletionTimestamp != nil {
		zero := int64(0)
		err := s.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.log.Warn("delete pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		return
	}
	if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return
	}
	st := s.status(p, n)
	p = p.DeepCopy()
	p.Status = st
	if _, err := s.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil &&
		!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		s.log.Warn("pod status", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
}

// status is what a kubelet would report once the pod's containers started
// (or, for a Job's pod, exited 0).
func (s *sim) status(p *corev1.Pod, n *corev1.Node) corev1.PodStatus {
	now := metav1.Now()
	job := false
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "Job" {
			job = true
		}
	}
	hostIP := n.Status.Addresses[0].Address
	st := corev1.PodStatus{
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     "10.244." + strings.TrimPrefix(hostIP, "10.0."),
		StartTime: &now,
		QOSClass:  p.Status.QOSClass,
	}
	st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	ready := corev1.ConditionTrue
	st.Phase = corev1.PodRunning
	if job {
		st.Phase = corev1.PodSucceeded
		ready = corev1.ConditionFalse
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
		if t == corev1.PodReady || t == corev1.ContainersReady {
			c.Status = ready
		}
		st.Conditions = append(st.Conditions, c)
	}
	for _, c := range p.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "kdg-nodesim://" + string(p.UID) + "/" + c.Name}
		if job {
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}
		} else {
			started := true
			cs.Ready, cs.Started = true, &started
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return st
}
