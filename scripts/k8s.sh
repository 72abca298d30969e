#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, without containers, for the
# chart tests (tools/k8s/charttest) and for trying the chart by hand.
#
#   scripts/k8s.sh build                 build the binaries once into the cache; prints their dir
#   scripts/k8s.sh up   [--dir DIR] [--port N]   start it, wait until it serves; prints KUBECONFIG
#   scripts/k8s.sh env    --dir DIR      prints `export KUBECONFIG=...` and PATH (kubectl, helm)
#   scripts/k8s.sh status --dir DIR      exit 0 when every process runs and the API answers
#   scripts/k8s.sh down   --dir DIR      stop every process (the data in DIR stays)
#
# What runs (each a plain process; logs and pids in DIR):
#   etcd                     go.etcd.io/etcd/server/v3 v3.7.3 (embed, tools/k8s/etcd), PORT and PORT+1
#   kube-apiserver           k8s.io/kubernetes v1.37.2, https://127.0.0.1:PORT+2, the default
#                            admission plugins (PodSecurity included), RBAC, client certificates
#                            and service-account keys generated with openssl into DIR/pki
#   kube-controller-manager  the same module (DaemonSet, Job, garbage collector, node lifecycle...)
#   kube-scheduler           the same module
#   kdg-nodesim              simulated nodes (tools/k8s/cmd/kdg-nodesim): Node objects with a
#                            heartbeat, pods bound to them reported Running (a Job's: Succeeded);
#                            no kubelet, so nothing runs, no volume is mounted, no probe is made
# and the Prometheus Operator's CRDs (ServiceMonitor, PodMonitor, PrometheusRule) from the Go
# module github.com/prometheus-operator/prometheus-operator (example/prometheus-operator-crd).
#
# Nodes (KDG_K8S_NODES overrides; NAME[:LABELS[:TAINT]] each, see kdg-nodesim):
#   kdg-broker-1, kdg-broker-2  labels kafka-pool=brokers, node-role.example.com/kafka=true
#   kdg-broker-3                the same labels, tainted dedicated=kafka:NoSchedule
#   kdg-worker-1                no label, no taint
#
# Options for up (each also an environment variable):
#   --dir DIR    KDG_K8S_DIR    work dir (pki, kubeconfig, etcd data, logs, pids) [/tmp/kdg-k8s]
#   --port N     KDG_K8S_PORT   base port [16440]: etcd N, N+1; API server N+2;
#                               controller manager N+3; scheduler N+4
#
# The binaries are built with `go build` from the Go module proxy (no release
# downloads) into KDG_CACHE/bin/k8s-<versions> (default ~/.cache/kafka-disk-guard):
# a few minutes once (on 2 shared cores), then reused. kubectl and helm
# (scripts/tools.sh) come along for manual tries.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$here/.." && pwd)
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
PROMOP_VERSION=v0.85.0
CACHE=${KDG_CACHE:-$HOME/.cache/kafka-disk-guard}
KBIN=$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION
MOD=$ROOT/tools/k8s
DIR=${KDG_K8S_DIR:-/tmp/kdg-k8s}
PORT=${KDG_K8S_PORT:-16440}
NODES=${KDG_K8S_NODES:-"kdg-broker-1:kafka-pool=brokers,node-role.example.com/kafka=true kdg-broker-2:kafka-pool=brokers,node-role.example.com/kafka=true kdg-broker-3:kafka-pool=brokers,node-role.example.com/kafka=true:dedicated=kafka:NoSchedule kdg-worker-1"}
PROCS="etcd kube-apiserver kube-controller-manager kube-scheduler kdg-nodesim"

die() { echo "k8s.sh: $*" >&2; exit 1; }
step() { printf '==> %s\n' "$*" >&2; }

build() {
	if [ -f "$KBIN/complete" ]; then
		echo "$KBIN"
		return
	fi
	mkdir -p "$KBIN"
	local start=$SECONDS minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	step "building etcd $ETCD_VERSION and Kubernetes $K8S_VERSION into $KBIN (once; several minutes)"
	(cd "$MOD/etcd" && go build -trimpath -ldflags "-s -w" -o "$KBIN/etcd" .) >&2 || die "build etcd"
	# Without the version Helm sees v0.0.0 and refuses the chart's kubeVersion.
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION
		-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
		-X k8s.io/component-base/version.gitTreeState=clean"
	(cd "$MOD" && go build -trimpath -ldflags "$ld" -o "$KBIN/" k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubectl) >&2 || die "build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl"
	echo "built in $((SECONDS - start)) s" >"$KBIN/complete"
	step "built in $((SECONDS - start)) s"
	echo "$KBIN"
}

parse() {
	while [ $# -gt 0 ]; do
		case $1 in
		--dir) DIR=$2; shift 2 ;;
		--port) PORT=$2; shift 2 ;;
		*) die "unknown option $1" ;;
		esac
	done
	DIR=$(mkdir -p "$DIR" && cd "$DIR" && pwd)
}

running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

start() { # NAME BINARY ARGS...
	local name=$1
	shift
	nohup "$@" >"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/$name.pid"
}

pki() {
	local p=$DIR/pki
	[ -f "$p/admin.crt" ] && return
	mkdir -p "$p"
	(
		cd "$p"
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kdg-test-ca" \
			-keyout ca.key -out ca.crt
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile apiserver.ext -out apiserver.crt
		# The user of every component and of the tests: system:masters.
		openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kdg-admin" -keyout admin.key -out admin.csr
		printf 'extendedKeyUsage=clientAuth\n' >admin.ext
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile admin.ext -out admin.crt
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) >"$DIR/pki.log" 2>&1 || die "openssl (see $DIR/pki.log)"
}

kubeconfig() {
	cat >"$DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kdg-test
  cluster: {server: "https://127.0.0.1:$((PORT + 2))", certificate-authority: "$DIR/pki/ca.crt"}
users:
- name: kdg-admin
  user: {client-certificate: "$DIR/pki/admin.crt", client-key: "$DIR/pki/admin.key"}
contexts:
- name: kdg-test
  context: {cluster: kdg-test, user: kdg-admin}
current-context: kdg-test
EOF
}

wait_for() { # WHAT SECONDS COMMAND...
	local what=$1 deadline=$((SECONDS + $2))
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "$what not ready after ${deadline}s (logs in $DIR)"
		sleep 0.5
	done
}

up() {
	parse "$@"
	for p in $PROCS; do running "$p" && die "$p already runs from $DIR (pid $(cat "$DIR/$p.pid"))"; done
	local bin start=$SECONDS
	bin=$(build)
	mkdir -p "$DIR/bin"
	(cd "$MOD" && go build -o "$DIR/bin/kdg-nodesim" ./cmd/kdg-nodesim) || die "build kdg-nodesim"
	pki
	kubeconfig
	local p=$DIR/pki kc=$DIR/kubeconfig kubectl=$bin/kubectl

	start etcd "$bin/etcd" -data-dir "$DIR/etcd" \
		-listen-client-url "http://127.0.0.1:$PORT" -listen-peer-url "http://127.0.0.1:$((PORT + 1))"
	wait_for etcd 60 grep -q 'etcd ready' "$DIR/etcd.log"

	start kube-apiserver "$bin/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$PORT" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$((PORT + 2)) \
		--tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
		--client-ca-file="$p/ca.crt" --authorization-mode=Node,RBAC \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
		--service-cluster-ip-range=10.96.0.0/16 --endpoint-reconciler-type=none \
		--enable-priority-and-fairness=false --profiling=false
	wait_for kube-apiserver 120 "$kubectl" --kubeconfig "$kc" get --raw /readyz

	start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$kc" \
		--authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --secure-port=$((PORT + 3)) --leader-elect=false \
		--service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
		--cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
		--profiling=false
	start kube-scheduler "$bin/kube-scheduler" --kubeconfig="$kc" \
		--authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --secure-port=$((PORT + 4)) --leader-elect=false --profiling=false
	local nodeflags=()
	for n in $NODES; do nodeflags+=(-node "$n"); done
	start kdg-nodesim "$DIR/bin/kdg-nodesim" -kubeconfig "$kc" "${nodeflags[@]}"

	local crds
	crds=$(cd "$MOD" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMOP_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$crds/example/prometheus-operator-crd" ] || die "prometheus-operator $PROMOP_VERSION: no example/prometheus-operator-crd"
	for k in servicemonitors podmonitors prometheusrules; do
		"$kubectl" --kubeconfig "$kc" apply --server-side -f "$crds/example/prometheus-operator-crd/monitoring.coreos.com_$k.yaml" >/dev/null ||
			die "apply CRD $k"
	done
	"$kubectl" --kubeconfig "$kc" wait --for condition=Established --timeout=60s \
		crd/servicemonitors.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com \
		crd/prometheusrules.monitoring.coreos.com >/dev/null || die "CRDs not established"

	local want
	want=$(echo $NODES | wc -w)
	wait_for "$want Ready nodes" 120 sh -c "[ \$('$kubectl' --kubeconfig '$kc' get nodes --no-headers | grep -cw Ready) -eq $want ]"
	wait_for "the default service account" 60 "$kubectl" --kubeconfig "$kc" -n default get serviceaccount default
	step "control plane up in $((SECONDS - start)) s ($want nodes; logs in $DIR)"
	echo "KUBECONFIG=$DIR/kubeconfig"
}

down() {
	parse "$@"
	local p pid
	for p in kdg-nodesim kube-scheduler kube-controller-manager kube-apiserver etcd; do
		[ -f "$DIR/$p.pid" ] || continue
		pid=$(cat "$DIR/$p.pid")
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 15))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		rm -f "$DIR/$p.pid"
	done
}

status() {
	parse "$@"
	for p in $PROCS; do running "$p" || die "$p does not run"; done
	"$KBIN/kubectl" --kubeconfig "$DIR/kubeconfig" get --raw /readyz >/dev/null || die "the API server does not answer"
}

env_() {
	parse "$@"
	echo "export KUBECONFIG=$DIR/kubeconfig"
	echo "export PATH=$KBIN:$(dirname "$("$here/tools.sh" helm)"):\$PATH"
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case $cmd in
build) build ;;
up) up "$@" ;;
down) down "$@" ;;
status) status "$@" ;;
env) env_ "$@" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; [ "$cmd" = help ] ;;
esac
