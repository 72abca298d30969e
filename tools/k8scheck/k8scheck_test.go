package k8scheck

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// good is a minimal DaemonSet + ConfigMap pair that passes every check;
// each case below breaks one thing.
const goodConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kdg
  namespace: kafka
data:
  config.yaml: |
    logDirs: [/var/lib/kafka/data]
    capacityBytes: 0
    enforcer: {enabled: false, profile: cloud, protection: {strategy: acl}}
    web: {listenAddress: ":9644"}
    metrics: {perPartition: false}
`

const goodDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kdg
  namespace: kafka
  labels: {app: kdg}
spec:
  selector:
    matchLabels: {app: kdg}
  template:
    metadata:
      labels: {app: kdg}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
        - name: agent
          image: example/kdg:1
          args: [run, --config=/etc/kafka-disk-guard/config.yaml]
          ports: [{name: http-metrics, containerPort: 9644}]
          livenessProbe: {httpGet: {path: /healthz, port: http-metrics}}
          readinessProbe: {httpGet: {path: /readyz, port: http-metrics}}
          resources:
            requests: {cpu: 50m, memory: 64Mi}
            limits: {cpu: 500m, memory: 256Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: config, mountPath: /etc/kafka-disk-guard/config.yaml, subPath: config.yaml, readOnly: true}
            - {name: data, mountPath: /var/lib/kafka/data, readOnly: true}
      volumes:
        - {name: config, configMap: {name: kdg}}
        - {name: data, hostPath: {path: /var/lib/kafka/data, type: Directory}}
`

func check(t *testing.T, manifests string) []string {
	t.Helper()
	docs, err := SplitDocuments(strings.NewReader(manifests))
	if err != nil {
		t.Fatal(err)
	}
	var objs []Object
	var problems []string
	for _, d := range docs {
		o, err := Decode(d)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		objs = append(objs, o)
	}
	for _, e := range Validate(objs) {
		problems = append(problems, e.Error())
	}
	return problems
}

func TestValidManifestsPass(t *testing.T) {
	if p := check(t, goodConfigMap+"---\n# comment only\n---\n"+goodDaemonSet); len(p) != 0 {
		t.Fatalf("problems in valid manifests: %v", p)
	}
}

func TestProblemsAreFound(t *testing.T) {
	tests := []struct {
		name      string
		configMap string
		daemonSet string
		want      string
	}{
		{"unknown field", goodConfigMap, strings.Replace(goodDaemonSet, "image: example/kdg:1", "image: example/kdg:1\n          imagePullPolicyy: Always", 1), `unknown field "spec.template.spec.containers[0].imagePullPolicyy"`},
		{"case-mismatched field", goodConfigMap, strings.Replace(goodDaemonSet, "readOnlyRootFilesystem", "readonlyRootFilesystem", 1), "readonlyRootFilesystem"},
		{"duplicate key", goodConfigMap, strings.Replace(goodDaemonSet, "  name: kdg\n  namespace", "  name: kdg\n  name: kdg2\n  namespace", 1), `key "name" already set`},
		{"unknown kind", goodConfigMap, strings.Replace(goodDaemonSet, "kind: DaemonSet", "kind: Deployment", 1), "unsupported kind"},
		{"bad quantity", goodConfigMap, strings.Replace(goodDaemonSet, "memory: 64Mi", "memory: 64MB!", 1), "quantities must match"},
		{"probe on unknown port", goodConfigMap, strings.Replace(goodDaemonSet, "path: /readyz, port: http-metrics", "path: /readyz, port: metrics", 1), `readinessProbe port "metrics" is no container port`},
		{"unknown config field", strings.Replace(goodConfigMap, "capacityBytes: 0", "capacity: 0", 1), goodDaemonSet, "field capacity not found"},
		{"log dir not mounted", strings.Replace(goodConfigMap, "[/var/lib/kafka/data]", "[/data/kafka]", 1), goodDaemonSet, `log dir "/data/kafka" is not under a read-only mount`},
		{"bad profile", strings.Replace(goodConfigMap, "profile: cloud", "profile: hybrid", 1), goodDaemonSet, `enforcer.profile "hybrid"`},
		{"password file not mounted", strings.Replace(goodConfigMap, "capacityBytes: 0", "capacityBytes: 0\n    kafka: {bootstrapServers: [k:9092], sasl: {mechanism: PLAIN, username: u, passwordFile: /etc/kafka-disk-guard/secrets/sasl-password}}", 1), goodDaemonSet, "is not a mounted secret file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := check(t, tt.configMap+"---\n"+tt.daemonSet)
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Fatalf("want a problem containing %q, got %q", tt.want, problems)
		})
	}
}

func TestUnderAny(t *testing.T) {
	dirs := []string{"/var/lib/kubelet/pods", "/mnt/disks/kafka-0"}
	tests := []struct {
		path string
		want bool
	}{
		{"/var/lib/kubelet/pods/*/volumes/*/*/kafka-log*", true},
		{"/var/lib/kubelet/pods", true},
		{"/var/lib/kubelet/podsX/a", false},
		{"/mnt/disks/kafka-0/kafka-log0", true},
		{"/mnt/disks/kafka-*/kafka-log0", false}, // fixed prefix /mnt/disks is not mounted
		{"/var/lib/kafka/data", false},
	}
	for _, tt := range tests {
		if got := underAny(tt.path, dirs); got != tt.want {
			t.Errorf("underAny(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestConfigExampleHasTheChartsShape: deploy/config.example.yaml (for VMs)
// and the chart's rendered config share one shape, decoded strictly.
func TestConfigExampleHasTheChartsShape(t *testing.T) {
	data, err := os.ReadFile("../../deploy/config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg agentConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if len(cfg.LogDirs) == 0 || cfg.Kafka == nil || cfg.Kafka.SASL == nil || cfg.Enforcer.Enabled || cfg.Web.ListenAddress != ":9644" {
		t.Fatalf("unexpected example config: %+v", cfg)
	}
}

const goodNetworkPolicy = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: kdg
  namespace: kafka
spec:
  podSelector:
    matchLabels: {app: kdg}
  policyTypes: [Ingress]
  ingress:
    - ports: [{port: http-metrics, protocol: TCP}]
`

// A NetworkPolicy must select the agents and open ports they have.
func TestNetworkPolicy(t *testing.T) {
	base := goodConfigMap + "---\n" + goodDaemonSet + "---\n"
	if p := check(t, base+goodNetworkPolicy); len(p) != 0 {
		t.Fatalf("problems in a valid policy: %v", p)
	}
	for _, tt := range []struct{ name, policy, want string }{
		{"selects nothing", strings.Replace(goodNetworkPolicy, "matchLabels: {app: kdg}", "matchLabels: {app: other}", 1), "selects no rendered pod"},
		{"unknown port", strings.Replace(goodNetworkPolicy, "port: http-metrics", "port: metrics", 1), `ingress port "metrics" is no container port`},
		{"unknown field", strings.Replace(goodNetworkPolicy, "policyTypes", "policyType", 1), "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range check(t, base+tt.policy) {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Fatalf("want a problem containing %q", tt.want)
		})
	}
}

const goodJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: kdg-lift
  namespace: kafka
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 2
  activeDeadlineSeconds: 300
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
        - name: lift
          image: example/kdg:1
          args: [protection, lift, --all, --config=/etc/kafka-disk-guard/config.yaml]
          resources:
            requests: {cpu: 10m, memory: 32Mi}
            limits: {cpu: 200m, memory: 128Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: config, mountPath: /etc/kafka-disk-guard/config.yaml, subPath: config.yaml, readOnly: true}
      volumes:
        - {name: config, configMap: {name: kdg}}
`

// The uninstall hook: a pre-delete Job lifting protection with the agent's
// config, locked down like the agent.
func TestUninstallHookJob(t *testing.T) {
	base := goodConfigMap + "---\n" + goodDaemonSet + "---\n"
	if p := check(t, base+goodJob); len(p) != 0 {
		t.Fatalf("problems in a valid Job: %v", p)
	}
	for _, tt := range []struct{ name, job, want string }{
		{"no deadline", strings.Replace(goodJob, "  activeDeadlineSeconds: 300\n", "", 1), "no activeDeadlineSeconds"},
		{"runs something else", strings.Replace(goodJob, "[protection, lift, --all,", "[protection, status,", 1), "do not run protection lift --all"},
		{"config not mounted", strings.Replace(goodJob, "{name: config, mountPath: /etc/kafka-disk-guard/config.yaml, subPath: config.yaml, readOnly: true}", "{name: config, mountPath: /etc/other, readOnly: true}", 1), "mounts no config.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range check(t, base+tt.job) {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Fatalf("want a problem containing %q", tt.want)
		})
	}
}
