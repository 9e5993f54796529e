# syntax=docker/dockerfile:1
# streamstats image: build with the dev toolchain, run with production dependencies only, as `node`.
#
#   docker build -t streamstats .
#   docker run --rm -p 9464:9464 -e SOURCE=kafka -e KAFKA_BROKERS=broker:9092 -e KAFKA_TOPICS=metrics streamstats
#
# Configuration comes only from the environment (every variable of the README's table); arguments
# after the image name are passed to the CLI as flags (`--worker-threads 2` equals WORKER_THREADS=2).
# WORKER_THREADS=auto (the default) follows the container's CPU quota (cgroup v2 cpu.max or v1 cfs
# quota, see src/config/cpus.ts), so `--cpus 4` gives 3 decode threads; the choice is logged at start.

# Node 24 LTS: the runtime the tests run on (package.json's `node` devDependency; Node 20 is
# end-of-life since April 2026).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: the full toolchain compiles TypeScript into dist/
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` runs tsc, and the sources are not copied yet. It also skips the `node`
# devDependency's download of a second Node binary: the image's own Node 24 runs tsc instead
# (node_modules/.bin/node is left dangling, and PATH lookup passes over it).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workers ./workers
RUN npx tsc -p tsconfig.json

# ---- deps: production dependencies only (no tap, no typescript), resolved from the same lockfile
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts again skips `prepare` (no tsc here); no dependency needs an install script
# (lz4-napi ships prebuilt binaries as optional dependencies per platform).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- runtime
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1. Our CLI handles SIGTERM/SIGINT itself (drain, flush, close within
# SHUTDOWN_TIMEOUT_SECONDS), so plain `node` as PID 1 would shut down correctly; but PID 1 gets no
# default signal actions from the kernel, so any signal node does not handle (SIGHUP, SIGQUIT, or
# SIGTERM to the producer tool run from this image) would be silently ignored until Docker's
# SIGKILL. tini forwards every signal to node, which then runs as an ordinary process, and reaps
# zombies. Same effect as `docker run --init`, without relying on every runtime to pass it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    METRICS_PORT=9464 \
    METRICS_HOST=0.0.0.0 \
    API_PORT=8777 \
    API_HOST=0.0.0.0 \
    SINK=stdout \
    DEAD_LETTER=file:/data/dead-letter.ndjson
WORKDIR /app
# Application files stay owned by root (read-only for the process); /data is the one writable place
# (dead letters, or SINK=file:/data/...). A named volume mounted there inherits the owner.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/workers ./dist/workers
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
# The metrics port (/metrics and the probes) and the statistics API's (API_PORT). The API serves only
# with API_TOKENS_FILE (or API_AUTH=none) set; publish it then:
#   docker run -p 8777:8777 -v ./tokens:/run/secrets/tokens:ro -e API_TOKENS_FILE=/run/secrets/tokens \
#     -e SINK=postgres://... streamstats
# Inside a container the API binds 0.0.0.0 (127.0.0.1 would be unreachable): the token file guards it.
EXPOSE 9464 8777
# No curl in the slim image: node itself asks /healthz (the process is alive; /readyz is for
# traffic decisions, see deploy/kubernetes). With METRICS_PORT=0 (any port) there is nothing to ask.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.METRICS_PORT || 9464) + '/healthz', { signal: AbortSignal.timeout(2500) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The same command the tests and `npx streamstats` run (package.json "bin").
ENTRYPOINT ["tini", "--", "node", "dist/src/cli.js"]
