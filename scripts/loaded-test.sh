#!/usr/bin/env bash
# loaded-test.sh: run `make test` (or the command given) with CPU hogs beside it, as CI
# runs on a machine where other builds take the cores. A test that asserts a duration or an
# order it did not wait for fails here without any bug; every test must wait for its
# condition with a deadline derived from the configuration instead.
#
#   scripts/loaded-test.sh                 make test beside 2 hogs
#   HOGS=4 scripts/loaded-test.sh          beside 4
#   scripts/loaded-test.sh go test ./...   another command beside them
#
# The hogs are busy shell loops at normal priority, ended when the command ends (or after
# LOADED_MAX, 60 minutes by default, if the script itself is killed without its trap).
set -uo pipefail
cd "$(dirname "$0")/.."
hogs=${HOGS:-2}
max=${LOADED_MAX:-3600}
((${#@})) || set -- make test

pids=()
stop() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap stop EXIT
for ((i = 0; i < hogs; i++)); do
	timeout "$max" bash -c 'while :; do :; done' &
	pids+=($!)
done
echo "loaded-test: $hogs CPU hogs running (pids ${pids[*]}); load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s)
"$@"
rc=$?
echo "loaded-test: '$*' exited $rc after $(($(date +%s) - start)) s beside $hogs hogs; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit $rc
