#!/usr/bin/env bash
# generated-sum.sh prints one checksum over every generated file (deepcopy
# code, CRDs and the controller's and speaker's RBAC roles, and the chart's
# copies of them), so
# `make verify-generated` can tell whether regenerating changed anything, in
# a clean checkout or a dirty one.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  find api config/crd/bases charts/steadylb/charts/crds/files -type f \( -name 'zz_generated*.go' -o -name '*.yaml' \) -print0
  printf '%s\0' config/rbac/role.yaml config/rbac/speaker/role.yaml \
    charts/steadylb/files/rbac/controller.yaml charts/steadylb/files/rbac/speaker.yaml
} | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
