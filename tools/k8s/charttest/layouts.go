// Package charttest holds the chart tests on a real control plane; see
// main_integration_test.go. This file names the layouts the docs describe.
package charttest

// The simulated nodes of scripts/k8s.sh (its default KDG_K8S_NODES).
const (
	broker1 = "kdg-broker-1" // kafka-pool=brokers, node-role.example.com/kafka=true
	broker2 = "kdg-broker-2" // the same
	broker3 = "kdg-broker-3" // the same, tainted dedicated=kafka:NoSchedule
	worker1 = "kdg-worker-1" // no label, no taint
)

// toleration is the change the upgrades make to reach the tainted broker
// node (the tolerations of charts/kafka-disk-guard/ci/hostpath-values.yaml).
var toleration = []string{
	"--set", "tolerations[0].key=dedicated", "--set", "tolerations[0].operator=Equal",
	"--set", "tolerations[0].value=kafka", "--set", "tolerations[0].effect=NoSchedule",
}

// layout is one DaemonSet layout of the docs: the values block as written,
// the Secrets it refers to (made by Strimzi, by Bitnami or by the user),
// where the agents must run, and an upgrade with a changed value.
type layout struct {
	name        string // the test's namespace: kdg-<name>
	doc, marker string // the doc and a line of its values block
	kubeletPods bool   // dataLayout.type kubeletPods (else hostPath)
	secrets     map[string]map[string]string
	nodes       []string // where the agents run after install
	upgrade     []string // helm upgrade arguments after the values file
	upgraded    []string // where they run after the upgrade
	hook        bool     // the values render the uninstall hook (kafka.bootstrapServers set)
}

const (
	sidecarDoc    = "docs/operating.md"
	sidecarMarker = "--set mode=sidecar"
)

var strimziSecrets = map[string]map[string]string{
	"kafka-disk-guard":           {"password": "guard-secret"}, // the KafkaUser's
	"my-cluster-cluster-ca-cert": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"},
}

var layouts = []layout{
	{
		// No nodeSelector: an agent on every node without a taint.
		name: "readme-strimzi", doc: "README.md", marker: "# my-values.yaml",
		kubeletPods: true, secrets: strimziSecrets, hook: true,
		nodes:    []string{broker1, broker2, worker1},
		upgrade:  toleration,
		upgraded: []string{broker1, broker2, broker3, worker1},
	},
	{
		name: "strimzi", doc: "docs/operating.md", marker: "# strimzi-values.yaml",
		kubeletPods: true, secrets: strimziSecrets, hook: true,
		nodes:    []string{broker1, broker2},
		upgrade:  toleration,
		upgraded: []string{broker1, broker2, broker3},
	},
	{
		name: "bitnami", doc: "docs/operating.md", marker: "# bitnami-values.yaml",
		kubeletPods: true, hook: true,
		secrets:  map[string]map[string]string{"kafka-disk-guard-credentials": {"sasl-password": "guard-secret"}},
		nodes:    []string{broker1, broker2, worker1},
		upgrade:  []string{"--set", "nodeSelector.kafka-pool=brokers"},
		upgraded: []string{broker1, broker2},
	},
	{
		// hostPath and local PersistentVolumes: the same values.
		name: "hostpath", doc: "docs/operating.md", marker: "paths: [/mnt/disks/kafka-0]",
		nodes:    []string{broker1, broker2},
		upgrade:  append([]string{"--set", "networkPolicy.enabled=true"}, toleration...),
		upgraded: []string{broker1, broker2, broker3},
	},
}
