#!/usr/bin/env bash
# Runs a local single Redis server on loopback, for the comparison in scripts/bench.sh.
#
#   scripts/redis-local.sh install        install Debian's redis-server if it is missing
#   scripts/redis-local.sh start [FSYNC]  install if needed, start it in a fresh data dir with
#                                         the append-only file on and appendfsync FSYNC
#                                         (everysec, the shipped default, or always)
#   scripts/redis-local.sh stop           stop it and delete its data
#   scripts/redis-local.sh status         show its pid and appendfsync
#
# Port 127.0.0.1:$REDIS_PORT (default 63791, not 6379, so a system Redis the package may have
# started cannot collide). Data, log and pid file live under $REDIS_STATE (default
# ${TMPDIR:-/tmp}/raftlock-redis). The append-only file is on (the package ships it off, which
# would lose acknowledged locks on any restart) and RDB snapshots are off, so the only disk
# work is the AOF at the fsync policy asked for; everything else is the package's default.
set -euo pipefail
# shellcheck source=scripts/lib-local.sh
. "$(dirname "$0")/lib-local.sh"

STATE=${REDIS_STATE:-${TMPDIR:-/tmp}/raftlock-redis}
PORT=${REDIS_PORT:-63791}
SERVER=${REDIS_SERVER:-redis-server}

cmd_install() {
  need_command redis-local.sh "$SERVER" redis-server
}

pid_of() {
  [[ -f $STATE/pid ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null && cat "$STATE/pid"
}

# ping answers true when the server says PONG (RESP spoken over bash's /dev/tcp).
ping() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 2 ans <&3 || ans=""
    [[ $ans == +PONG* ]]
  ) 2>/dev/null
}

cmd_start() {
  local fsync=${1:-everysec}
  case $fsync in
    everysec | always) ;;
    *) echo "redis-local.sh: appendfsync $fsync: want everysec or always" >&2; exit 2 ;;
  esac
  cmd_install
  refuse_running redis-local.sh "" ""
  rm -rf "$STATE"
  mkdir -p "$STATE/data"
  "$SERVER" --bind 127.0.0.1 --port "$PORT" --dir "$STATE/data" --daemonize no \
    --appendonly yes --appendfsync "$fsync" --save "" --logfile "$STATE/log" --loglevel warning \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/pid"
  echo "$fsync" >"$STATE/appendfsync"
  echo "started redis: 127.0.0.1:$PORT, appendfsync $fsync, log $STATE/log"
  wait_ready redis 30 "$STATE/log" ping || return 1
  printf ' (%s)\n' "$("$SERVER" --version | cut -d' ' -f1-3)" >&2
}

cmd_stop() {
  stop_servers redis "" ""
  rm -rf "$STATE"
}

cmd_status() {
  if pid=$(pid_of); then
    echo "redis: running (pid $pid), 127.0.0.1:$PORT, appendfsync $(cat "$STATE/appendfsync" 2>/dev/null)"
  else
    echo "redis: stopped"
  fi
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start "${2:-everysec}" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 install|start [everysec|always]|stop|status" >&2; exit 2 ;;
esac
