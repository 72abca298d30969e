#!/usr/bin/env bash
# check-deploy.sh: the CI step for the deployment artefacts.
#
#   scripts/check-deploy.sh
#
# Checks, failing on the first error (exit 1):
#   1. tools/ module: go vet + tests (dashboard and alert queries parse as
#      PromQL and use only metrics in docs/metrics.md; runbook anchors exist;
#      every alert has firing and silent promtool tests; the chart's copies
#      of alerts/ and dashboards/ are identical; the offline manifest checker
#      catches what it should).
#   2. promtool check rules + promtool test rules.
#   3. helm lint (strict) for every values profile in charts/kafka-disk-guard/ci/,
#      helm template of each, checked offline by tools/cmd/k8svalidate
#      (strict decoding into k8s.io/api and prometheus-operator types, the
#      agent's config against its mounts, cross-object port names, PromQL);
#      invalid values must be refused. What a real API server checks runs
#      on one in tools/k8s/charttest (scripts/test.sh).
#   4. systemd-analyze verify of the unit (when systemd-analyze exists).
#
# Tools (helm, promtool) come from scripts/tools.sh: pinned, built or
# installed once into $KDG_CACHE/bin (default ~/.cache/kafka-disk-guard/bin).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KDG_CACHE:-$HOME/.cache/kafka-disk-guard}
BIN=$CACHE/bin
KUBE_VERSION=1.33.0
CHART=$ROOT/charts/kafka-disk-guard
START=$(date +%s)

mkdir -p "$BIN"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

step() { printf '\n==> %s\n' "$*"; }
fail() { printf '\ncheck-deploy: FAIL: %s\n' "$*" >&2; exit 1; }

# --- tools -------------------------------------------------------------
HELM=$("$ROOT/scripts/tools.sh" helm) || fail "helm"
PROMTOOL=$("$ROOT/scripts/tools.sh" promtool) || fail "promtool"
echo "helm: $HELM ($(cat "$BIN/helm.version")), promtool: $PROMTOOL ($("$PROMTOOL" --version 2>&1 | head -1))"

# --- 1. tools module: tests and the validator --------------------------
step "tools: go vet, go test (dashboards, alerts, runbooks, chart copies, validator)"
(cd "$ROOT/tools" && go vet ./... && go test -count=1 ./...) || fail "tools tests"
(cd "$ROOT/tools" && go build -o "$WORK/k8svalidate" ./cmd/k8svalidate) || fail "build k8svalidate"
(cd "$ROOT" && go build -o "$WORK/kafka-disk-guard" ./cmd/kafka-disk-guard) || fail "build kafka-disk-guard"

# --- 2. promtool --------------------------------------------------------
step "promtool check rules"
"$PROMTOOL" check rules "$ROOT/alerts/kafka-disk-guard.rules.yml" \
	"$CHART/files/alerts/kafka-disk-guard.rules.yml" || fail "promtool check rules"
step "promtool test rules"
"$PROMTOOL" test rules "$ROOT"/alerts/tests/*.yml || fail "promtool test rules"

# --- 3. helm ------------------------------------------------------------
step "helm lint --strict (every values profile)"
for values in "$CHART"/ci/*-values.yaml; do
	"$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" -f "$values" >"$WORK/lint.out" 2>&1 ||
		{ cat "$WORK/lint.out"; fail "helm lint $(basename "$values")"; }
	echo "ok  $(basename "$values")"
done

step "helm template | k8svalidate (offline, strict)"
for values in "$CHART"/ci/*-values.yaml; do
	name=$(basename "$values" -values.yaml)
	expect=$(sed -n 's/^# expect: *//p' "$values" | head -1)
	[ -n "$expect" ] || fail "$values has no '# expect: Kind,...' line"
	"$HELM" template kdg "$CHART" --namespace kafka --kube-version "$KUBE_VERSION" -f "$values" \
		>"$WORK/$name.yaml" || fail "helm template $name"
	"$WORK/k8svalidate" -name "$name" -expect "$expect" -dump-config "$WORK/$name.config.yaml" <"$WORK/$name.yaml" || fail "k8svalidate $name"
	# The guard itself must accept the configuration the chart renders.
	"$WORK/kafka-disk-guard" check-config "$WORK/$name.config.yaml" || fail "chart $name renders a config the guard refuses"
done

step "PrometheusRule carries the active profile's band group only"
grep -q 'name: kafka-disk-guard.bands.cloud' "$WORK/sidecar.yaml" || fail "cloud profile: bands.cloud group missing"
! grep -q 'name: kafka-disk-guard.bands.local' "$WORK/sidecar.yaml" || fail "cloud profile: bands.local group rendered"
! grep -q 'name: kafka-disk-guard.bands' "$WORK/monitors.yaml" || fail "serverless profile: a band group rendered"
grep -q 'name: kafka-disk-guard.agent' "$WORK/monitors.yaml" || fail "serverless profile: agent group missing"
echo ok

step "invalid values are refused"
# refuse WHY MESSAGE ARGS...: helm template must fail, saying MESSAGE.
refuse() {
	local why=$1 msg=$2
	shift 2
	if "$HELM" template kdg "$CHART" --kube-version "$KUBE_VERSION" "$@" >"$WORK/refused.out" 2>&1; then
		fail "accepted invalid values ($why): $*"
	fi
	grep -qF -- "$msg" "$WORK/refused.out" || { cat "$WORK/refused.out"; fail "refused $why for another reason"; }
	echo "ok  refused: $why"
}
refuse "unknown profile" "/enforcer/profile" --set enforcer.profile=hybrid
refuse "unknown top-level key" "'enforcment' not allowed" --set enforcment.enabled=true
refuse "writable root filesystem" "/securityContext/readOnlyRootFilesystem" --set securityContext.readOnlyRootFilesystem=false
refuse "relative log dir" "/config/logDirs/0" --set 'config.logDirs={data}'
refuse "custom preset without globs" "set dataLayout.kubeletPods.logDirGlobs" \
	--set dataLayout.type=kubeletPods --set dataLayout.kubeletPods.preset=custom
refuse "SASL without a password" "needs kafka.sasl.password" --set 'kafka.bootstrapServers={k:9092}' --set kafka.sasl.enabled=true
refuse "ServiceMonitor and PodMonitor together" "not both" --set serviceMonitor.enabled=true --set podMonitor.enabled=true
refuse "ServiceMonitor in sidecar mode" "use podMonitor in sidecar mode" --set mode=sidecar --set serviceMonitor.enabled=true
refuse "NetworkPolicy in sidecar mode" "networkPolicy: not in sidecar mode" --set mode=sidecar --set networkPolicy.enabled=true
refuse "admission limit above 100" "/admission/limitPercent" --set admission.limitPercent=150
refuse "allow.everyone neither auto, true nor false" "/enforcer/protection/allowEveryoneIfNoAclFound" --set enforcer.protection.allowEveryoneIfNoAclFound=maybe
refuse "exempt principal without a type" "/enforcer/protection/exemptPrincipals/0" --set 'enforcer.protection.exemptPrincipals={connect}'

step "the uninstall hook lifts protection before anything else goes"
grep -q 'helm.sh/hook: pre-delete' "$WORK/uninstall-hook.yaml" || fail "uninstall-hook: no pre-delete hook rendered"
grep -q -- '- --config=/etc/kafka-disk-guard/config.yaml' "$WORK/uninstall-hook.yaml" || fail "uninstall-hook: the Job does not read the agents' config"
! grep -q 'helm.sh/hook' "$WORK/default.yaml" || fail "default profile (no cluster): a hook rendered"
echo ok

# --- 4. systemd ---------------------------------------------------------
step "systemd unit"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify needs the binary to exist: check a copy pointing at /bin/true.
	mkdir -p "$WORK/systemd"
	sed 's#/usr/local/bin/kafka-disk-guard#/bin/true#' "$ROOT/deploy/systemd/kafka-disk-guard.service" \
		>"$WORK/systemd/kafka-disk-guard.service"
	if ! systemd-analyze verify "$WORK/systemd/kafka-disk-guard.service" >"$WORK/verify.out" 2>&1 ||
		[ -s "$WORK/verify.out" ]; then
		cat "$WORK/verify.out"
		fail "systemd-analyze verify"
	fi
	echo ok
else
	echo "systemd-analyze not installed: unit syntax not verified"
fi

printf '\ncheck-deploy: all checks passed in %ss\n' "$(($(date +%s) - START))"
