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
# Tuning is etcd's default; logs go to $ETCD_STATE/mN/log at warning level. ETCD_PPROF=1 adds
# --enable-pprof: each member then serves /debug/pprof on its client URL (scripts/bench.sh
# --profile fetches CPU profiles there).
set -euo pipefail
# shellcheck source=scripts/lib-local.sh
. "$(dirname "$0")/lib-local.sh"

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
  need_command etcd-local.sh "$ETCD" etcd-server
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
  refuse_running etcd-local.sh "" "${MEMBERS[@]}"
  rm -rf "$STATE"
  for m in "${MEMBERS[@]}"; do
    mkdir -p "$STATE/$m"
    local c p
    c="http://127.0.0.1:$(client_port "$m")"
    p="http://127.0.0.1:$(peer_port "$m")"
    local extra=()
    if [[ ${ETCD_PPROF:-0} == 1 ]]; then extra+=(--enable-pprof); fi
    "$ETCD" --name "$m" --data-dir "$STATE/$m/data" "${extra[@]}" \
      --listen-client-urls "$c" --advertise-client-urls "$c" \
      --listen-peer-urls "$p" --initial-advertise-peer-urls "$p" \
      --initial-cluster "$INITIAL" --initial-cluster-token raftlock-bench --initial-cluster-state new \
      --logger zap --log-outputs stderr --log-level warn >"$STATE/$m/log" 2>&1 &
    echo $! >"$STATE/$m/pid"
    echo "started etcd $m: client $c, peer $p, log $STATE/$m/log"
  done
  wait_ready etcd 30 "$STATE/m*/log" all_healthy || return 1
  printf ' (%s)\n' "$("$ETCD" --version | head -1)" >&2
}

all_healthy() {
  local m
  for m in "${MEMBERS[@]}"; do healthy "$m" || return 1; done
}

cmd_stop() {
  stop_servers etcd "" "${MEMBERS[@]}"
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
