#!/usr/bin/env bash
# Runs every test of kafka-disk-guard: go vet, unit tests with -race, and the
# integration tests against real Apache Kafka brokers (started by the tests
# through scripts/kafka.sh), then the deployment checks when present. Each
# test runs once: a package with integration tests runs its unit tests in
# the integration pass.
# A broker that cannot start fails the run: nothing is skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fail() { echo "test.sh: $*" >&2; exit 1; }
command -v go >/dev/null || fail "go is not installed"
command -v java >/dev/null || fail "java is not installed (the test broker needs Java 17+)"
command -v mvn >/dev/null || fail "mvn is not installed (it fetches the broker jars from Maven Central)"
command -v kcat >/dev/null || fail "kcat is not installed (Debian package kcat; .ci/run installs it)"
command -v buildah >/dev/null || fail "buildah is not installed (the image test; Debian package buildah; .ci/run installs it)"
command -v openssl >/dev/null || fail "openssl is not installed (scripts/k8s.sh makes the test control plane's certificates with it)"
for b in prometheus prometheus-alertmanager; do
  command -v $b >/dev/null || fail "$b is not installed (the monitoring-stack test; Debian package $b; .ci/run installs it)"
done

step() { printf '\n== %s\n' "$*"; }
results=$(mktemp); trap 'rm -f "$results"' EXIT

step "fetch broker jars"
scripts/kafka.sh fetch >/dev/null

step "gofmt and go vet"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || fail "not gofmt-formatted (run gofmt -w): $unformatted"
go vet ./...
go vet -tags integration ./...

# Packages with integration tests (a test file tagged integration). Their
# unit tests run once, in the integration pass (the tag adds tests, it
# takes none away); every other package runs in the unit pass.
pkgs=$(go list -tags integration -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./... |
  while read -r pkg dir files; do
    for f in $files; do
      if head -n 3 "$dir/$f" | grep -q '^//go:build integration'; then echo "$pkg"; break; fi
    done
  done)
[ -n "$pkgs" ] || fail "no integration test package found"
unit=$(go list ./... | grep -vxF -f <(printf '%s\n' $pkgs))

step "unit tests (-race) of the packages without integration tests"
go test -race -count=1 $unit | tee -a "$results"

# The deterministic simulation's full count (2,000 seeds) without -race:
# it runs on one goroutine per seed, where the race detector finds little
# and costs 5-10x (the -race pass above runs 30 seeds).
step "simulation: 2,000 seeds (internal/simulation)"
go test -count=1 -run 'TestSim' -v ./internal/simulation | grep -E '^(ok|FAIL|---|=== RUN|\s+sim_test)' | tee -a "$results"

# One broker-using package at a time so timing-sensitive tests get the
# machine's cores.
step "unit and integration tests of the other packages, against real brokers (-race)"
go test -race -count=1 -p 1 -timeout 30m -tags integration $pkgs | tee -a "$results"

if [ -x scripts/check-deploy.sh ]; then
  step "deployment checks (helm, promtool, dashboards)"
  scripts/check-deploy.sh
fi
# tools/k8s is a module of its own (k8s.io/kubernetes): the chart on a real
# control plane, started by the tests through scripts/k8s.sh.
step "the chart on a real Kubernetes control plane (tools/k8s, scripts/k8s.sh)"
(cd tools/k8s && go vet ./... && go vet -tags integration ./... &&
  go test -count=1 -p 1 -timeout 20m -tags integration ./...) | tee -a "$results"

echo
echo "test.sh: all tests passed"
# Test packages run (unit and integration passes), as one closing line.
echo "packages: $(grep -c '^ok ' "$results") passed, $(grep -c '^FAIL' "$results") failed"
