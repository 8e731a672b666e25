#!/usr/bin/env bash
# control-plane.sh builds the local control plane (kube-apiserver, etcd and
# kubectl) from Go modules and prints the directory that holds the binaries.
#
# Nothing can be downloaded from release sites, so we compile the binaries from
# the published module sources. The result is cached outside the checkout,
# keyed by version, so only the first run on a machine pays for the build.
#
#   hack/control-plane.sh            build if needed, print the assets directory
#   hack/control-plane.sh --path     print the assets directory, build nothing
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"

cache_root="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/steadylb/control-plane"
assets="$cache_root/kubernetes-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"

if [[ "${1:-}" == "--path" ]]; then
  echo "$assets"
  exit 0
fi

log() { echo "control-plane: $*" >&2; }

have_all() {
  [[ -x "$assets/kube-apiserver" && -x "$assets/etcd" && -x "$assets/kubectl" ]]
}

if have_all; then
  echo "$assets"
  exit 0
fi

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
out="$work/bin"
mkdir -p "$out"

# Building kube-apiserver needs every k8s.io staging module that
# k8s.io/kubernetes lists at v0.0.0 replaced by its published v0.x release.
build_kubernetes() {
  local mod="$work/kubernetes" staging
  mkdir -p "$mod"
  staging="v0.${KUBERNETES_VERSION#v1.}"
  (
    cd "$mod"
    go mod init steadylb.local/control-plane >/dev/null 2>&1
    local gomod
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

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    go mod tidy >/dev/null
    local pkg=k8s.io/component-base/version
    local ver="-X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1"
    ver+=" -X $pkg.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)"
    ver+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
    go build -trimpath -ldflags "-s -w $ver" -o "$out/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
  )
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod"
  (
    cd "$mod"
    go mod init steadylb.local/etcd >/dev/null 2>&1
    cat >main.go <<'GO'
// Command etcd runs the etcd server from go.etcd.io/etcd/server/v3.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    go mod tidy >/dev/null
    go build -trimpath -ldflags "-s -w" -o "$out/etcd" .
  )
}

log "building kube-apiserver, kubectl $KUBERNETES_VERSION and etcd $ETCD_VERSION from Go modules"
log "into $assets"
log "the first build takes about 10-15 minutes on 2 cores; later runs reuse the cache"
start=$SECONDS
build_etcd
log "etcd built after $((SECONDS - start))s"
build_kubernetes
log "kube-apiserver and kubectl built after $((SECONDS - start))s"

rm -rf "$assets"
mv "$out" "$assets"
echo "$assets"
