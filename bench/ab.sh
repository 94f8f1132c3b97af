#!/usr/bin/env bash
# Measures one server setting against another on fresh local clusters, alternated
# (A B A B ...), so that a drift of the machine's speed falls on both sides alike.
#
#   bench/ab.sh [--rounds N] [--duration 10s] [--workload parallel] [--out DIR] 'SETTINGS_A' 'SETTINGS_B'
#
# SETTINGS are words: VAR=value sets the environment of the three servers (GOGC=400,
# RAFTLOCK_GC_HEADROOM=64MiB, RAFTLOCK_RAFT_LOG_STORE=wal: every serve flag has its
# RAFTLOCK_ variable), and a word starting with -- goes to raftlock-bench (--http2). ''
# is the default build as it is. Every run starts a fresh cluster with scripts/cluster.sh
# (throwaway state), runs raftlock-bench with a 2 s warm-up, and stops it; the report is
# one row a run (raftlock-bench table, labelled A1, B1, A2, ...) with the machine's load
# average at each run's end. Needs bin/raftlock and bin/raftlock-bench (make build).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3
DURATION=10s
WORKLOAD=parallel
OUT=""
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --duration) DURATION=$2; shift ;;
    --workload) WORKLOAD=$2; shift ;;
    --out) OUT=$2; shift ;;
    --*) echo "usage: $0 [--rounds N] [--duration D] [--workload W] [--out DIR] 'SETTINGS_A' 'SETTINGS_B'" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if (($# != 2)); then
  echo "usage: $0 [--rounds N] [--duration D] [--workload W] [--out DIR] 'SETTINGS_A' 'SETTINGS_B'" >&2
  exit 2
fi
SIDES=("$1" "$2")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/raftlock-ab.XXXXXX")
export RAFTLOCK_STATE="$WORK/state" RAFTLOCK_BIN=bin/raftlock
cleanup() {
  scripts/cluster.sh stop >/dev/null 2>&1 || true
  if [[ -n $OUT ]]; then
    mkdir -p "$OUT"
    cp "$WORK"/*.json "$WORK"/report.txt "$OUT"/ 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

{
  echo "bench/ab.sh, $(date -u '+%Y-%m-%d %H:%M UTC'): $WORKLOAD, $DURATION a run, $ROUNDS rounds"
  echo "A: ${SIDES[0]:-(defaults)}"
  echo "B: ${SIDES[1]:-(defaults)}"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$WORK/report.txt"
cat "$WORK/report.txt" >&2

files=()
for round in $(seq "$ROUNDS"); do
  for i in 0 1; do
    label="$([[ $i == 0 ]] && echo A || echo B)$round"
    envs=() flags=()
    for w in ${SIDES[$i]}; do
      if [[ $w == --* ]]; then flags+=("$w"); else envs+=("$w"); fi
    done
    rm -rf "$RAFTLOCK_STATE"
    env "${envs[@]}" scripts/cluster.sh start >/dev/null 2>&1
    bin/raftlock-bench --quiet --duration "$DURATION" --warmup 2s --label "$label" "${flags[@]}" \
      --json-out "$WORK/$label.json" "$WORKLOAD" >/dev/null
    echo "$label: load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$WORK/report.txt" >&2
    scripts/cluster.sh stop >/dev/null 2>&1
    rm -rf "$RAFTLOCK_STATE"
    sync
    files+=("$WORK/$label.json")
  done
done
{
  echo
  bin/raftlock-bench table "${files[@]}"
} >>"$WORK/report.txt"
cat "$WORK/report.txt"
