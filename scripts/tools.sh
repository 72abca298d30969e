#!/usr/bin/env bash
# tools.sh: the pinned helper tools of the tests, built or installed once
# into $KDG_CACHE/bin (default ~/.cache/kafka-disk-guard/bin) and reused.
#
#   scripts/tools.sh helm       # prints the path of helm
#   scripts/tools.sh promtool   # prints the path of promtool
#
#   helm      go install helm.sh/helm/v3/cmd/helm@v3.22.0
#   promtool  from Debian's prometheus package (installed, or extracted
#             without installing: no daemon is started), else
#             go install .../cmd/promtool@v0.316.0
#
# Progress goes to stderr; stdout is only the path. Used by
# scripts/check-deploy.sh and the image and monitoring tests (e2e/).
set -euo pipefail

CACHE=${KDG_CACHE:-$HOME/.cache/kafka-disk-guard}
BIN=$CACHE/bin
HELM_VERSION=v3.22.0
PROMTOOL_VERSION=v0.316.0

fail() { printf 'tools.sh: %s\n' "$*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*" >&2; }

ensure_helm() {
	if [ -x "$BIN/helm" ] && [ "$(cat "$BIN/helm.version" 2>/dev/null)" = "$HELM_VERSION" ]; then
		echo "$BIN/helm"
		return
	fi
	mkdir -p "$BIN"
	step "building helm $HELM_VERSION into $BIN (once; a few minutes)"
	GOBIN="$BIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2 || fail "go install helm"
	echo "$HELM_VERSION" >"$BIN/helm.version"
	echo "$BIN/helm"
}

ensure_promtool() {
	if [ -x "$BIN/promtool" ]; then
		echo "$BIN/promtool"
		return
	fi
	if command -v promtool >/dev/null 2>&1; then
		command -v promtool
		return
	fi
	mkdir -p "$BIN"
	if command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
		if ! apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [0-9]' && [ "$(id -u)" = 0 ]; then
			apt-get update -qq >&2 || true
		fi
		if apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [0-9]'; then
			step "extracting promtool from Debian's prometheus package into $BIN"
			work=$(mktemp -d)
			(cd "$work" && apt-get download prometheus >/dev/null && dpkg-deb -x prometheus_*.deb deb) >&2 &&
				install -m 0755 "$work/deb/usr/bin/promtool" "$BIN/promtool" &&
				"$BIN/promtool" --version >/dev/null 2>&1 || rm -f "$BIN/promtool"
			rm -rf "$work"
		fi
	fi
	if [ ! -x "$BIN/promtool" ]; then
		step "building promtool $PROMTOOL_VERSION into $BIN (once; several minutes)"
		GOBIN="$BIN" go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >&2 || fail "go install promtool"
	fi
	echo "$BIN/promtool"
}

case ${1:-} in
helm) ensure_helm ;;
promtool) ensure_promtool ;;
*) fail "usage: scripts/tools.sh helm|promtool" ;;
esac
