#!/usr/bin/env bash
# The GC-pause demo: the same story told twice.
#
#   1. Two workers charge card 42 under a plain Redis "SET NX PX" lock. Worker A takes the
#      lock and freezes (SIGSTOP, standing in for a stop-the-world GC pause) for longer than
#      the lock's TTL. The lock expires; worker B takes it and charges. A wakes up, still
#      believing it holds the lock, and charges too: the ledger shows a double charge.
#   2. The same with raftlock and the fenced ledger: A's late write carries its old fencing
#      token and the ledger refuses it. The card is charged exactly once.
#
# The workers are separate processes: A freezes itself right after taking the lock and before
# its write (the window no client-side check can close); the driver resumes it after B is done.
# Exits non-zero if either half does not end as told (the Redis half is skipped, and says so,
# when redis-server cannot be installed).
set -euo pipefail
cd "$(dirname "$0")/.."

TTL_MS=${TTL_MS:-2000}
AMOUNT=2500
WORK=$(mktemp -d /tmp/raftlock-demo.XXXXXX)
PIDS=()
OWN_CLUSTER=0
export RAFTLOCK_ENDPOINTS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003

say() { printf '\033[1m%s\033[0m\n' "$*"; }
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  if ((OWN_CLUSTER)); then RAFTLOCK_STATE=$WORK/cluster scripts/cluster.sh stop >/dev/null 2>&1 || true; fi
  [[ -n ${REDIS_PID:-} ]] && kill "$REDIS_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

json_field() { # json_field NAME < json : the number or string value of a top-level field
  sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p" | head -1
}

wait_stopped() { # wait until process $1 is in state T (stopped)
  for _ in $(seq 1 200); do
    [[ $(ps -o stat= -p "$1" 2>/dev/null) == T* ]] && return 0
    sleep 0.05
  done
  echo "worker $1 did not freeze" >&2
  return 1
}

wait_http() { # wait_http URL
  for _ in $(seq 1 200); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "$1 did not come up" >&2
  return 1
}

start_ledger() { # start_ledger PORT [--no-fencing]
  local port=$1
  shift
  bin/ledger --listen "127.0.0.1:$port" --data-dir "$WORK/ledger-$port" "$@" --log-level warn &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/healthz"
}

charge() { # charge PORT CHARGE_ID TOKEN -> prints "STATUS BODY"
  curl -s -o "$WORK/resp" -w '%{http_code}' -X POST "http://127.0.0.1:$1/v1/charges" \
    -H "Fencing-Token: $3" -d "{\"charge_id\":\"$2\",\"account\":\"card-42\",\"amount_cents\":$AMOUNT}"
  printf ' %s\n' "$(cat "$WORK/resp")"
}

account() { curl -s "http://127.0.0.1:$1/v1/accounts/card-42"; }
count_charges() { grep -o '"charge_id"' | wc -l | tr -d ' '; }

say "building bin/raftlock and bin/ledger"
go build -o bin/raftlock ./cmd/raftlock
go build -o bin/ledger ./cmd/ledger

# ---------------------------------------------------------------- 1. Redis SET NX PX
REDIS_RESULT="skipped"
REDIS_ACCEPTED="-"
REDIS_LATE="-"
if ! command -v redis-server >/dev/null 2>&1; then
  say "redis-server not found; installing Debian's redis-server package"
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    (DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null 2>&1 || true
  fi
fi
if command -v redis-server >/dev/null 2>&1; then
  say "== 1. a plain Redis lock (SET card:42 NX PX $TTL_MS), ledger WITHOUT fencing"
  redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 1 100); do redis-cli -p 16379 ping >/dev/null 2>&1 && break; sleep 0.05; done
  start_ledger 7110 --no-fencing
  redis_worker() { # the worker process: take the lock, (maybe) freeze, charge, unlock
    local me=$1 freeze=$2
    if [[ $(redis-cli -p 16379 SET card:42 "$me" NX PX "$TTL_MS") != OK ]]; then echo "$me: lock busy"; exit 1; fi
    echo "worker $me: took the Redis lock"
    if [[ $freeze == yes ]]; then echo "worker $me: GC pause..."; kill -STOP $$; echo "worker $me: resumed, still thinks it holds the lock"; fi
    echo "worker $me: charge -> $(charge 7110 "redis-$me-$RANDOM" 1)"
    [[ $(redis-cli -p 16379 GET card:42) == "$me" ]] && redis-cli -p 16379 DEL card:42 >/dev/null
    return 0
  }
  export -f redis_worker charge
  export WORK AMOUNT TTL_MS
  bash -c 'redis_worker A yes' &
  A=$!
  PIDS+=($A)
  wait_stopped "$A"
  echo "driver: A is frozen; waiting out the lock's ${TTL_MS} ms TTL"
  sleep $(((TTL_MS + 500) / 1000)).$(((TTL_MS + 500) % 1000 / 100))
  bash -c 'redis_worker B no'
  kill -CONT "$A"
  wait "$A" || true
  acct=$(account 7110)
  REDIS_ACCEPTED=$(count_charges <<<"$acct")
  echo "ledger: $acct"
  if [[ $REDIS_ACCEPTED == 2 ]]; then REDIS_RESULT="DOUBLE CHARGE"; REDIS_LATE="accepted"; else REDIS_RESULT="unexpected"; fi
else
  say "== 1. skipped: redis-server is not installed and could not be installed here"
fi

# ---------------------------------------------------------------- 2. raftlock + fencing
say "== 2. raftlock (3-node cluster) and the FENCED ledger"
if curl -fsS http://127.0.0.1:7001/readyz >/dev/null 2>&1; then
  echo "using the cluster already running on 127.0.0.1:7001-7003"
else
  OWN_CLUSTER=1
  RAFTLOCK_STATE=$WORK/cluster RAFTLOCK_BIN=bin/raftlock scripts/cluster.sh start
fi
start_ledger 7111
LOCK=demo/card-42-$RANDOM
raftlock_worker_a() {
  local grant token
  grant=$(bin/raftlock acquire "$LOCK" --ttl "${TTL_MS}ms" --owner worker-A --json)
  token=$(json_field token <<<"$grant")
  echo "$token" >"$WORK/tokenA"
  echo "worker A: took $LOCK with fencing token $token"
  echo "worker A: GC pause..."
  kill -STOP $$
  echo "worker A: resumed, still thinks it holds the lock; charging with token $token"
  echo "worker A: charge -> $(charge 7111 "raftlock-A-$RANDOM" "$token")"
}
export -f raftlock_worker_a json_field
export LOCK
bash -c raftlock_worker_a &
A=$!
PIDS+=($A)
wait_stopped "$A"
echo "driver: A is frozen; B queues for the lock (granted by the commit that expires A's lease, no polling)"
bin/raftlock lock "$LOCK" --ttl "${TTL_MS}ms" --wait 30s --owner worker-B -- bash -c \
  'echo "$RAFTLOCK_TOKEN" >"$WORK/tokenB"; echo "worker B: holds $RAFTLOCK_LOCK with fencing token $RAFTLOCK_TOKEN"; echo "worker B: charge -> $(charge 7111 "raftlock-B-$RANDOM" "$RAFTLOCK_TOKEN")"'
kill -CONT "$A"
wait "$A" || true
acct=$(account 7111)
echo "ledger: $acct"
RL_ACCEPTED=$(count_charges <<<"$acct")
TA=$(cat "$WORK/tokenA")
TB=$(cat "$WORK/tokenB")
if [[ $RL_ACCEPTED == 1 ]] && ((TB > TA)); then RL_RESULT="charged once"; RL_LATE="refused (stale_token)"; else RL_RESULT="unexpected"; RL_LATE="?"; fi

echo
say "== summary"
printf '%-28s %-22s %-26s\n' "" "Redis SET NX PX" "raftlock + fenced ledger"
printf '%-28s %-22s %-26s\n' "worker A's token" "-" "$TA"
printf '%-28s %-22s %-26s\n' "worker B's token" "-" "$TB"
printf '%-28s %-22s %-26s\n' "A's write after its pause" "$REDIS_LATE" "$RL_LATE"
printf '%-28s %-22s %-26s\n' "charges accepted" "$REDIS_ACCEPTED" "$RL_ACCEPTED"
printf '%-28s %-22s %-26s\n' "outcome" "$REDIS_RESULT" "$RL_RESULT"

[[ $RL_RESULT == "charged once" ]] || { echo "FAIL: raftlock half did not end as expected" >&2; exit 1; }
[[ $REDIS_RESULT == "DOUBLE CHARGE" || $REDIS_RESULT == skipped ]] || { echo "FAIL: Redis half did not end as expected" >&2; exit 1; }
