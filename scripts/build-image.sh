#!/usr/bin/env bash
# build-image.sh: builds the kafka-disk-guard container image with Buildah.
#
#   scripts/build-image.sh                         # host architecture, local storage
#   scripts/build-image.sh --arch all --oci DIR    # amd64 + arm64, written as an OCI layout
#   scripts/build-image.sh --arch all --push       # amd64 + arm64, pushed to the registry
#   scripts/build-image.sh --image registry.example.com/team/kafka-disk-guard --push
#
# Options:
#   --arch A          amd64, arm64, or all (amd64 and arm64); default: the host's
#   --image NAME      repository; default: the chart's image.repository
#                     (charts/kafka-disk-guard/values.yaml)
#   --tag TAG         default: the version
#   --oci DIR         also write the image (all its architectures) as an OCI
#                     image layout in DIR
#   --push            push NAME:TAG (all architectures) to its registry; log in
#                     first (buildah login). Refused from a dirty work tree.
#   --storage-root D  Buildah storage under D (default: Buildah's own)
#
# One source of truth for the version: the chart's appVersion
# (charts/kafka-disk-guard/Chart.yaml). The revision is the git commit
# (with "-dirty" for uncommitted changes); outside a git checkout set
# KDG_REVISION. Both are stamped into the binary (-X main.version,
# -X main.revision) and the OCI labels.
#
# The binaries are static (CGO_ENABLED=0, -trimpath, time zone data built
# in) and cross-compiled by Go on the host; the Containerfile only copies
# files, so building arm64 on amd64 needs no emulation. The image runs as
# 65532:65532 on an empty base (FROM scratch) with the CA certificates of
# the build host ($KDG_CA_BUNDLE, default /etc/ssl/certs/ca-certificates.crt).
#
# Buildah runs as root with --isolation chroot and the vfs storage driver
# by default (no container engine or fuse needed); BUILDAH_ISOLATION and
# STORAGE_DRIVER override them. The last line printed is
#   image NAME:TAG version V revision R arch A...
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHART=$ROOT/charts/kafka-disk-guard
# The image's licence label (SPDX): the repository's LICENSE file.
LICENSES=Apache-2.0

fail() { printf 'build-image.sh: %s\n' "$*" >&2; exit 1; }

archs=$(go env GOARCH)
image="" tag="" oci="" push=false storage_root=""
while [ $# -gt 0 ]; do
	case $1 in
	--arch) archs=${2:?--arch needs a value}; shift 2 ;;
	--image) image=${2:?--image needs a value}; shift 2 ;;
	--tag) tag=${2:?--tag needs a value}; shift 2 ;;
	--oci) oci=${2:?--oci needs a directory}; shift 2 ;;
	--push) push=true; shift ;;
	--storage-root) storage_root=${2:?--storage-root needs a directory}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) fail "unknown argument $1 (see --help)" ;;
	esac
done
case $archs in
all) archs="amd64 arm64" ;;
amd64 | arm64) ;;
*) fail "--arch: $archs is not one of amd64, arm64, all" ;;
esac

command -v buildah >/dev/null || fail "buildah is not installed (Debian package buildah; .ci/run installs it)"
command -v go >/dev/null || fail "go is not installed"

# --- what to stamp ------------------------------------------------------
version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$CHART/Chart.yaml")
[ -n "$version" ] || fail "no appVersion in $CHART/Chart.yaml"
source_url=$(sed -n 's/^home: *//p' "$CHART/Chart.yaml")
[ -n "$source_url" ] || fail "no home in $CHART/Chart.yaml"
if [ -z "$image" ]; then
	image=$(awk '/^image:/ {in_image=1; next} in_image && /^[^ ]/ {exit} in_image && $1 == "repository:" {print $2; exit}' "$CHART/values.yaml")
	[ -n "$image" ] || fail "no image.repository in $CHART/values.yaml"
fi
tag=${tag:-$version}

dirty=false
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	revision=$(git -C "$ROOT" rev-parse HEAD)
	created_epoch=$(git -C "$ROOT" log -1 --format=%ct HEAD)
	if [ -n "$(git -C "$ROOT" status --porcelain)" ]; then
		dirty=true
		revision=$revision-dirty
	fi
elif [ -n "${KDG_REVISION:-}" ]; then
	revision=$KDG_REVISION
	created_epoch=${SOURCE_DATE_EPOCH:-$(date +%s)}
else
	fail "not a git checkout: set KDG_REVISION to the commit being built"
fi
created_epoch=${SOURCE_DATE_EPOCH:-$created_epoch}
created=$(date -u -d "@$created_epoch" +%Y-%m-%dT%H:%M:%SZ)
if $push && $dirty; then
	fail "refusing to push an image built from uncommitted changes ($revision)"
fi

# --- build context: static binaries, CA certificates, passwd/group --------
ca_bundle=${KDG_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$ca_bundle" ] || fail "no CA bundle at $ca_bundle (Debian package ca-certificates)"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
platforms=()
for arch in $archs; do
	echo "build-image.sh: go build linux/$arch $version $revision" >&2
	(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -tags timetzdata \
		-ldflags "-s -w -X main.version=$version -X main.revision=$revision" \
		-o "$ctx/kafka-disk-guard-linux-$arch" ./cmd/kafka-disk-guard) || fail "go build linux/$arch"
	platforms+=("linux/$arch")
done
install -m 0644 "$ca_bundle" "$ctx/ca-certificates.crt"
printf 'kafka-disk-guard:x:65532:65532:kafka-disk-guard:/nonexistent:/sbin/nologin\n' >"$ctx/passwd"
printf 'kafka-disk-guard:x:65532:\n' >"$ctx/group"
chmod 0644 "$ctx/passwd" "$ctx/group"

# --- image (a manifest list, one image per architecture) -----------------
bh=(buildah --storage-driver "${STORAGE_DRIVER:-vfs}")
if [ -n "$storage_root" ]; then
	bh+=(--root "$storage_root/root" --runroot "$storage_root/run")
fi
ref=$image:$tag
"${bh[@]}" manifest rm "$ref" >/dev/null 2>&1 || true
"${bh[@]}" rmi "$ref" >/dev/null 2>&1 || true
platform_list=$(IFS=,; echo "${platforms[*]}")
"${bh[@]}" build --quiet --isolation "${BUILDAH_ISOLATION:-chroot}" --manifest "$ref" --platform "$platform_list" --timestamp "$created_epoch" \
	--build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg CREATED="$created" \
	--build-arg SOURCE="$source_url" --build-arg LICENSES="$LICENSES" \
	-f "$ROOT/Containerfile" "$ctx" >&2 || fail "buildah build"

if [ -n "$oci" ]; then
	rm -rf "$oci"
	"${bh[@]}" manifest push --quiet --all "$ref" "oci:$oci:$tag" >&2 || fail "write the OCI layout to $oci"
	echo "build-image.sh: OCI layout in $oci (tag $tag)" >&2
fi
if $push; then
	"${bh[@]}" manifest push --all "$ref" "docker://$ref" >&2 || fail "push $ref"
	echo "build-image.sh: pushed $ref" >&2
fi
echo "image $ref version $version revision $revision arch $archs"
