#!/usr/bin/env bash
# Runs a local three-node raftlock cluster on loopback.
#
#   scripts/cluster.sh start    start n1..n3 in the background, wait until a leader is ready
#   scripts/cluster.sh stop     stop them (SIGTERM, then SIGKILL after 10 s)
#   scripts/cluster.sh status   show each node's pid and the cluster as n1..n3 see it
#   scripts/cluster.sh run      start in the foreground with prefixed logs; Ctrl-C stops all
#   scripts/cluster.sh env      print the export lines a client needs (eval "$(... env --tls --acl)")
#
# start and run take --tls (a development CA and certificates under $STATE/tls, made with
# `raftlock tls`; HTTPS and mutual TLS between nodes) and --acl (ACLs on; the first start
# bootstraps them and writes the management token to $STATE/acl-token, mode 0600), and
# print the environment a client needs.
#
# HTTP on 127.0.0.1:7001-7003, Raft on 127.0.0.1:8001-8003. Data, logs and pid files live
# under $RAFTLOCK_STATE (default .raftlock)/n1..n3. The binary is $RAFTLOCK_BIN (default
# bin/raftlock, built with 'make build').
set -euo pipefail

cd "$(dirname "$0")/.."
STATE=${RAFTLOCK_STATE:-.raftlock}
BIN=${RAFTLOCK_BIN:-bin/raftlock}
NODES=(n1 n2 n3)
BOOTSTRAP="n1=127.0.0.1:8001,n2=127.0.0.1:8002,n3=127.0.0.1:8003"

TLS=0
ACL=0
TLSDIR=

http_port() { echo $((7000 + ${1#n})); }

scheme() { if ((TLS)); then echo https; else echo http; fi; }

# curl_node ARGS...: curl with the client certificate and the management token when on.
curl_node() {
  local args=(-fsS)
  if ((TLS)); then args+=(--cacert "$TLSDIR/ca.pem" --cert "$TLSDIR/local.pem" --key "$TLSDIR/local-key.pem"); fi
  curl "${args[@]}" "$@"
}

# make_certs: the development CA, one certificate per node and one client certificate.
make_certs() {
  TLSDIR="$STATE/tls"
  mkdir -p "$TLSDIR"
  chmod 700 "$TLSDIR"
  if [[ ! -f $TLSDIR/ca.pem ]]; then
    "$BIN" tls ca --dir "$TLSDIR" >/dev/null
    for id in "${NODES[@]}"; do "$BIN" tls cert --node "$id" --dir "$TLSDIR" >/dev/null; done
    "$BIN" tls cert --client local --dir "$TLSDIR" >/dev/null
    echo "made a development CA and certificates in $TLSDIR" >&2
  fi
}

serve_flags() { # serve_flags ID: the TLS and ACL flags for node ID
  if ((TLS)); then
    echo --tls-cert "$TLSDIR/$1.pem" --tls-key "$TLSDIR/$1-key.pem" --tls-ca "$TLSDIR/ca.pem" --tls-client-auth require
  fi
  if ((ACL)); then echo --acl; fi
  # the benchmark's profiles (scripts/bench.sh --profile): node nK serves /debug/pprof on
  # 127.0.0.1:$RAFTLOCK_PPROF_BASE+K
  if [[ -n ${RAFTLOCK_PPROF_BASE:-} ]]; then echo --pprof-addr "127.0.0.1:$((RAFTLOCK_PPROF_BASE + ${1#n}))"; fi
}

abspath() { if [[ $1 == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi; }

client_env() { # the environment a client needs, as export lines
  local eps=() tls
  tls=$(abspath "$TLSDIR")
  for id in "${NODES[@]}"; do eps+=("$(scheme)://127.0.0.1:$(http_port "$id")"); done
  echo "export RAFTLOCK_ENDPOINTS=$(IFS=,; echo "${eps[*]}")"
  if ((TLS)); then
    echo "export RAFTLOCK_TLS_CA=$tls/ca.pem RAFTLOCK_TLS_CERT=$tls/local.pem RAFTLOCK_TLS_KEY=$tls/local-key.pem"
  fi
  if ((ACL)); then echo "export RAFTLOCK_ACL_TOKEN_FILE=$(abspath "$STATE")/acl-token"; fi
}

# acl_bootstrap: once per cluster, keep the management token in $STATE/acl-token (0600).
acl_bootstrap() {
  ((ACL)) || return 0
  [[ -s $STATE/acl-token ]] && return 0
  local eval_env out
  eval_env=$(client_env | grep -v ACL_TOKEN_FILE)
  out=$(eval "$eval_env"; "$BIN" acl bootstrap --json)
  (umask 077; printf '%s\n' "$out" | sed -n 's/.*"secret_id": *"\([^"]*\)".*/\1/p' >"$STATE/acl-token")
  [[ -s $STATE/acl-token ]] || { echo "cluster.sh: ACL bootstrap gave no token: $out" >&2; return 1; }
  echo "ACLs bootstrapped; the management token is in $STATE/acl-token (mode 0600)" >&2
}
raft_port() { echo $((8000 + ${1#n})); }

need_bin() {
  if [[ ! -x $BIN ]]; then
    echo "cluster.sh: $BIN not found; run 'make build' first" >&2
    exit 1
  fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

check_ports() { # refuse to start over something else listening on our ports
  local id
  for id in "${NODES[@]}"; do
    if pid_of "$id" >/dev/null; then continue; fi
    for port in "$(http_port "$id")" "$(raft_port "$id")"; do
      if port_busy "$port"; then
        echo "cluster.sh: port $port (for $id) is already in use; is another cluster running? ('scripts/cluster.sh stop', or stop whatever listens there)" >&2
        exit 1
      fi
    done
  done
}

pid_of() {
  local f="$STATE/$1/pid"
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

start_node() { # start_node ID LOGFILE
  local id=$1 log=$2
  mkdir -p "$STATE/$id/data"
  # shellcheck disable=SC2046 # serve_flags prints separate words
  "$BIN" serve --id "$id" \
    --http-addr "127.0.0.1:$(http_port "$id")" --raft-addr "127.0.0.1:$(raft_port "$id")" \
    --data-dir "$STATE/$id/data" --bootstrap "$BOOTSTRAP" $(serve_flags "$id") >>"$log" 2>&1 &
  echo $! >"$STATE/$id/pid"
}

wait_ready() {
  local deadline=$((SECONDS + 30))
  printf 'waiting for a leader' >&2
  while ((SECONDS < deadline)); do
    for id in "${NODES[@]}"; do
      if curl_node "$(scheme)://127.0.0.1:$(http_port "$id")/readyz" >/dev/null 2>&1; then
        printf ' ready\n' >&2
        return 0
      fi
    done
    printf '.' >&2
    sleep 0.3
  done
  printf ' gave up after 30 s; see %s/n*/log\n' "$STATE" >&2
  return 1
}

cmd_start() {
  need_bin
  check_ports
  for id in "${NODES[@]}"; do
    if pid=$(pid_of "$id"); then
      echo "$id already running (pid $pid)"
      continue
    fi
    start_node "$id" "$STATE/$id/log"
    echo "started $id: $(scheme) 127.0.0.1:$(http_port "$id"), raft 127.0.0.1:$(raft_port "$id"), log $STATE/$id/log"
  done
  wait_ready
  acl_bootstrap
  if ((TLS || ACL)); then
    echo "clients need:"
    client_env
  fi
}

cmd_stop() {
  local pids=()
  for id in "${NODES[@]}"; do
    if pid=$(pid_of "$id"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      echo "stopping $id (pid $pid)"
    fi
    rm -f "$STATE/$id/pid"
  done
  local deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd_status() {
  for id in "${NODES[@]}"; do
    if pid=$(pid_of "$id"); then
      echo "$id: running (pid $pid), http 127.0.0.1:$(http_port "$id")"
    else
      echo "$id: stopped"
    fi
  done
  for id in "${NODES[@]}"; do
    if curl_node "$(scheme)://127.0.0.1:$(http_port "$id")/healthz" 2>/dev/null; then
      return 0
    fi
  done
  echo "no node answered /v1/cluster"
  return 1
}

cmd_run() {
  need_bin
  check_ports
  mkdir -p "$STATE"
  trap 'echo; echo "stopping all three nodes..."; cmd_stop; exit 0' INT TERM
  for id in "${NODES[@]}"; do
    mkdir -p "$STATE/$id/data"
    # shellcheck disable=SC2046 # serve_flags prints separate words
    "$BIN" serve --id "$id" \
      --http-addr "127.0.0.1:$(http_port "$id")" --raft-addr "127.0.0.1:$(raft_port "$id")" \
      --data-dir "$STATE/$id/data" --bootstrap "$BOOTSTRAP" $(serve_flags "$id") > >(sed -u "s/^/[$id] /") 2>&1 &
    echo $! >"$STATE/$id/pid" # serve's own pid: the log prefixer runs in a process substitution
  done
  wait_ready
  acl_bootstrap
  if ((TLS || ACL)); then
    echo "raftlock is running with TLS=$TLS ACL=$ACL; clients need:"
    client_env
    echo "Ctrl-C stops all three."
    wait
    return
  fi
  cat <<TRY

raftlock is running: three nodes, HTTP on 127.0.0.1:7001-7003 (n2 and n3 forward to the leader).
Try, against a follower or any node:

  curl -s -X PUT localhost:7002/v1/locks/accounts/A --json '{"owner":"worker-1"}'
  curl -s -X PUT localhost:7003/v1/locks/accounts/A --json '{"owner":"worker-2"}'        # 409 lock_held
  curl -s -X PUT localhost:7003/v1/locks/accounts/A --json '{"owner":"worker-2","wait_ms":30000}' &
  curl -s -X DELETE localhost:7001/v1/locks/accounts/A --json '{"lease_id":"<lease_id from the first answer>","token":<token>}'
  curl -s localhost:7001/v1/locks/accounts/A
  curl -s localhost:7001/v1/cluster

Ctrl-C stops all three.
TRY
  wait
}

cmd=${1:-}
shift || true
for arg in "$@"; do
  case $arg in
    --tls) TLS=1 ;;
    --acl) ACL=1 ;;
    *) echo "usage: $0 start|stop|status|run [--tls] [--acl]" >&2; exit 2 ;;
  esac
done
if ((TLS)) || [[ -f $STATE/tls/ca.pem && $cmd == status ]]; then
  TLS=1
  need_bin
  make_certs
fi
case "$cmd" in
  start) cmd_start ;;
  env) client_env ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  run) cmd_run ;;
  *) echo "usage: $0 start|stop|status|run|env [--tls] [--acl]" >&2; exit 2 ;;
esac
