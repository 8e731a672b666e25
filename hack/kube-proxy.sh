#!/usr/bin/env bash
# kube-proxy.sh builds kube-proxy from the Kubernetes Go module, at the
# version of the local control plane (hack/control-plane.sh), and prints the
# path of the binary. The network-namespace lab runs it on every node so
# that requests to a LoadBalancer address reach Pods the way they do in a
# cluster.
#
# Like the control plane it is compiled from the published module sources
# and cached outside the checkout, keyed by version; the packages it shares
# with kube-apiserver come from Go's build cache when the control plane was
# built first.
#
#   hack/kube-proxy.sh            build if needed, print the binary's path
#   hack/kube-proxy.sh --path     print the binary's path, build nothing
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"

cache_root="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/steadylb/kube-proxy"
binary="$cache_root/kubernetes-$KUBERNETES_VERSION/kube-proxy"

if [[ "${1:-}" == "--path" ]]; then
  echo "$binary"
  exit 0
fi

if [[ -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi

log() { echo "kube-proxy: $*" >&2; }

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mod="$work/module"
mkdir -p "$mod" "$work/bin"

log "building kube-proxy $KUBERNETES_VERSION from Go modules into $binary"
start=$SECONDS
(
  cd "$mod"
  go mod init steadylb.local/kube-proxy >/dev/null 2>&1
  # k8s.io/kubernetes requires its staging modules at v0.0.0: replace each
  # with its published v0.x release, as hack/control-plane.sh does.
  staging="v0.${KUBERNETES_VERSION#v1.}"
  gomod="$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo "replace ("
    awk '/^\tk8s.io\/[^ ]+ v0\.0\.0$/ {print "\t" $1 " => " $1 " '"$staging"'"}' "$gomod"
    echo ")"
  } >>go.mod
  cat >tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-proxy"
GO
  go mod tidy >/dev/null
  pkg=k8s.io/component-base/version
  ver="-X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1"
  ver+=" -X $pkg.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)"
  ver+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
  go build -trimpath -ldflags "-s -w $ver" -o "$work/bin/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy
)
log "built after $((SECONDS - start))s"
mkdir -p "$(dirname "$binary")"
mv "$work/bin/kube-proxy" "$binary"
echo "$binary"
