#!/usr/bin/env bash
# Makes the Dockerfile's BASE_IMAGE without a container registry: a minimal Debian bookworm root filesystem from
# Debian's mirrors (mmdebstrap), with this machine's Node 20 laid out as the official node images have it (node,
# npm and the C++ headers under /usr/local), imported into the local podman storage as $LOCAL_BASE_IMAGE.
# Where a registry is reachable, `node:20-bookworm-slim` is the same thing and this script is not needed.
#
# Needs: root, mmdebstrap, podman (apt-get install -y --no-install-recommends mmdebstrap podman runc), and a
# glibc-linked Node >= 20.19 on this machine (it must run on bookworm's glibc 2.36).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/container/podman-env.sh

NODE_BIN="$(readlink -f "$(command -v node)")"
NODE_PREFIX="$(dirname "$(dirname "$NODE_BIN")")"   # /usr for Debian's packaging, /usr/local for nodejs.org's
NPM_DIR="$NODE_PREFIX/lib/node_modules/npm"
HEADERS="$NODE_PREFIX/include/node"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a !== 20 || b < 19) { console.error(`need Node 20.19+, this machine has ${process.version}`); process.exit(1); }'
for needed in "$NPM_DIR/bin/npm-cli.js" "$HEADERS/node.h"; do
  [ -e "$needed" ] || { echo "container-base: missing $needed (npm and the Node headers must sit beside node)" >&2; exit 1; }
done

work="$(mktemp -d /var/tmp/tollgate-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# minbase: the essential packages and apt (the build stage installs its compilers with apt-get, as on the
# official image); libstdc++6, which node links against, comes with apt.
mmdebstrap --variant=minbase --quiet bookworm "$work/rootfs" http://deb.debian.org/debian
install -D -m 0755 "$NODE_BIN" "$work/rootfs/usr/local/bin/node"
mkdir -p "$work/rootfs/usr/local/lib/node_modules" "$work/rootfs/usr/local/include"
cp -a "$NPM_DIR" "$work/rootfs/usr/local/lib/node_modules/npm"
cp -a "$HEADERS" "$work/rootfs/usr/local/include/node"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
# Prove the copied node runs on the image's own libraries before importing it.
chroot "$work/rootfs" /usr/local/bin/node -e 'console.log(`base image: Node ${process.version} on glibc ${process.report.getReport().header.glibcVersionRuntime}`)'

tar -C "$work/rootfs" -c . | "${PODMAN[@]}" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --message "Debian bookworm (mmdebstrap minbase) + Node $(node --version) from the build machine" \
  - "$LOCAL_BASE_IMAGE" >/dev/null
echo "container-base: $LOCAL_BASE_IMAGE ready"
