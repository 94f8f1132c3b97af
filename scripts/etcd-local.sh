#!/usr/bin/env bash
# Runs a local three-member etcd cluster on loopback, for the comparison in scripts/bench.sh.
#
#   scripts/etcd-local.sh install   install Debian's etcd-server if etcd is missing
#   scripts/etcd-local.sh start     install if needed, start m1..m3 in a fresh data dir, wait for a leader
#   scripts/etcd-local.sh stop      stop them and delete their data
#   scripts/etcd-local.sh status    show each member's pid and health
#
# Client URLs http://127.0.0.1:12379, 22379, 32379; peer URLs 12380, 22380, 32380 (not the
# default 2379, so a system etcd started by the Debian package cannot collide). Data, logs
# and pid files live under $ETCD_STATE (default ${TMPDIR:-/tmp}/raftlock-etcd)/m1..m3.
# Tuning is etcd's default; logs go to $ETCD_STATE/mN/log at warning level.
set -euo pipefail

STATE=${ETCD_STATE:-${TMPDIR:-/tmp}/raftlock-etcd}
ETCD=${ETCD_BIN:-etcd}
MEMBERS=(m1 m2 m3)
client_port() { echo "${1#m}2379"; }
peer_port() { echo "${1#m}2380"; }
INITIAL=""
for m in "${MEMBERS[@]}"; do
  INITIAL+="${INITIAL:+,}$m=http://127.0.0.1:$(peer_port "$m")"
done

cmd_install() {
  if command -v "$ETCD" >/dev/null 2>&1; then
    return 0
  fi
  echo "etcd-local.sh: etcd not found; installing Debian's etcd-server" >&2
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  # policy-rc.d keeps the package from starting a system etcd on 2379 where that is possible.
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; then
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  fi
  command -v "$ETCD" >/dev/null 2>&1 || { echo "etcd-local.sh: etcd still missing after install" >&2; exit 1; }
}

pid_of() {
  local f="$STATE/$1/pid"
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

healthy() { # healthy MEMBER
  curl -fsS "http://127.0.0.1:$(client_port "$1")/health" 2>/dev/null | grep -q '"health":"true"'
}

cmd_start() {
  cmd_install
  for m in "${MEMBERS[@]}"; do
    if pid=$(pid_of "$m"); then
      echo "etcd-local.sh: $m already running (pid $pid); run stop first" >&2
      exit 1
    fi
  done
  rm -rf "$STATE"
  for m in "${MEMBERS[@]}"; do
    mkdir -p "$STATE/$m"
    local c p
    c="http://127.0.0.1:$(client_port "$m")"
    p="http://127.0.0.1:$(peer_port "$m")"
    "$ETCD" --name "$m" --data-dir "$STATE/$m/data" \
      --listen-client-urls "$c" --advertise-client-urls "$c" \
      --listen-peer-urls "$p" --initial-advertise-peer-urls "$p" \
      --initial-cluster "$INITIAL" --initial-cluster-token raftlock-bench --initial-cluster-state new \
      --logger zap --log-outputs stderr --log-level warn >"$STATE/$m/log" 2>&1 &
    echo $! >"$STATE/$m/pid"
    echo "started etcd $m: client $c, peer $p, log $STATE/$m/log"
  done
  local deadline=$((SECONDS + 30))
  printf 'waiting for etcd' >&2
  while ((SECONDS < deadline)); do
    local ok=0
    for m in "${MEMBERS[@]}"; do healthy "$m" && ok=$((ok + 1)); done
    if ((ok == ${#MEMBERS[@]})); then
      printf ' ready (%s)\n' "$("$ETCD" --version | head -1)" >&2
      return 0
    fi
    printf '.' >&2
    sleep 0.3
  done
  printf ' gave up after 30 s; see %s/m*/log\n' "$STATE" >&2
  return 1
}

cmd_stop() {
  local pids=()
  for m in "${MEMBERS[@]}"; do
    if pid=$(pid_of "$m"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      echo "stopping etcd $m (pid $pid)"
    fi
  done
  local deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$STATE"
}

cmd_status() {
  for m in "${MEMBERS[@]}"; do
    if pid=$(pid_of "$m"); then
      if healthy "$m"; then h=healthy; else h=unhealthy; fi
      echo "$m: running (pid $pid), client http://127.0.0.1:$(client_port "$m"), $h"
    else
      echo "$m: stopped"
    fi
  done
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
