# tollgate's container image. Two stages: `build` installs every dependency, compiles the native addons (lmdb,
# hnswlib-node), builds the dashboard and the gateway, then drops the dev dependencies; `runtime` copies only the
# result onto a slim Node 20 base and runs it as an unprivileged user.
#
# BASE_IMAGE is any Debian-based (glibc) image with Node >= 20.19 at /usr/local (node, npm and the headers in
# /usr/local/include/node, as the official images have them). The default comes from a registry; where there is
# none, scripts/container-base-image.sh makes one from Debian's mirrors and this machine's Node (README: "Deploy").
# Alpine (musl) is not an option as it stands: hnswlib-node and lmdb's prebuilt addons are built for glibc.
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
# Only for building behind a TLS-intercepting proxy: a CA bundle mounted into the build (the local build script
# passes the host's). It is a build-stage argument, so it never reaches the runtime image.
ARG NODE_EXTRA_CA_CERTS
# hnswlib-node has no prebuilt binaries: node-gyp compiles it, against the headers the base image ships (no
# download from nodejs.org).
ENV npm_config_nodedir=/usr/local
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The lock file first, so the dependency layer is reused while only sources change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build:dashboard \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${BASE_IMAGE} AS runtime
# HOST, PORT and TOLLGATE_DATA_DIR win over the config file's settings (README "Configuration"): the address, the
# EXPOSEd port, the health check and the volume stay in agreement whatever file is mounted.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    TOLLGATE_DATA_DIR=/data \
    HOME=/tmp
WORKDIR /app
# What runs: the compiled gateway (dist), the built dashboard it serves at /, the production dependencies, and
# the sources a TypeScript plugin's `import ... from 'tollgate'` resolves to (package.json exports ./src/index.ts).
# All owned by root and read-only to the gateway's user, so the root filesystem can be mounted read-only.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/dashboard/dist ./dashboard/dist
COPY --from=build /app/src ./src
COPY --from=build /app/pipelines ./pipelines
COPY --from=build /app/plugins ./plugins
COPY --from=build /app/config.schema.json ./
# The only place the gateway writes: LMDB (spend, request log, config versions, alerts' queue), secret.key when
# TOLLGATE_SECRET_KEY is unset, and the response cache's index. Anything else (tsx's compile cache for a
# TypeScript plugin) goes to /tmp. A numeric user, so Kubernetes' runAsNonRoot can verify it without /etc/passwd.
RUN mkdir -p /data && chown 10001:10001 /data && chmod 0700 /data
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8080
# No curl in slim images: Node's own fetch asks /health on the port the gateway listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The config file, when there is one, is named by TOLLGATE_CONFIG (the Helm chart and kustomize base mount one).
# SIGTERM from `docker stop` or the kubelet drains in-flight requests (settings.shutdown_grace_ms), then exits 0.
CMD ["node", "dist/cli.js"]
