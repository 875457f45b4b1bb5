# Sourced by the container scripts (and read by test/e2e/container-image.test.ts): one podman command line that
# works on a machine without a Docker engine, an overlay filesystem or cgroup v2, such as a CI VM or a sandbox.
#
#   PODMAN       podman with its own storage (vfs: plain copies, no overlay mount needed), kept apart from any
#                storage the machine already has, so nothing here changes another user's images
#   RUN_FLAGS    for `podman run` and `podman build`: runc (crun refuses a hybrid cgroup v1/v2 hierarchy) and
#                resource limits no higher than this shell's own (raising them needs CAP_SYS_RESOURCE, which a
#                container host may not grant; podman's defaults ask for 1048576 open files)
#
# Override the storage with TOLLGATE_CONTAINER_ROOT; on a machine with a working podman or Docker, skip these
# scripts and run `docker build .` or `podman build .` as usual.
CONTAINER_ROOT="${TOLLGATE_CONTAINER_ROOT:-/var/tmp/tollgate-containers}"
PODMAN=(podman --root "$CONTAINER_ROOT/storage" --runroot "$CONTAINER_ROOT/run" --storage-driver vfs)
# A limit this shell has, capped (an "unlimited" host keeps podman's usual container values).
capped_limit() { local hard; hard="$1"; [ "$hard" = unlimited ] || [ "$hard" -gt "$2" ] && hard="$2"; echo "$hard:$hard"; }
RUN_FLAGS=(--runtime runc --ulimit "nofile=$(capped_limit "$(ulimit -Hn)" 65536)" --ulimit "nproc=$(capped_limit "$(ulimit -Hu)" 4096)")
# The image the local build makes, and the base it builds on when no registry is reachable.
IMAGE="${TOLLGATE_IMAGE:-localhost/tollgate:dev}"
LOCAL_BASE_IMAGE="${TOLLGATE_BASE_IMAGE:-localhost/tollgate-base:node20-bookworm}"
