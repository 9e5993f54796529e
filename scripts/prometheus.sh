#!/usr/bin/env bash
# A real Prometheus for the integration test, CI, and trying the dashboards' queries without Docker.
#
#   scripts/prometheus.sh install   apt-get install Debian's prometheus (+ promtool) unless on PATH
#   scripts/prometheus.sh check     promtool: the repo's config, rules and rule unit tests
#   scripts/prometheus.sh start     run Prometheus in the background, scraping a local engine
#   scripts/prometheus.sh stop      stop it and delete its data
#   scripts/prometheus.sh status    exit 0 if running and ready
#
# Environment (start):
#   PROMETHEUS_PORT        HTTP port, on 127.0.0.1      (default 9090)
#   STREAMSTATS_TARGET     engine to scrape             (default localhost:9464)
#   PROMETHEUS_RUN_DIR     config, data and log folder  (default <repo>/.cache/prometheus/run)
#   PROMETHEUS_START_TIMEOUT  seconds to wait for /-/ready (default 30)
#
# `start` runs deploy/prometheus/prometheus.yml with the compose target (streamstats:9464) replaced
# by STREAMSTATS_TARGET, and deploy/prometheus/rules.yml as is.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CONF_DIR="$REPO_ROOT/deploy/prometheus"
RUN_DIR="${PROMETHEUS_RUN_DIR:-$REPO_ROOT/.cache/prometheus/run}"
PORT="${PROMETHEUS_PORT:-9090}"
TARGET="${STREAMSTATS_TARGET:-localhost:9464}"
START_TIMEOUT="${PROMETHEUS_START_TIMEOUT:-30}"
PID_FILE="$RUN_DIR/prometheus.pid"
PORT_FILE="$RUN_DIR/prometheus.port"
LOG_FILE="$RUN_DIR/prometheus.log"

log() { printf 'prometheus.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

have_prometheus() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

cmd_install() {
  if have_prometheus; then
    log "already installed: $(prometheus --version 2>&1 | head -1)"
    return 0
  fi
  command -v apt-get >/dev/null 2>&1 || die "prometheus is not on PATH and there is no apt-get: install Prometheus 2.x (prometheus and promtool) yourself"
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "installing needs root (or sudo)"
    sudo=(sudo)
  fi
  # Debian's postinst starts the service (invoke-rc.d, or systemd when it runs). Here and in CI
  # nothing may stay bound to 9090, so deny service starts for the duration of the install, unless
  # a policy is already in place (Docker images ship one that denies everything).
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\n# temporary, from streamstats scripts/prometheus.sh install\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    own_policy=1
  fi
  local status=0
  {
    # The package lists may be missing (slim images) or stale: update first, quietly.
    "${sudo[@]}" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends prometheus
  } >"${TMPDIR:-/tmp}/prometheus-install.log" 2>&1 || status=$?
  if ((own_policy)); then "${sudo[@]}" rm -f "$policy"; fi
  if ((status != 0)); then
    cat "${TMPDIR:-/tmp}/prometheus-install.log" >&2
    die "apt-get install prometheus failed (status $status)"
  fi
  # Belt and braces: on a machine running systemd the unit may still have been started.
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
  have_prometheus || die "installed, but prometheus/promtool are still not on PATH"
  log "installed: $(prometheus --version 2>&1 | head -1)"
}

cmd_check() {
  command -v promtool >/dev/null 2>&1 || die "promtool not found: run scripts/prometheus.sh install"
  # check config also loads and checks the rule files it names.
  promtool check config "$CONF_DIR/prometheus.yml"
  promtool check rules "$CONF_DIR/rules.yml"
  (cd "$CONF_DIR" && promtool test rules rules.test.yml)
}

server_pid() { # prints the pid if our Prometheus is alive
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against pid reuse: it must be a prometheus process.
  ps -p "$pid" -o args= 2>/dev/null | grep -q 'prometheus' || return 1
  echo "$pid"
}

running_port() {
  local p
  p="$(cat "$PORT_FILE" 2>/dev/null || true)"
  if [[ "$p" =~ ^[0-9]+$ ]]; then echo "$p"; else echo "$PORT"; fi
}

is_ready() { # /-/ready answers 200 once the TSDB is open and the config loaded
  local port
  port="$(running_port)"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS -o /dev/null "http://127.0.0.1:$port/-/ready"
  else
    node -e "fetch('http://127.0.0.1:$port/-/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
  fi
}

cmd_start() {
  command -v prometheus >/dev/null 2>&1 || die "prometheus not found: run scripts/prometheus.sh install"
  local pid
  if pid="$(server_pid)"; then
    log "already running (pid $pid) on http://127.0.0.1:$(running_port)"
    echo "http://127.0.0.1:$(running_port)"
    return 0
  fi
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && die "port 127.0.0.1:$PORT is in use (set PROMETHEUS_PORT)"
  mkdir -p "$RUN_DIR"
  rm -rf "$RUN_DIR/data"
  sed -e "s|\"streamstats:9464\"|\"$TARGET\"|" -e "s|\"localhost:9090\"|\"127.0.0.1:$PORT\"|" \
    "$CONF_DIR/prometheus.yml" >"$RUN_DIR/prometheus.yml"
  cp "$CONF_DIR/rules.yml" "$RUN_DIR/rules.yml"
  promtool check config "$RUN_DIR/prometheus.yml" >/dev/null
  echo "$PORT" >"$PORT_FILE"
  [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.prev"
  local detach=()
  command -v setsid >/dev/null 2>&1 && detach=(setsid)
  nohup ${detach[@]+"${detach[@]}"} bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
    prometheus --config.file="$RUN_DIR/prometheus.yml" --storage.tsdb.path="$RUN_DIR/data" \
    --web.listen-address="127.0.0.1:$PORT" \
    </dev/null >"$LOG_FILE" 2>&1 &
  disown 2>/dev/null || true
  local deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if server_pid >/dev/null && is_ready; then
      log "ready (pid $(cat "$PID_FILE")), scraping $TARGET, log $LOG_FILE"
      echo "http://127.0.0.1:$PORT"
      return 0
    fi
    if [[ -s "$PID_FILE" ]] && ! server_pid >/dev/null; then
      tail -n 30 "$LOG_FILE" >&2 || true
      die "prometheus exited during startup"
    fi
    sleep 0.25
  done
  tail -n 30 "$LOG_FILE" >&2 || true
  die "prometheus not ready after ${START_TIMEOUT}s"
}

cmd_stop() {
  local pid
  if ! pid="$(server_pid)"; then
    log "not running"
    rm -rf "$RUN_DIR/data" "$PID_FILE" "$PORT_FILE"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for ((i = 0; i < 100; i++)); do   # up to 10 s
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -rf "$RUN_DIR/data" "$PID_FILE" "$PORT_FILE"
  log "stopped"
}

cmd_status() {
  local pid
  if pid="$(server_pid)" && is_ready; then
    echo "running and ready (pid $pid) on http://127.0.0.1:$(running_port)"
    return 0
  fi
  echo "not running"
  return 1
}

case "${1:-}" in
  install) cmd_install ;;
  check)   cmd_check ;;
  start)   cmd_start ;;
  stop)    cmd_stop ;;
  status)  cmd_status ;;
  *) echo "usage: $0 install|check|start|stop|status" >&2; exit 2 ;;
esac
