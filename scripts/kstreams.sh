#!/usr/bin/env bash
# The Kafka Streams peer of the benchmarks (bench/kstreams: a Java application on kafka-streams 3.9.1).
#
#   scripts/kstreams.sh build       build once (Maven, from Maven Central) into the cache; prints the classpath
#   scripts/kstreams.sh classpath   the same, as a command for scripts and benchmarks
#   scripts/kstreams.sh run         build if needed, then exec the application in the foreground
#                                   (settings from the environment: see bench/kstreams/.../PeerApp.java)
#
# Needs: Java 17+, Maven (for the build, from Maven Central). The build is cached and redone only when
# bench/kstreams changes.
#
# Environment:
#   KSTREAMS_CACHE_DIR   build folder        (default <repo>/.cache/kstreams)
#   KSTREAMS_HEAP_OPTS   JVM heap            (default "-Xms256m -Xmx1g")
#   KSTREAMS_LOG_LEVEL   slf4j-simple level  (default warn)
#   JAVA                 java binary         (default $JAVA_HOME/bin/java or java)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
SRC_DIR="$REPO_ROOT/bench/kstreams"
POM="$SRC_DIR/pom.xml"
CACHE_DIR="${KSTREAMS_CACHE_DIR:-$REPO_ROOT/.cache/kstreams}"
HEAP_OPTS="${KSTREAMS_HEAP_OPTS:--Xms256m -Xmx1g}"
LOG_LEVEL="${KSTREAMS_LOG_LEVEL:-warn}"
if [[ -n "${JAVA:-}" ]]; then :
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"
else JAVA=java
fi

MARKER="$CACHE_DIR/.build-complete"
JAR="$CACHE_DIR/target/kstreams-peer.jar"
LIBS="$CACHE_DIR/libs"

log() { printf 'kstreams.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

sources_hash() { # pom + sources: a change rebuilds
  local sum=sha256sum
  command -v sha256sum >/dev/null 2>&1 || sum="shasum -a 256"
  (cd "$SRC_DIR" && find pom.xml src -type f | LC_ALL=C sort | xargs $sum) | $sum | cut -d' ' -f1
}

classpath() { echo "$JAR:$LIBS/*"; }

ensure_build() {
  local want
  want="$(sources_hash)"
  if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$want" && -f "$JAR" ]]; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found; Maven builds the peer (dependencies from Maven Central)"
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (set JAVA or JAVA_HOME); Java 17+ is required"
  log "building the Kafka Streams peer into $CACHE_DIR ..."
  local t0=$SECONDS mvn_log
  rm -rf "$CACHE_DIR"
  mkdir -p "$CACHE_DIR"
  mvn_log="$(mktemp)"
  if ! mvn -B -q -f "$POM" -DbuildDir="$CACHE_DIR/target" \
        package dependency:copy-dependencies -DoutputDirectory="$LIBS" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2; rm -f "$mvn_log"
    rm -rf "$CACHE_DIR"
    die "Maven build failed (see output above)"
  fi
  rm -f "$mvn_log"
  [[ -f "$JAR" ]] || die "build finished but $JAR is missing"
  ls "$LIBS"/kafka-streams-*.jar >/dev/null 2>&1 || die "build finished but kafka-streams is missing in $LIBS"
  echo "$want" >"$MARKER"
  log "built in $((SECONDS - t0))s ($(ls "$LIBS"/*.jar | wc -l) jars)"
}

case "${1:-}" in
  build|classpath)
    ensure_build
    classpath
    ;;
  run)
    ensure_build
    # shellcheck disable=SC2086  # HEAP_OPTS is intentionally word-split
    exec "$JAVA" $HEAP_OPTS -XX:+UseG1GC -Djava.awt.headless=true \
      -Dorg.slf4j.simpleLogger.defaultLogLevel="$LOG_LEVEL" -Dorg.slf4j.simpleLogger.logFile=System.err \
      -cp "$(classpath)" streamstats.peer.PeerApp
    ;;
  *) echo "usage: $0 build|classpath|run" >&2; exit 2 ;;
esac
