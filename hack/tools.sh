#!/usr/bin/env bash
# tools.sh builds the release tools the chart and alert tests run, helm and
# promtool, from their Go modules and prints the path of the binary; and
# MetalLB's speaker, which the speaker benchmarks run beside ours
# (BENCHMARKS.md).
#
# Like hack/control-plane.sh: nothing can be downloaded from release sites,
# so each tool is compiled in a temporary module of its own (never in
# steadylb's go.mod, whose Kubernetes modules are pinned) and cached outside
# the checkout, keyed by version, so only the first run pays for the build.
#
#   hack/tools.sh helm            build if needed, print the binary's path
#   hack/tools.sh helm --path     print the binary's path, build nothing
#   hack/tools.sh helm3 | promtool | metallb-speaker
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.2}"
HELM3_VERSION="${HELM3_VERSION:-v3.21.4}"
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
METALLB_VERSION="${METALLB_VERSION:-v0.15.2}"

cache_root="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/steadylb/tools"

log() { echo "tools: $*" >&2; }

tool="${1:-}"
case "$tool" in
helm)
  module=helm.sh/helm/v4 version="$HELM_VERSION" pkg=helm.sh/helm/v4/cmd/helm
  # Helm prints this as its version; without it `helm version` says v4-dev.
  ldflags="-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
  ;;
helm3)
  module=helm.sh/helm/v3 version="$HELM3_VERSION" pkg=helm.sh/helm/v3/cmd/helm
  ldflags="-X helm.sh/helm/v3/internal/version.version=$HELM3_VERSION"
  # Helm v3 takes its default Kubernetes version (helm template, helm lint)
  # from link-time variables its release Makefile sets from client-go's
  # version; unset, it is v1.20 and refuses charts that need newer. The
  # recipe tag keys the cache apart from binaries built without them.
  kube_defaults=1 recipe="+kube-defaults"
  ;;
promtool)
  module=github.com/prometheus/prometheus version="$PROMETHEUS_VERSION" pkg=github.com/prometheus/prometheus/cmd/promtool
  ldflags=""
  # Checking and unit-testing rules needs no service discovery; Prometheus'
  # build tag leaves out the cloud SDKs, most of the build.
  tags="remove_all_sd" recipe="+remove_all_sd"
  ;;
metallb-speaker)
  # A released MetalLB speaker, built the same way as our images (static,
  # stripped), so that footprints compare binaries alike. v0.15.2: the
  # newest release whose every module the Go proxy serves (v0.16.2 needs
  # a frr-k8s release it refuses).
  module=go.universe.tf/metallb version="$METALLB_VERSION" pkg=go.universe.tf/metallb/speaker
  ldflags=""
  ;;
*)
  echo "usage: $0 helm|helm3|promtool|metallb-speaker [--path]" >&2
  exit 2
  ;;
esac

binary="$cache_root/$tool-$version${recipe:-}/$(basename "$pkg")"
if [[ "${2:-}" == "--path" || -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

log "building $tool from $module@$version (first run only; several minutes on two cores)"
start=$SECONDS
(
  cd "$work"
  go mod init steadylb.local/tools >/dev/null 2>&1
  go get "$module@$version" >/dev/null 2>&1 || go get "$module@$version"
  # The module's own requirements decide every dependency's version; tidy
  # through a file that imports the command.
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >tools.go
  go mod tidy >/dev/null
  if [[ -n "${kube_defaults:-}" ]]; then
    client_go="$(go list -m -f '{{.Version}}' k8s.io/client-go)" # v0.36.2 is Kubernetes 1.36
    minor="$(cut -d. -f2 <<<"$client_go")"
    for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
      ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
    done
  fi
  CGO_ENABLED=0 go build -trimpath -tags "${tags:-}" -ldflags "-s -w $ldflags" -o "$work/bin/" "$pkg"
)
log "$tool built in $((SECONDS - start))s"
mkdir -p "$(dirname "$binary")"
mv "$work/bin/$(basename "$pkg")" "$binary"
echo "$binary"
