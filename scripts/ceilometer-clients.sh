#!/usr/bin/env bash
# The two Ceilometer clients the conformance test (test/integration/ceilometer-clients.test.ts)
# drives against the statistics API, installed from what CI can reach (Maven Central, Debian's apt
# mirror), into <repo>/.cache/ceilometer-clients (CEILOMETER_CLIENTS_DIR):
#
#   openstack4j/lib/      openstack4j 3.12 + openstack4j-okhttp 3.12 and their dependencies (Maven)
#   openstack4j/classes/  the test's driver (test/fixtures/ceilometer/clients/Driver.java), compiled
#   python/               python-ceilometerclient 2.9.0: Debian's package of the 2.9.0 release
#                         (python3-ceilometerclient 2.9.0-6, bullseye, checked against its SHA-256),
#                         unpacked, not installed; its dependencies are Debian bookworm's python3-*
#                         packages (apt-get install)
#
#   scripts/ceilometer-clients.sh install   fetch and build what is missing (idempotent)
#   scripts/ceilometer-clients.sh status    exit 0 if both are ready
#
# Debian's source package (python-ceilometerclient_2.9.0.orig.tar.xz, the upstream release) is listed
# in bullseye's Sources but its files are not on the mirror; the binary package is, and holds the
# release's Python source files as they are.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
DIR="${CEILOMETER_CLIENTS_DIR:-$REPO_ROOT/.cache/ceilometer-clients}"
FIXTURES="$REPO_ROOT/test/fixtures/ceilometer/clients"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEB_PATH="pool/main/p/python-ceilometerclient/python3-ceilometerclient_2.9.0-6_all.deb"
DEB_SHA256="f1234660210278ef74cf7c132bb55484296937d1e53d8964f8ff430ab164d674"
PY_DEPS=(python3-keystoneauth1 python3-oslo.utils python3-oslo.serialization python3-oslo.i18n python3-prettytable
  python3-iso8601 python3-stevedore python3-requests python3-pbr python3-six)

log() { printf 'ceilometer-clients.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

java_ready() { [[ -f "$DIR/openstack4j/classes/Driver.class" && -f "$DIR/openstack4j/lib/openstack4j-core-3.12.jar" ]]; }
python_ready() { /usr/bin/python3 -c 'import keystoneauth1, oslo_utils, oslo_serialization, prettytable, iso8601, stevedore, requests' 2>/dev/null && [[ -f "$DIR/python/ceilometerclient/__init__.py" ]]; }

install_java() {
  command -v mvn >/dev/null 2>&1 || die "mvn not found: Maven fetches openstack4j from Maven Central"
  command -v javac >/dev/null 2>&1 || die "javac not found: a JDK (17) compiles the driver"
  if [[ ! -f "$DIR/openstack4j/lib/openstack4j-core-3.12.jar" ]]; then
    mkdir -p "$DIR/openstack4j"
    mvn -q -B -f "$FIXTURES/pom.xml" dependency:copy-dependencies -DoutputDirectory="$DIR/openstack4j/lib" >"$DIR/openstack4j/mvn.log" 2>&1 ||
      { cat "$DIR/openstack4j/mvn.log" >&2; die "mvn could not fetch openstack4j 3.12"; }
  fi
  # Always compiled again: the driver may have changed (about a second).
  rm -rf "$DIR/openstack4j/classes" && mkdir -p "$DIR/openstack4j/classes"
  javac -nowarn -d "$DIR/openstack4j/classes" -cp "$DIR/openstack4j/lib/*" "$FIXTURES/Driver.java"
}

install_python() {
  if ! /usr/bin/python3 -c 'import keystoneauth1, oslo_utils, oslo_serialization, prettytable, iso8601, stevedore, requests' 2>/dev/null; then
    command -v apt-get >/dev/null 2>&1 || die "no apt-get: install ${PY_DEPS[*]} (Debian's python3 packages) yourself"
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then sudo=(sudo); fi
    { "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${PY_DEPS[@]}"; } \
      >"${TMPDIR:-/tmp}/ceilometer-clients-apt.log" 2>&1 || { cat "${TMPDIR:-/tmp}/ceilometer-clients-apt.log" >&2; die "apt-get install of the client's dependencies failed"; }
  fi
  if [[ ! -f "$DIR/python/ceilometerclient/__init__.py" ]]; then
    local tmp; tmp="$(mktemp -d)"
    curl -fsS --retry 3 -o "$tmp/client.deb" "$MIRROR/$DEB_PATH" || die "could not fetch $MIRROR/$DEB_PATH"
    echo "$DEB_SHA256  $tmp/client.deb" | sha256sum -c --quiet - || die "$DEB_PATH: SHA-256 is not bullseye's"
    dpkg-deb -x "$tmp/client.deb" "$tmp/x"
    mkdir -p "$DIR/python"
    # The package and its egg-info (pbr reads the version from it); the CLI is python3 -m ceilometerclient.shell.
    cp -r "$tmp/x/usr/lib/python3/dist-packages/." "$DIR/python/"
    rm -rf "$tmp"
  fi
}

case "${1:-}" in
  install)
    install_java
    install_python
    java_ready && python_ready || die "installed, but not ready"
    log "ready in $DIR: openstack4j 3.12 (okhttp), python-ceilometerclient 2.9.0"
    ;;
  status)
    java_ready && python_ready
    ;;
  *)
    die "usage: scripts/ceilometer-clients.sh install | status"
    ;;
esac
