#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft) broker for tests, benchmarks and trying things out.
#
#   scripts/kafka.sh start    download (once) + format + start; prints the bootstrap address
#   scripts/kafka.sh stop     stop the broker and delete its data (KAFKA_KEEP_DATA=1: keep it)
#   scripts/kafka.sh status   exit 0 if running and ready, 1 otherwise
#   scripts/kafka.sh logs     show the broker log (LOG_LINES=n for the last n lines, FOLLOW=1 to tail -f)
#   scripts/kafka.sh tool NAME [ARGS...]
#                             run one of Kafka's command-line tools (kafka-consumer-groups,
#                             kafka-console-consumer, kafka-topics, kafka-get-offsets) from the
#                             kafka-tools jars, fetched once from Maven Central into <cache>/../tools
#
# Needs: Java 17+, Maven (only for the first download, from Maven Central).
#
# Environment:
#   KAFKA_CACHE_DIR        jars folder            (default <repo>/.cache/kafka/libs)
#   KAFKA_RUN_DIR          state/log folder       (default <repo>/.cache/kafka/run)
#   KAFKA_PORT             client port            (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port  (default 9093)
#   KAFKA_HEAP_OPTS        JVM heap               (default "-Xms256m -Xmx1g")
#   KAFKA_START_TIMEOUT    seconds to wait        (default 90)
#   JAVA                   java binary            (default $JAVA_HOME/bin/java or java)
#   KAFKA_KEEP_DATA        1 = stop keeps the data and the next start reuses it (a broker restart,
#                          e.g. for outage tests); default 0: stop deletes it, start formats anew.
#                          A failed start never deletes data; with 1, data that is no broker's as it
#                          stands (no readable meta.properties) stops the start and is left alone
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA_CONF_DIR="$SCRIPT_DIR/kafka"
POM="$KAFKA_CONF_DIR/pom.xml"
TEMPLATE="$KAFKA_CONF_DIR/server.properties.template"
LOG4J="$KAFKA_CONF_DIR/log4j.properties"

CACHE_DIR="${KAFKA_CACHE_DIR:-$REPO_ROOT/.cache/kafka/libs}"
RUN_DIR="${KAFKA_RUN_DIR:-$REPO_ROOT/.cache/kafka/run}"
HOST=127.0.0.1
PORT="${KAFKA_PORT:-9092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KEEP_DATA="${KAFKA_KEEP_DATA:-0}"
if [[ -n "${JAVA:-}" ]]; then :
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"
else JAVA=java
fi

MARKER="$CACHE_DIR/.kafka-libs-complete"
PID_FILE="$RUN_DIR/kafka.pid"
DATA_DIR_FILE="$RUN_DIR/data-dir"     # path of the current run's log.dirs
PORT_FILE="$RUN_DIR/kafka.port"       # client port of the running broker (status/stop ignore KAFKA_PORT)
PROPS="$RUN_DIR/server.properties"
SERVER_LOG="$RUN_DIR/server.log"      # log4j output (see scripts/kafka/log4j.properties)
STDOUT_LOG="$RUN_DIR/kafka.out"       # JVM stdout/stderr (crashes, GC warnings)
READY_PATTERN='Kafka Server started'  # "[KafkaRaftServer nodeId=1] Kafka Server started"

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------- helpers

port_open() { # port -> 0 if something accepts TCP connections on HOST:port
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

broker_pid() { # prints the pid if our broker process is alive
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against pid reuse: it must be a JVM running kafka.Kafka.
  ps -p "$pid" -o args= 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

running_port() { # the port the broker in RUN_DIR was started with
  local p
  p="$(cat "$PORT_FILE" 2>/dev/null || true)"
  if [[ "$p" =~ ^[0-9]+$ ]]; then echo "$p"; else echo "$PORT"; fi
}

is_ready() {
  broker_pid >/dev/null && port_open "$(running_port)" && grep -q "$READY_PATTERN" "$SERVER_LOG" 2>/dev/null
}

classpath() { echo "$CACHE_DIR/*"; }

ensure_java() {
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (set JAVA or JAVA_HOME); Java 17+ is required"
}

pom_hash() { # sha256sum on Linux, shasum on macOS
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$POM"; else shasum -a 256 "$POM"; fi | cut -d' ' -f1
}

ensure_libs() {
  if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$(pom_hash)" ]]; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found; it is needed once to download Kafka from Maven Central"
  log "downloading Kafka jars from Maven Central into $CACHE_DIR (one-time) ..."
  local t0=$SECONDS
  rm -rf "$CACHE_DIR"
  mkdir -p "$CACHE_DIR"
  local mvn_log
  mvn_log="$(mktemp)"
  if ! mvn -B -q -f "$POM" dependency:copy-dependencies \
        -DoutputDirectory="$CACHE_DIR" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2; rm -f "$mvn_log"
    rm -rf "$CACHE_DIR"
    die "Maven download failed (see output above)"
  fi
  rm -f "$mvn_log"
  ls "$CACHE_DIR"/kafka_2.13-*.jar >/dev/null 2>&1 || die "download finished but kafka_2.13 jar is missing in $CACHE_DIR"
  pom_hash >"$MARKER"
  log "downloaded $(ls "$CACHE_DIR"/*.jar | wc -l) jars in $((SECONDS - t0))s"
}

cleanup_data() {
  # Remove every data dir this script ever created under RUN_DIR (current and stale ones).
  rm -rf "$RUN_DIR"/data.* 2>/dev/null || true
  rm -f "$DATA_DIR_FILE" "$PID_FILE" "$PORT_FILE"
}

show_log_tail() {
  local n="${1:-50}"
  if [[ -s "$SERVER_LOG" ]]; then
    log "last $n lines of $SERVER_LOG:"; tail -n "$n" "$SERVER_LOG" >&2
  fi
  if [[ -s "$STDOUT_LOG" ]]; then
    log "last $n lines of $STDOUT_LOG:"; tail -n "$n" "$STDOUT_LOG" >&2
  fi
}

# ---------------------------------------------------------------- commands

cmd_start() {
  if broker_pid >/dev/null; then
    if is_ready; then
      log "already running (pid $(cat "$PID_FILE"))"
      echo "$HOST:$(running_port)"
      return 0
    fi
    log "a broker (pid $(cat "$PID_FILE")) is running but not ready yet; waiting ..."
    wait_ready
    return
  fi

  ensure_java
  for p in "$PORT" "$CONTROLLER_PORT"; do
    port_open "$p" && die "port $HOST:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  done
  ensure_libs

  mkdir -p "$RUN_DIR"
  local data_dir="" reuse=0
  if [[ "$KEEP_DATA" == 1 && -s "$DATA_DIR_FILE" ]]; then
    data_dir="$(cat "$DATA_DIR_FILE")"
    if [[ -s "$data_dir/meta.properties" ]]; then
      reuse=1
    elif [[ -d "$data_dir" ]] && [[ -n "$(ls -A "$data_dir" 2>/dev/null)" ]]; then
      # Data kept on purpose, but not a broker's as it stands (a kill -9 can leave meta.properties
      # empty): neither formatted over nor deleted. Only the operator knows whether it matters.
      die "KAFKA_KEEP_DATA=1: $data_dir has no readable meta.properties; not starting over it and not deleting it (move it away, or run stop with KAFKA_KEEP_DATA=0 to delete it)"
    fi
  fi
  if ((reuse == 0)); then
    # KAFKA_KEEP_DATA=0 means each start begins anew: earlier runs' data goes. With 1 nothing is deleted.
    [[ "$KEEP_DATA" == 1 ]] || cleanup_data
    data_dir="$(mktemp -d "$RUN_DIR/data.XXXXXX")"
    echo "$data_dir" >"$DATA_DIR_FILE"
  fi
  echo "$PORT" >"$PORT_FILE"

  sed -e "s|@HOST@|$HOST|g" -e "s|@PORT@|$PORT|g" \
      -e "s|@CONTROLLER_PORT@|$CONTROLLER_PORT|g" -e "s|@LOG_DIR@|$data_dir|g" \
      "$TEMPLATE" >"$PROPS"

  # Fresh log files for this run (keep the previous one for post-mortems).
  [[ -f "$SERVER_LOG" ]] && mv -f "$SERVER_LOG" "$SERVER_LOG.prev"
  [[ -f "$STDOUT_LOG" ]] && mv -f "$STDOUT_LOG" "$STDOUT_LOG.prev"

  local cp cluster_id
  cp="$(classpath)"
  if ((reuse == 1)); then
    log "reusing the data in $data_dir (KAFKA_KEEP_DATA=1)"
  else
    cluster_id="$("$JAVA" -cp "$cp" -Dlog4j.configuration="file:$LOG4J" -Dkafka.logs.dir="$RUN_DIR" \
                   kafka.tools.StorageTool random-uuid)"
    # Static quorum (controller.quorum.voters) => no --standalone (that is for dynamic quorums).
    if ! "$JAVA" -cp "$cp" -Dlog4j.configuration="file:$LOG4J" -Dkafka.logs.dir="$RUN_DIR" \
          kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS" >"$RUN_DIR/format.log" 2>&1; then
      cat "$RUN_DIR/format.log" >&2
      die "storage format failed"
    fi
  fi

  # setsid: own session/process group, survives the calling shell (no setsid on macOS: nohup
  # alone is enough there). The pid file is written by the process itself right before exec,
  # so it is the JVM's pid.
  # A pid file left by a broker that was killed (kill -9 leaves it) names a dead process: gone before
  # the launch, so that wait_ready only ever reads the pid this launch writes.
  rm -f "$PID_FILE"
  local detach=()
  command -v setsid >/dev/null 2>&1 && detach=(setsid)
  # shellcheck disable=SC2086  # HEAP_OPTS is intentionally word-split
  nohup ${detach[@]+"${detach[@]}"} bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
    "$JAVA" $HEAP_OPTS -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true \
    -Dkafka.logs.dir="$RUN_DIR" -Dlog4j.configuration="file:$LOG4J" \
    -cp "$cp" kafka.Kafka "$PROPS" \
    </dev/null >"$STDOUT_LOG" 2>&1 &
  disown 2>/dev/null || true

  wait_ready
}

wait_ready() {
  local deadline=$((SECONDS + START_TIMEOUT)) t0=$SECONDS
  # The wrapper writes the pid file right before exec; on a loaded machine that can take a while.
  while [[ ! -s "$PID_FILE" ]] && ((SECONDS < deadline)); do sleep 0.1; done
  while ((SECONDS < deadline)); do
    if is_ready; then
      log "ready in ~$((SECONDS - t0))s (pid $(cat "$PID_FILE"), data $(cat "$DATA_DIR_FILE" 2>/dev/null), log $SERVER_LOG)"
      echo "$HOST:$(running_port)"
      return 0
    fi
    if ! broker_pid >/dev/null; then
      # A failed start never deletes data: it may be a kept broker's (KAFKA_KEEP_DATA=1) that a
      # broker refused for a reason worth reading; stop deletes it when the operator asks to.
      log "broker process exited during startup; its data is kept in $(cat "$DATA_DIR_FILE" 2>/dev/null)"
      show_log_tail 50
      rm -f "$PID_FILE" "$PORT_FILE"
      exit 1
    fi
    sleep 0.25
  done
  log "broker not ready after ${START_TIMEOUT}s"
  show_log_tail 50
  exit 1
}

cmd_stop() {
  local pid
  if ! pid="$(broker_pid)"; then
    log "not running"
    cleanup_data
    return 0
  fi
  log "stopping broker (pid $pid) ..."
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 200; i++)); do   # up to 20 s
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after 20s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [[ "$KEEP_DATA" == 1 ]]; then
    rm -f "$PID_FILE" "$PORT_FILE"
    log "stopped (data kept in $(cat "$DATA_DIR_FILE" 2>/dev/null))"
  else
    cleanup_data
    log "stopped"
  fi
}

cmd_status() {
  local pid
  if pid="$(broker_pid)"; then
    if is_ready; then
      echo "running and ready (pid $pid) at $HOST:$(running_port)"
      return 0
    fi
    echo "running (pid $pid) but not ready"
    return 1
  fi
  echo "not running"
  return 1
}

cmd_logs() {
  [[ -f "$SERVER_LOG" ]] || die "no log yet ($SERVER_LOG)"
  if [[ "${FOLLOW:-0}" == 1 ]]; then
    exec tail -n "${LOG_LINES:-100}" -F "$SERVER_LOG"
  elif [[ -n "${LOG_LINES:-}" ]]; then
    tail -n "$LOG_LINES" "$SERVER_LOG"
  else
    cat "$SERVER_LOG"
  fi
}

# Kafka's tools live in their own jar set, not beside the broker's: a changed broker pom replaces the
# broker's jars, which must never happen under a running broker because an operator asked for a tool.
TOOLS_POM="$KAFKA_CONF_DIR/tools-pom.xml"
TOOLS_DIR="${KAFKA_TOOLS_DIR:-$(dirname "$CACHE_DIR")/tools}"

cmd_tool() {
  local name="${1:-}"
  [[ -n "$name" ]] || die "tool: name one of kafka-consumer-groups, kafka-console-consumer, kafka-topics, kafka-get-offsets"
  shift
  local class
  case "$name" in
    kafka-consumer-groups|kafka-consumer-groups.sh) class=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
    kafka-console-consumer|kafka-console-consumer.sh) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
    kafka-topics|kafka-topics.sh) class=org.apache.kafka.tools.TopicCommand ;;
    kafka-get-offsets|kafka-get-offsets.sh) class=org.apache.kafka.tools.GetOffsetShell ;;
    *) die "tool: unknown tool \"$name\": kafka-consumer-groups, kafka-console-consumer, kafka-topics and kafka-get-offsets are allowed" ;;
  esac
  ensure_java
  local marker="$TOOLS_DIR/.complete" hash
  hash="$( (sha256sum "$TOOLS_POM" 2>/dev/null || shasum -a 256 "$TOOLS_POM") | cut -d' ' -f1)"
  if [[ ! -f "$marker" || "$(cat "$marker")" != "$hash" ]]; then
    command -v mvn >/dev/null 2>&1 || die "mvn not found; it is needed once to download Kafka's tools from Maven Central"
    log "downloading Kafka's tools from Maven Central into $TOOLS_DIR (one-time) ..."
    local tmp="$TOOLS_DIR.tmp.$$" mvn_log
    rm -rf "$tmp" && mkdir -p "$tmp"
    mvn_log="$(mktemp)"
    if ! mvn -B -q -f "$TOOLS_POM" dependency:copy-dependencies -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
      cat "$mvn_log" >&2; rm -f "$mvn_log"; rm -rf "$tmp"
      die "Maven download of Kafka's tools failed (see output above)"
    fi
    rm -f "$mvn_log"
    echo "$hash" > "$tmp/.complete"
    rm -rf "$TOOLS_DIR" && mv "$tmp" "$TOOLS_DIR"
  fi
  exec "$JAVA" -Dlog4j.configuration="file:$KAFKA_CONF_DIR/tools-log4j.properties" -cp "$TOOLS_DIR/*" "$class" "$@"
}

case "${1:-}" in
  start)  cmd_start ;;
  stop)   cmd_stop ;;
  status) cmd_status ;;
  logs)   cmd_logs ;;
  tool)   shift; cmd_tool "$@" ;;
  *) echo "usage: $0 start|stop|status|logs|tool NAME [ARGS...]" >&2; exit 2 ;;
esac
