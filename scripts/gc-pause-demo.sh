#!/usr/bin/env bash
# The GC-pause demo: the same story told twice.
#
#   1. Two workers charge card 42 under a plain Redis "SET NX PX" lock. Worker A takes the
#      lock and freezes (SIGSTOP, standing in for a stop-the-world GC pause) for longer than
#      the lock's TTL. The lock expires; worker B takes it and charges. A wakes up, still
#      believing it holds the lock, and charges too: the ledger shows a double charge.
#   2. The same with raftlock and the fenced ledger. Worker A keeps its lease alive (a
#      keepalive loop inside the worker) while it prepares, for longer than one TTL, then
#      freezes, keepalives and all, as a whole process does in a GC pause. Only then does the
#      lease expire; B is granted the lock with a higher token and charges. A's late write
#      carries its old token, and the ledger's own answer to A says 409 stale_token. The card
#      is charged exactly once.
#
# The workers are separate processes: A freezes itself right after taking the lock and before
# its write (the window no client-side check can close); the driver resumes it after B is done.
#
# Environment:
#   DEMO_SKIP_REDIS=1   skip the Redis half (it is also skipped, saying so, when redis-server
#                       is not installed and cannot be installed from Debian's packages)
#   DEMO_NO_FENCING=1   run the raftlock half against a ledger that does NOT check tokens: a
#                       negative control. A's stale write is then accepted, the card is
#                       charged twice, and the demo fails loudly.
#   TTL_MS              the locks' TTL (default 2000)
#
# Exits non-zero, saying why, if either half does not end as told.
set -euo pipefail
cd "$(dirname "$0")/.."

TTL_MS=${TTL_MS:-2000}
AMOUNT=2500
WORK=$(mktemp -d /tmp/raftlock-demo.XXXXXX)
PIDS=()   # processes to stop at exit
GROUPS_=() # process groups to stop at exit (worker A of the raftlock half)
OWN_CLUSTER=0
REDIS_PID=
export RAFTLOCK_ENDPOINTS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003
export WORK AMOUNT TTL_MS

say() { printf '\033[1m%s\033[0m\n' "$*"; }
cleanup() {
  local p
  for p in "${GROUPS_[@]}"; do kill -CONT -- "-$p" 2>/dev/null || true; kill -KILL -- "-$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  if ((OWN_CLUSTER)); then RAFTLOCK_STATE=$WORK/cluster scripts/cluster.sh stop >/dev/null 2>&1 || true; fi
  if [[ -n $REDIS_PID ]]; then kill "$REDIS_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

json_field() { # json_field NAME < json : the number or string value of the first field NAME
  sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p" | head -1
}

wait_stopped() { # wait until process $1 is in state T (stopped), for at most 30 s
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    [[ $(ps -o stat= -p "$1" 2>/dev/null) == T* ]] && return 0
    kill -0 "$1" 2>/dev/null || { echo "worker $1 ended before it froze" >&2; return 1; }
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

charge() { # charge PORT CHARGE_ID TOKEN -> prints "HTTP_STATUS BODY": the ledger's own answer
  local out
  out=$(curl -s -m 10 -w '\n%{http_code}' -X POST "http://127.0.0.1:$1/v1/charges" \
    -H "Fencing-Token: $3" -d "{\"charge_id\":\"$2\",\"account\":\"card-42\",\"amount_cents\":$AMOUNT}") || true
  printf '%s %s\n' "${out##*$'\n'}" "${out%$'\n'*}"
}

account() { curl -s "http://127.0.0.1:$1/v1/accounts/card-42"; }
count_charges() { grep -o '"charge_id"' | wc -l | tr -d ' '; }

# verdict "HTTP_STATUS BODY" : how the ledger answered a late write, read from the answer
verdict() {
  local status=${1%% *} body=${1#* } code
  code=$(grep -o '"code": *"[^"]*"' <<<"$body" | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
  case $status in
    2??) echo "accepted ($status)" ;;
    409) echo "refused (${code:-409})" ;;
    *) echo "unexpected ($status ${code:-no answer})" ;;
  esac
}

export -f charge json_field

say "building bin/raftlock and bin/ledger"
go build -o bin/raftlock ./cmd/raftlock
go build -o bin/ledger ./cmd/ledger

# ---------------------------------------------------------------- 1. Redis SET NX PX
REDIS_RESULT="skipped"
REDIS_ACCEPTED="-"
REDIS_LATE="-"
REDIS_WHY=""
if [[ ${DEMO_SKIP_REDIS:-0} == 1 ]]; then
  REDIS_WHY="DEMO_SKIP_REDIS=1"
elif ! command -v redis-server >/dev/null 2>&1; then
  say "redis-server not found; installing Debian's redis-server package"
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    (DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null 2>&1 || true
  fi
  command -v redis-server >/dev/null 2>&1 || REDIS_WHY="redis-server is not installed and could not be installed here"
fi
if [[ -z $REDIS_WHY ]]; then
  say "== 1. a plain Redis lock (SET card:42 NX PX $TTL_MS), ledger WITHOUT fencing"
  redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 1 100); do redis-cli -p 16379 ping >/dev/null 2>&1 && break; sleep 0.05; done
  start_ledger 7110 --no-fencing
  redis_worker() { # the worker process: take the lock, (maybe) freeze, charge, unlock
    local me=$1 freeze=$2 answer
    if [[ $(redis-cli -p 16379 SET card:42 "$me" NX PX "$TTL_MS") != OK ]]; then echo "$me: lock busy"; exit 1; fi
    echo "worker $me: took the Redis lock"
    if [[ $freeze == yes ]]; then echo "worker $me: GC pause..."; kill -STOP $$; echo "worker $me: resumed, still thinks it holds the lock"; fi
    answer=$(charge 7110 "redis-$me-$RANDOM" 1)
    echo "$answer" >"$WORK/redis-answer-$me"
    echo "worker $me: ledger answered $answer"
    [[ $(redis-cli -p 16379 GET card:42) == "$me" ]] && redis-cli -p 16379 DEL card:42 >/dev/null
    return 0
  }
  export -f redis_worker
  bash -c 'redis_worker A yes' &
  A=$!
  PIDS+=($A)
  wait_stopped "$A"
  echo "driver: A is frozen; waiting for Redis to expire its lock (TTL ${TTL_MS} ms)"
  deadline=$((SECONDS + 30))
  until [[ $(redis-cli -p 16379 EXISTS card:42) == 0 ]]; do
    ((SECONDS < deadline)) || { echo "FAIL: Redis never expired the lock" >&2; exit 1; }
    sleep 0.05
  done
  bash -c 'redis_worker B no'
  kill -CONT "$A"
  wait "$A" || true
  acct=$(account 7110)
  REDIS_ACCEPTED=$(count_charges <<<"$acct")
  REDIS_LATE=$(verdict "$(cat "$WORK/redis-answer-A")")
  echo "ledger: $acct"
  if [[ $REDIS_ACCEPTED == 2 && $REDIS_LATE == accepted* ]]; then REDIS_RESULT="DOUBLE CHARGE"; else REDIS_RESULT="unexpected"; fi
else
  say "== 1. the Redis half is SKIPPED: $REDIS_WHY"
fi

# ---------------------------------------------------------------- 2. raftlock + fencing
LEDGER_FLAGS=()
LEDGER_KIND="the FENCED ledger"
if [[ ${DEMO_NO_FENCING:-0} == 1 ]]; then
  LEDGER_FLAGS=(--no-fencing)
  LEDGER_KIND="a ledger WITHOUT fencing (DEMO_NO_FENCING=1: negative control, must fail)"
fi
say "== 2. raftlock (3-node cluster) and $LEDGER_KIND"
if curl -fsS http://127.0.0.1:7001/readyz >/dev/null 2>&1; then
  echo "using the cluster already running on 127.0.0.1:7001-7003"
else
  OWN_CLUSTER=1
  RAFTLOCK_STATE=$WORK/cluster RAFTLOCK_BIN=bin/raftlock scripts/cluster.sh start
fi
start_ledger 7111 "${LEDGER_FLAGS[@]}"
LOCK=demo/card-42-$RANDOM
PREP_MS=$((TTL_MS * 3 / 2)) # A works under the lock for longer than one TTL before its pause
export LOCK PREP_MS

raftlock_keepalive() { # raftlock_keepalive LEASE: renew about every TTL/3 until the cluster says it is gone
  local lease=$1 code ep
  while :; do
    sleep "$(awk "BEGIN { print $TTL_MS / 3000 }")"
    code=000
    for ep in ${RAFTLOCK_ENDPOINTS//,/ }; do
      # The lease ID goes to curl on stdin (-K -), not in its argv, where ps would show it.
      code=$(curl -s -m 1 -o /dev/null -w '%{http_code}' -X POST -K - <<<"url = \"$ep/v1/leases/$lease/keepalive\"") || code=000
      [[ $code == 200 || $code == 404 ]] && break
    done
    if [[ $code == 404 ]]; then
      echo "worker A: keepalive: the cluster says the lease is gone (lease_not_found)"
      return 0
    fi
  done
}

raftlock_worker_a() { # worker A, in a process group of its own (setsid): the whole worker freezes
  local grant token lease answer ka deadline
  grant=$(bin/raftlock acquire "$LOCK" --ttl "${TTL_MS}ms" --owner worker-A --json)
  token=$(json_field token <<<"$grant")
  lease=$(json_field lease_id <<<"$grant")
  echo "$token" >"$WORK/tokenA"
  echo "worker A: took $LOCK with fencing token $token"
  raftlock_keepalive "$lease" & # a subshell of this worker: frozen with it
  ka=$!
  echo "worker A: preparing the charge for ${PREP_MS} ms, longer than the TTL (the keepalives hold the lease)"
  sleep "$(awk "BEGIN { print $PREP_MS / 1000 }")"
  echo "worker A: GC pause... (the whole worker stops, its keepalives too)"
  kill -STOP 0
  echo "worker A: resumed, still thinks it holds the lock; charging with token $token"
  answer=$(charge 7111 "raftlock-A-$RANDOM" "$token")
  echo "$answer" >"$WORK/answerA"
  echo "worker A: ledger answered $answer"
  # The keepalive loop ends by itself on lease_not_found; give it a moment to say so.
  deadline=$((SECONDS + 5))
  while kill -0 "$ka" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  kill "$ka" 2>/dev/null || true
  wait
}
export -f raftlock_worker_a raftlock_keepalive

# setsid: A leads a process group of its own (a background job of this script would share
# the script's), so that "kill -STOP 0" freezes A and its keepalive loop, nothing else.
setsid bash -c raftlock_worker_a &
A=$!
GROUPS_+=($A)
wait_stopped "$A"
st=$(bin/raftlock status "$LOCK" --json)
TA=$(cat "$WORK/tokenA")
if [[ $(json_field held <<<"$st") != true || $(json_field token <<<"$st") != "$TA" ]]; then
  echo "FAIL: A's lease did not outlive its first TTL although A kept it alive: $st" >&2
  exit 1
fi
echo "driver: A froze ${PREP_MS} ms after taking the lock (TTL ${TTL_MS} ms) and still holds it (token $TA): its keepalives held the lease until the pause"
echo "driver: B queues for the lock (granted by the commit that expires A's lease, no polling)"
bin/raftlock lock "$LOCK" --ttl "${TTL_MS}ms" --wait 30s --owner worker-B -- bash -c \
  'echo "$RAFTLOCK_TOKEN" >"$WORK/tokenB"; echo "worker B: holds $RAFTLOCK_LOCK with fencing token $RAFTLOCK_TOKEN"; echo "worker B: ledger answered $(charge 7111 "raftlock-B-$RANDOM" "$RAFTLOCK_TOKEN")"'
echo "driver: resuming A"
kill -CONT -- "-$A"
wait "$A" || true
acct=$(account 7111)
echo "ledger: $acct"
RL_ACCEPTED=$(count_charges <<<"$acct")
TB=$(cat "$WORK/tokenB")
RL_LATE=$(verdict "$(cat "$WORK/answerA" 2>/dev/null || echo "000 no answer")")
if [[ $RL_ACCEPTED == 1 && $RL_LATE == "refused (stale_token)" ]] && ((TB > TA)); then
  RL_RESULT="charged once"
elif [[ $RL_ACCEPTED == 2 ]]; then
  RL_RESULT="DOUBLE CHARGE"
else
  RL_RESULT="unexpected"
fi

echo
say "== summary"
if [[ $REDIS_RESULT == skipped ]]; then
  echo "halves run: raftlock only (Redis skipped: $REDIS_WHY)"
else
  echo "halves run: Redis and raftlock"
fi
printf '%-28s %-22s %-26s\n' "" "Redis SET NX PX" "raftlock + $([[ ${DEMO_NO_FENCING:-0} == 1 ]] && echo UNFENCED || echo fenced) ledger"
printf '%-28s %-22s %-26s\n' "worker A's token" "-" "$TA"
printf '%-28s %-22s %-26s\n' "worker B's token" "-" "$TB"
printf '%-28s %-22s %-26s\n' "A's write after its pause" "$REDIS_LATE" "$RL_LATE"
printf '%-28s %-22s %-26s\n' "charges accepted" "$REDIS_ACCEPTED" "$RL_ACCEPTED"
printf '%-28s %-22s %-26s\n' "outcome" "$REDIS_RESULT" "$RL_RESULT"

if [[ $RL_RESULT != "charged once" ]]; then
  if [[ ${DEMO_NO_FENCING:-0} == 1 ]]; then
    echo "FAIL (as expected with DEMO_NO_FENCING=1): without fencing the ledger took A's stale write: $RL_RESULT, $RL_ACCEPTED charges" >&2
  else
    echo "FAIL: the raftlock half did not end as expected: $RL_RESULT, $RL_ACCEPTED charges, A's late write $RL_LATE" >&2
  fi
  exit 1
fi
[[ $REDIS_RESULT == "DOUBLE CHARGE" || $REDIS_RESULT == skipped ]] || { echo "FAIL: the Redis half did not end as expected: $REDIS_RESULT" >&2; exit 1; }
