#!/usr/bin/env bash
# Builds kafka-disk-guard's CreateTopicPolicy plugin (plugin/, Maven, Java 17)
# and prints the jar's path: plugin/target/kafka-disk-guard-policy.jar.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v mvn >/dev/null 2>&1 || { echo "build-plugin.sh: mvn is not installed" >&2; exit 1; }
mvn -q -B -f "$root/plugin/pom.xml" package >&2
echo "$root/plugin/target/kafka-disk-guard-policy.jar"
