#!/usr/bin/env bash
# Benchmarks raftlock beside etcd, ZooKeeper and Redis on this machine, in one run (what
# `make bench` calls).
#
#   scripts/bench.sh [--quick] [--out DIR] [--profile | --profile-only]
#
# 1. builds bin/raftlock, bin/raftlock-bench, bin/etcd-bench (bench/etcd, its own module) and
#    bin/peers-bench (bench/peers, its own module);
# 2. for each log store (boltdb, then wal, the default for new data directories) starts a fresh three-node raftlock
#    cluster (scripts/cluster.sh, throwaway state) and runs the uncontended, parallel and
#    contended workloads, the shared (90% shared, 10% exclusive) and semaphore (limit 4)
#    workloads, then keepalive (100,000 leases in batches) and scale; stops it;
# 3. starts a three-member etcd (scripts/etcd-local.sh, installs Debian's etcd-server if
#    missing) and runs the same three lock workloads with concurrency.Mutex, and shared with
#    etcd's nearest recipe (experimental/recipes RWMutex); etcd has no semaphore; stops it;
# 4. starts a three-server ZooKeeper ensemble (scripts/zk-local.sh, installs Debian's zookeeper
#    if missing), warms its JVM up with an unrecorded pass, and runs the three lock workloads
#    with go-zookeeper/zk's Lock (the Curator-style recipe); it has no shared lock or
#    semaphore recipe ("n/a"); stops it;
# 5. starts one Redis server (scripts/redis-local.sh, installs Debian's redis-server if
#    missing) with appendfsync everysec, then again with always, and runs the three lock
#    workloads with SET NX PX and a Lua compare-and-delete release (UNSAFE: no fencing, no
#    consensus); stops it;
# 6. prints one table of every system on every workload, with the rate and server CPU per
#    operation beside etcd's, then each store beside etcd with the ratio and round three's
#    targets for that store, then shared beside etcd's recipe, semaphore (raftlock only),
#    keepalive and scale, then the peers' details (recipes, fairness, notes).
#
# The systems run one after the other, never together, so none steals another's CPU.
# Full run: about 17 minutes (10 s per workload, 1,000,000 locks for scale). --quick: about
# two minutes on a quiet machine (3 s per workload, 50,000 locks, no snapshot wait). --out DIR
# keeps the JSON results and the report. --profile also CPU-profiles the servers under the
# parallel workload, each system the same way (an extra unrecorded parallel run during which
# an 8 s profile is fetched from every member's /debug/pprof: raftlock's --pprof-addr,
# etcd's --enable-pprof), prints them broken down by component side by side
# (`raftlock-bench cpu`), and profiles bench/inproc (three nodes in one process) under the
# parallel and contended workloads with their top entries. --profile-only runs only the
# profiled parallel runs of raftlock (both stores) and etcd and their breakdown (about 2 min).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
OUT=""
PROFILE=0
ONLY=0
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --out) OUT=$2; shift ;;
    --profile) PROFILE=1 ;;
    --profile-only) PROFILE=1 ONLY=1 ;;
    *) echo "usage: $0 [--quick] [--out DIR] [--profile | --profile-only]" >&2; exit 2 ;;
  esac
  shift
done

# profile_members OUT URL...: in the background, wait for a workload's warm-up, then fetch
# an 8 s CPU profile from each URL's /debug/pprof at once, into OUT-1.pprof, OUT-2.pprof...;
# the caller waits for PROFILERS.
PROFILERS=()
profile_members() {
  local out=$1 i=0
  shift
  PROFILERS=()
  for u in "$@"; do
    i=$((i + 1))
    (sleep 3 && curl -fsS -o "$out-$i.pprof" "$u/debug/pprof/profile?seconds=8") &
    PROFILERS+=($!)
  done
}

if ((QUICK)); then
  LOCKFLAGS=(--duration 3s --warmup 1s)
  KAFLAGS=(--duration 5s --warmup 1s --leases 2000 --batch 1000)
  SCALEFLAGS=(--locks 50000 --snapshot=false)
  JITFLAGS=(--duration 2s --warmup 0s)
else
  LOCKFLAGS=(--duration 10s --warmup 2s)
  KAFLAGS=(--duration 15s --warmup 5s --leases 100000 --lease-ttl 10s --batch 1000)
  SCALEFLAGS=(--locks 1000000)
  JITFLAGS=(--duration 5s --warmup 0s)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-bench.XXXXXX")
export RAFTLOCK_STATE="$WORK/raftlock" ETCD_STATE="$WORK/etcd" ZK_STATE="$WORK/zk" REDIS_STATE="$WORK/redis" RAFTLOCK_BIN=bin/raftlock
cleanup() {
  scripts/cluster.sh stop >/dev/null 2>&1 || true
  scripts/etcd-local.sh stop >/dev/null 2>&1 || true
  scripts/zk-local.sh stop >/dev/null 2>&1 || true
  scripts/redis-local.sh stop >/dev/null 2>&1 || true
  if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    cp "$WORK"/*.json "$WORK"/report.txt "$OUT"/ 2>/dev/null || true
    cp "$WORK"/*.pprof "$OUT"/ 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORTS=(7001 7002 7003 8001 8002 8003 12379 22379 32379 12380 22380 32380)
if ((!ONLY)); then
  PORTS+=(21811 21812 21813 21821 21822 21823 21831 21832 21833 63791)
fi
if ((PROFILE)); then
  # raftlock's members serve /debug/pprof on 6061-6063 (scripts/cluster.sh), etcd's on its
  # client URLs
  export RAFTLOCK_PPROF_BASE=6060 ETCD_PPROF=1
  PORTS+=(6061 6062 6063)
fi
for p in "${PORTS[@]}"; do
  if port_busy "$p"; then
    echo "bench.sh: 127.0.0.1:$p is in use; stop the local cluster first (scripts/cluster.sh, etcd-local.sh, zk-local.sh or redis-local.sh stop)" >&2
    exit 1
  fi
done

echo "== building" >&2
go build -o bin/raftlock ./cmd/raftlock
go build -o bin/raftlock-bench ./cmd/raftlock-bench
go build -o bin/budget ./bench/budget
# -mod=mod: bench/etcd takes benchkit from this checkout (replace ../..), so a dependency
# added to the main module may need a go.sum line here; let the build add it.
(cd bench/etcd && go build -mod=mod -o ../../bin/etcd-bench .)
scripts/etcd-local.sh install
if ((!ONLY)); then
  (cd bench/peers && go build -mod=mod -o ../../bin/peers-bench .)
  scripts/zk-local.sh install
  scripts/redis-local.sh install
fi

{
  echo "raftlock benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r)"
  echo "disk: $(df -T "$WORK" | awk 'NR==2{print $2" on "$1}'); $(go version | cut -d' ' -f3); $(etcd --version | head -1); zookeeper $(scripts/zk-local.sh version); $(redis-server --version | cut -d' ' -f1-3)"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (a quiet machine reads below 0.5)"
  ((QUICK)) && echo "mode: --quick (short runs, small sizes: figures are indicative only)"
} >"$WORK/report.txt"
# The physical floors of this sitting, beside the figures: a commit cannot beat two
# fdatasyncs in series (leader, then follower) plus a loopback round trip.
mkdir -p "$WORK/floors"
bin/budget --floors-only --data-dir "$WORK/floors" >>"$WORK/report.txt" || echo "bench.sh: the floors could not be measured" >&2
rm -rf "$WORK/floors"
cat "$WORK/report.txt" >&2

status=0
# Each log store gets a fresh cluster and the same workloads (since round five wal is the
# default for new data directories and boltdb stays supported; both are held to their own
# targets beside etcd).
for store in boltdb wal; do
  echo "== raftlock, --raft-log-store=$store" >&2
  rm -rf "$RAFTLOCK_STATE"
  # exported, so that a follower the scale workload restarts keeps the same store
  export RAFTLOCK_RAFT_LOG_STORE=$store
  scripts/cluster.sh start >&2
  L=(--label "raftlock-$store")
  if ((!ONLY)); then
    bin/raftlock-bench "${LOCKFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store.json" uncontended parallel contended >/dev/null || status=$?
    bin/raftlock-bench "${LOCKFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-prims.json" shared semaphore >/dev/null || status=$?
  fi
  # before keepalive and scale: their 100,000 leases and 1,000,000 locks would change the heap
  if ((PROFILE)); then
    echo "== raftlock ($store): profiling the three servers under parallel" >&2
    profile_members "$WORK/raftlock-$store-cpu" http://127.0.0.1:6061 http://127.0.0.1:6062 http://127.0.0.1:6063
    bin/raftlock-bench --quiet --duration 10s --warmup 2s "${L[@]}" --json-out "$WORK/raftlock-$store-profiled.json" parallel >/dev/null || status=$?
    wait "${PROFILERS[@]}" || echo "bench.sh: a raftlock profile could not be fetched" >&2
  fi
  if ((!ONLY)); then
    bin/raftlock-bench "${KAFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-keepalive.json" keepalive >/dev/null || status=$?
    bin/raftlock-bench "${SCALEFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-scale.json" scale >/dev/null || status=$?
  fi
  scripts/cluster.sh stop >&2
  # The next system must not pay for this one's writeback (GBs of log, snapshots and the
  # state directory's removal) in its fsyncs.
  rm -rf "$RAFTLOCK_STATE"
  sync
done

echo "== etcd" >&2
scripts/etcd-local.sh start >&2
if ((!ONLY)); then
  bin/etcd-bench "${LOCKFLAGS[@]}" --json-out "$WORK/etcd.json" uncontended parallel contended >/dev/null || status=$?
  bin/etcd-bench "${LOCKFLAGS[@]}" --json-out "$WORK/etcd-prims.json" shared >/dev/null || status=$?
fi
if ((PROFILE)); then
  echo "== etcd: profiling the three members under parallel" >&2
  profile_members "$WORK/etcd-cpu" http://127.0.0.1:12379 http://127.0.0.1:22379 http://127.0.0.1:32379
  bin/etcd-bench --quiet --duration 10s --warmup 2s --json-out "$WORK/etcd-profiled.json" parallel >/dev/null || status=$?
  wait "${PROFILERS[@]}" || echo "bench.sh: an etcd profile could not be fetched" >&2
fi
scripts/etcd-local.sh stop >&2
sync

if ((!ONLY)); then
  echo "== zookeeper" >&2
  scripts/zk-local.sh start >&2
  # The servers are a JVM: an unrecorded pass first, so that the measured runs see compiled code
  # (the steady state a long-running ensemble serves from), as the other systems always do.
  bin/peers-bench --system zookeeper --quiet "${JITFLAGS[@]}" uncontended parallel contended >/dev/null || true
  bin/peers-bench --system zookeeper "${LOCKFLAGS[@]}" --json-out "$WORK/zookeeper.json" all >/dev/null || status=$?
  scripts/zk-local.sh stop >&2
  sync

  for fsync in everysec always; do
    echo "== redis, appendfsync $fsync" >&2
    scripts/redis-local.sh start "$fsync" >&2
    bin/peers-bench --system redis --label "redis-$fsync" "${LOCKFLAGS[@]}" --json-out "$WORK/redis-$fsync.json" all >/dev/null || status=$?
    scripts/redis-local.sh stop >&2
  done
fi

if ((PROFILE && !ONLY)); then
  echo "== profiling the servers in process (bench/inproc)" >&2
  go build -o bin/raftlock-inproc ./bench/inproc
  EP=http://127.0.0.1:17001,http://127.0.0.1:17002,http://127.0.0.1:17003
  for wl in parallel contended; do
    bin/raftlock-inproc --delay 3s --duration 8s --linger 30s --cpuprofile "$WORK/cpu-$wl.pprof" 2>"$WORK/inproc-$wl.log" &
    ip=$!
    for _ in $(seq 100); do curl -fsS http://127.0.0.1:17001/v1/cluster >/dev/null 2>&1 && break; sleep 0.1; done
    bin/raftlock-bench --quiet --endpoints "$EP" --pids "$ip" --duration 10s --warmup 2s --json-out "$WORK/inproc-$wl.json" "$wl" >/dev/null || true
    kill "$ip" 2>/dev/null || true
    wait "$ip" 2>/dev/null || true
  done
fi

PEERS=("$WORK/zookeeper.json" "$WORK/redis-everysec.json" "$WORK/redis-always.json")
{
  if ((!ONLY)); then
    echo
    echo "== every system on every workload (rate/etcd and CPU/etcd: the ratio to etcd's figure in the same run)"
    echo "   raftlock: both log stores; etcd: concurrency.Mutex, shared with experimental/recipes RWMutex;"
    echo "   zookeeper: go-zookeeper/zk Lock (Curator-style recipe); redis: SET NX PX + Lua compare-and-delete,"
    echo "   a held lock retried with backoff (1 ms doubling to 64 ms, jittered), UNSAFE (no fencing, no consensus)"
    echo
    bin/raftlock-bench systems --base etcd "$WORK"/raftlock-{boltdb,wal}.json "$WORK"/raftlock-{boltdb,wal}-prims.json \
      "$WORK/etcd.json" "$WORK/etcd-prims.json" "${PEERS[@]}" || status=1
    echo
    for store in boltdb wal; do
      echo "== raftlock ($store) and etcd, side by side (ratio = raftlock / etcd), round two's $store targets"
      echo
      bin/raftlock-bench compare --targets "$store" "$WORK/raftlock-$store.json" "$WORK/etcd.json"
      echo
    done
    echo "== shared lock (90% shared, 10% exclusive) and semaphore (limit 4), contended, both stores"
    echo "   etcd: shared with experimental/recipes RWMutex (no fencing value); etcd has no semaphore"
    echo
    bin/raftlock-bench table "$WORK"/raftlock-{boltdb,wal}-prims.json "$WORK/etcd-prims.json"
    echo
    echo "== raftlock only: keepalive and scale, both stores"
    echo
    bin/raftlock-bench table "$WORK"/raftlock-{boltdb,wal}-keepalive.json "$WORK"/raftlock-{boltdb,wal}-scale.json
    echo
    echo "== the peers in detail: ZooKeeper and Redis (both fsync modes)"
    echo
    bin/raftlock-bench table "${PEERS[@]}"
  fi
  if ((PROFILE)); then
    echo
    echo "== server CPU under parallel by component (8 s profiles of every member; µs/op at the profiled run's rate)"
    ((ONLY)) || echo "   raftlock-inproc: the three nodes in one process (one heap, one collector)"
    echo
    cols=()
    for store in boltdb wal; do
      cols+=("raftlock-$store=$WORK/raftlock-$store-cpu-1.pprof,$WORK/raftlock-$store-cpu-2.pprof,$WORK/raftlock-$store-cpu-3.pprof@$WORK/raftlock-$store-profiled.json")
    done
    cols+=("etcd=$WORK/etcd-cpu-1.pprof,$WORK/etcd-cpu-2.pprof,$WORK/etcd-cpu-3.pprof@$WORK/etcd-profiled.json")
    ((ONLY)) || cols+=("raftlock-inproc=$WORK/cpu-parallel.pprof@$WORK/inproc-parallel.json")
    bin/raftlock-bench cpu "${cols[@]}" || status=1
    for wl in parallel contended; do
      ((ONLY)) && break
      echo
      echo "== CPU profile of the three servers under $wl (top 25, cumulative)"
      go tool pprof -top -cum -nodecount=25 bin/raftlock-inproc "$WORK/cpu-$wl.pprof" 2>/dev/null | sed -n '/flat%/,$p'
    done
  fi
  echo
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$WORK/report.txt"
cat "$WORK/report.txt"
if ((status == 3)); then
  echo "bench.sh: SAFETY VIOLATIONS were seen; see the tables above" >&2
fi
exit "$status"
