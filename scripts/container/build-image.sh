#!/usr/bin/env bash
# Builds tollgate's image from the Dockerfile with podman, on a machine without a Docker engine or registry access:
#   scripts/container/build-image.sh                         # base made locally (base-image.sh) when missing
#   BASE_IMAGE=node:20-bookworm-slim scripts/container/build-image.sh   # where a registry is reachable
# The image is $IMAGE (localhost/tollgate:dev) in the storage podman-env.sh names.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/container/podman-env.sh

base="${BASE_IMAGE:-$LOCAL_BASE_IMAGE}"
if [ -z "${BASE_IMAGE:-}" ] && ! "${PODMAN[@]}" image exists "$base"; then
  scripts/container/base-image.sh
fi

build_args=(--build-arg "BASE_IMAGE=$base")
# Behind a TLS-intercepting proxy, npm in the build trusts what Node on this machine trusts: the CA bundle named
# by NODE_EXTRA_CA_CERTS is mounted read-only for the build steps (never copied into a layer).
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
  build_args+=(--volume "$NODE_EXTRA_CA_CERTS:/run/build-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca.crt)
fi

"${PODMAN[@]}" build "${RUN_FLAGS[@]}" --format docker --layers "${build_args[@]}" --tag "$IMAGE" --file Dockerfile .
echo "container-build: $IMAGE built on $base"
