#!/usr/bin/env bash
# Runs a local three-server ZooKeeper ensemble on loopback, for the comparison in scripts/bench.sh.
#
#   scripts/zk-local.sh install   install Debian's zookeeper package if it is missing
#   scripts/zk-local.sh start     install if needed, start zk1..zk3 in a fresh data dir, wait for a leader
#   scripts/zk-local.sh stop      stop them and delete their data
#   scripts/zk-local.sh status    show each server's pid and mode (leader, follower)
#
# Client ports 127.0.0.1:21811, 21812, 21813; quorum ports 21821-21823, election ports
# 21831-21833 (not the default 2181, so a system ZooKeeper cannot collide). Data (snapshots and
# the transaction log, on the same file system as the other systems' data), logs and pid files
# live under $ZK_STATE (default ${TMPDIR:-/tmp}/raftlock-zk)/zk1..zk3.
#
# Tuning is the package's (tickTime 2000, initLimit 10, syncLimit 5, forceSync on: every
# transaction is fsynced before it is acknowledged; the JVM's default heap), with three changes
# a benchmark needs: maxClientCnxns=0 (the default of 60 connections per client address would
# refuse the parallel workload's 64 sessions, all from 127.0.0.1), the admin HTTP server off
# (it would take port 8080), and the four-letter words srvr and ruok allowed, to find the leader.
set -euo pipefail
# shellcheck source=scripts/lib-local.sh
. "$(dirname "$0")/lib-local.sh"

STATE=${ZK_STATE:-${TMPDIR:-/tmp}/raftlock-zk}
JAVA=${JAVA:-java}
JAR=${ZK_JAR:-/usr/share/java/zookeeper.jar}
SERVERS=(1 2 3)
client_port() { echo "2181$1"; }

cmd_install() {
  if [[ -f $JAR ]] && command -v "$JAVA" >/dev/null 2>&1; then
    return 0
  fi
  echo "zk-local.sh: ZooKeeper not found; installing Debian's zookeeper" >&2
  apt_install zookeeper
  [[ -f $JAR ]] || { echo "zk-local.sh: $JAR still missing after install" >&2; exit 1; }
}

# version prints the installed package's version ("3.8.0-11+deb12u2").
version() { dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo unknown; }

pid_of() {
  local f="$STATE/zk$1/pid"
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

# fourlw PORT WORD sends a four-letter word to a server and prints its answer.
fourlw() {
  local ans
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf '%s' "$2" >&3
  ans=$(timeout 2 cat <&3) || true
  exec 3<&- 3>&-
  printf '%s' "$ans"
}

mode() { fourlw "$(client_port "$1")" srvr 2>/dev/null | sed -n 's/^Mode: //p'; }

cmd_start() {
  cmd_install
  refuse_running zk-local.sh zk "${SERVERS[@]}"
  rm -rf "$STATE"
  for s in "${SERVERS[@]}"; do
    local d="$STATE/zk$s"
    mkdir -p "$d/data"
    echo "$s" >"$d/data/myid"
    {
      echo "tickTime=2000"
      echo "initLimit=10"
      echo "syncLimit=5"
      echo "dataDir=$d/data"
      echo "clientPort=$(client_port "$s")"
      echo "clientPortAddress=127.0.0.1"
      echo "maxClientCnxns=0"
      echo "admin.enableServer=false"
      echo "4lw.commands.whitelist=srvr,ruok"
      for t in "${SERVERS[@]}"; do echo "server.$t=127.0.0.1:2182$t:2183$t"; done
    } >"$d/zoo.cfg"
    # The package's classpath (/etc/zookeeper/conf/environment): the jar's manifest names its
    # dependencies. No SLF4J binding is on it, so the server logs nothing, as installed.
    "$JAVA" -cp "/etc/zookeeper/conf:$JAR" -XX:+HeapDumpOnOutOfMemoryError \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >"$d/log" 2>&1 </dev/null &
    echo $! >"$d/pid"
    echo "started zookeeper zk$s: client 127.0.0.1:$(client_port "$s"), log $d/log"
  done
  wait_ready zookeeper 60 "$STATE/zk*/log" one_leader || return 1
  printf ' (zookeeper %s)\n' "$(version)" >&2
}

# one_leader: one server leads and every other follows.
one_leader() {
  local s leaders=0 followers=0
  for s in "${SERVERS[@]}"; do
    case $(mode "$s") in
      leader) leaders=$((leaders + 1)) ;;
      follower) followers=$((followers + 1)) ;;
    esac
  done
  ((leaders == 1 && followers == ${#SERVERS[@]} - 1))
}

cmd_stop() {
  stop_servers zookeeper zk "${SERVERS[@]}"
  rm -rf "$STATE"
}

cmd_status() {
  for s in "${SERVERS[@]}"; do
    if pid=$(pid_of "$s"); then
      echo "zk$s: running (pid $pid), client 127.0.0.1:$(client_port "$s"), $(mode "$s")"
    else
      echo "zk$s: stopped"
    fi
  done
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  version) version ;;
  *) echo "usage: $0 install|start|stop|status|version" >&2; exit 2 ;;
esac
