#!/usr/bin/env bash
# Benchmarks raftlock beside etcd on this machine, in one run (what `make bench` calls).
#
#   scripts/bench.sh [--quick] [--out DIR] [--profile]
#
# 1. builds bin/raftlock, bin/raftlock-bench and bin/etcd-bench (bench/etcd, its own module);
# 2. for each log store (boltdb, the default, then wal) starts a fresh three-node raftlock
#    cluster (scripts/cluster.sh, throwaway state) and runs the uncontended, parallel and
#    contended workloads, the shared (90% shared, 10% exclusive) and semaphore (limit 4)
#    workloads, then keepalive (100,000 leases in batches) and scale; stops it;
# 3. starts a three-member etcd (scripts/etcd-local.sh, installs Debian's etcd-server if
#    missing) and runs the same three lock workloads with concurrency.Mutex, and shared with
#    etcd's nearest recipe (experimental/recipes RWMutex); etcd has no semaphore; stops it;
# 4. prints each store beside etcd with the ratio and issue 13's targets for that store,
#    then shared beside etcd's recipe, semaphore (raftlock only), keepalive and scale.
#
# The systems run one after the other, never together, so neither steals the other's CPU.
# Full run: about 14 minutes (10 s per workload, 1,000,000 locks for scale). --quick: about a
# minute (3 s per workload, 50,000 locks, no snapshot wait). --out DIR keeps the JSON results
# and the report. --profile also writes CPU profiles of the servers (bench/inproc) under the
# parallel and contended workloads and prints their top entries.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=0
OUT=""
PROFILE=0
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --out) OUT=$2; shift ;;
    --profile) PROFILE=1 ;;
    *) echo "usage: $0 [--quick] [--out DIR] [--profile]" >&2; exit 2 ;;
  esac
  shift
done

if ((QUICK)); then
  LOCKFLAGS=(--duration 3s --warmup 1s)
  KAFLAGS=(--duration 5s --warmup 1s --leases 2000 --batch 1000)
  SCALEFLAGS=(--locks 50000 --snapshot=false)
else
  LOCKFLAGS=(--duration 10s --warmup 2s)
  KAFLAGS=(--duration 15s --warmup 5s --leases 100000 --lease-ttl 10s --batch 1000)
  SCALEFLAGS=(--locks 1000000)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-bench.XXXXXX")
export RAFTLOCK_STATE="$WORK/raftlock" ETCD_STATE="$WORK/etcd" RAFTLOCK_BIN=bin/raftlock
cleanup() {
  scripts/cluster.sh stop >/dev/null 2>&1 || true
  scripts/etcd-local.sh stop >/dev/null 2>&1 || true
  if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    cp "$WORK"/*.json "$WORK"/report.txt "$OUT"/ 2>/dev/null || true
    cp "$WORK"/*.pprof "$OUT"/ 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in 7001 7002 7003 8001 8002 8003 12379 22379 32379 12380 22380 32380; do
  if port_busy "$p"; then
    echo "bench.sh: 127.0.0.1:$p is in use; stop the local cluster first (scripts/cluster.sh stop)" >&2
    exit 1
  fi
done

echo "== building" >&2
go build -o bin/raftlock ./cmd/raftlock
go build -o bin/raftlock-bench ./cmd/raftlock-bench
# -mod=mod: bench/etcd takes benchkit from this checkout (replace ../..), so a dependency
# added to the main module may need a go.sum line here; let the build add it.
(cd bench/etcd && go build -mod=mod -o ../../bin/etcd-bench .)
scripts/etcd-local.sh install

{
  echo "raftlock benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r)"
  echo "disk: $(df -T "$WORK" | awk 'NR==2{print $2" on "$1}'); $(go version | cut -d' ' -f3); $(etcd --version | head -1)"
  ((QUICK)) && echo "mode: --quick (short runs, small sizes: figures are indicative only)"
} >"$WORK/report.txt"
cat "$WORK/report.txt" >&2

status=0
# Each log store gets a fresh cluster and the same workloads (issue 13: boltdb stays the
# default, wal is the option; both are held to their own targets beside etcd).
for store in boltdb wal; do
  echo "== raftlock, --raft-log-store=$store" >&2
  rm -rf "$RAFTLOCK_STATE"
  # exported, so that a follower the scale workload restarts keeps the same store
  export RAFTLOCK_RAFT_LOG_STORE=$store
  scripts/cluster.sh start >&2
  L=(--label "raftlock-$store")
  bin/raftlock-bench "${LOCKFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store.json" uncontended parallel contended >/dev/null || status=$?
  bin/raftlock-bench "${LOCKFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-prims.json" shared semaphore >/dev/null || status=$?
  bin/raftlock-bench "${KAFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-keepalive.json" keepalive >/dev/null || status=$?
  bin/raftlock-bench "${SCALEFLAGS[@]}" "${L[@]}" --json-out "$WORK/raftlock-$store-scale.json" scale >/dev/null || status=$?
  scripts/cluster.sh stop >&2
  # The next system must not pay for this one's writeback (GBs of log, snapshots and the
  # state directory's removal) in its fsyncs.
  rm -rf "$RAFTLOCK_STATE"
  sync
done

echo "== etcd" >&2
scripts/etcd-local.sh start >&2
bin/etcd-bench "${LOCKFLAGS[@]}" --json-out "$WORK/etcd.json" uncontended parallel contended >/dev/null || status=$?
bin/etcd-bench "${LOCKFLAGS[@]}" --json-out "$WORK/etcd-prims.json" shared >/dev/null || status=$?
scripts/etcd-local.sh stop >&2

if ((PROFILE)); then
  echo "== profiling the servers in process (bench/inproc)" >&2
  go build -o bin/raftlock-inproc ./bench/inproc
  EP=http://127.0.0.1:17001,http://127.0.0.1:17002,http://127.0.0.1:17003
  for wl in parallel contended; do
    bin/raftlock-inproc --delay 3s --duration 8s --linger 30s --cpuprofile "$WORK/cpu-$wl.pprof" 2>"$WORK/inproc-$wl.log" &
    ip=$!
    for _ in $(seq 100); do curl -fsS http://127.0.0.1:17001/v1/cluster >/dev/null 2>&1 && break; sleep 0.1; done
    bin/raftlock-bench --quiet --endpoints "$EP" --pids "$ip" --duration 10s --warmup 2s "$wl" >/dev/null || true
    kill "$ip" 2>/dev/null || true
    wait "$ip" 2>/dev/null || true
  done
fi

{
  echo
  for store in boltdb wal; do
    echo "== raftlock ($store) and etcd, side by side (ratio = raftlock / etcd), issue 13's $store targets"
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
  if ((PROFILE)); then
    for wl in parallel contended; do
      echo
      echo "== CPU profile of the three servers under $wl (top 25, cumulative)"
      go tool pprof -top -cum -nodecount=25 bin/raftlock-inproc "$WORK/cpu-$wl.pprof" 2>/dev/null | sed -n '/flat%/,$p'
    done
  fi
} >>"$WORK/report.txt"
cat "$WORK/report.txt"
if ((status == 3)); then
  echo "bench.sh: SAFETY VIOLATIONS were seen; see the tables above" >&2
fi
exit "$status"
