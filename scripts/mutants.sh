#!/usr/bin/env bash
# The mutation campaign (docs/SAFETY.md, "Mutants"): for every mutant of internal/mutant,
# run the tests test/mutants/kills.txt names with RAFTLOCK_MUTANT set, in test binaries
# built once with -tags mutants, and print mutant, killed, by which test, time. Every test
# named must first pass without a mutant. Any survivor fails the script.
#
#   scripts/mutants.sh             every mutant (make test, make verify, make mutants)
#   scripts/mutants.sh --quick     the mutants fast tests kill
#   scripts/mutants.sh NAME...     only these mutants
#   scripts/mutants.sh --repeat N  run each mutant's killing tests N times (from a fresh
#                                  start each time) and report kills per run: a mutant
#                                  killed in fewer than 95% of the runs (19 of 20) counts
#                                  as surviving, since a kill that happens one run in three
#                                  proves nothing
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIMEOUT=${MUTANT_TIMEOUT:-600}
export RAFTLOCK_VERIFY_SEED=${RAFTLOCK_VERIFY_SEED:-20261201}
quick=0
repeat=1
only=()
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--repeat)
		shift
		[[ ${1:-} =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [--quick] [--repeat N] [NAME...]" >&2; exit 2; }
		repeat=$1
		;;
	-*) echo "usage: $0 [--quick] [--repeat N] [NAME...]" >&2; exit 2 ;;
	*) only+=("$1") ;;
	esac
	shift
done

table=test/mutants/kills.txt
# Each line's "# step | what it breaks" tail is for docs/SAFETY.md's table, not for the run.
mapfile -t lines < <(grep -v '^#' "$table" | grep -v '^[[:space:]]*$' | sed 's/[[:space:]]*#.*$//')
selected=()
for l in "${lines[@]}"; do
	read -r name mode _ <<<"$l"
	if ((${#only[@]})); then
		for o in "${only[@]}"; do [[ $o == "$name" ]] && selected+=("$l"); done
	elif ((quick == 0)) || [[ $mode == quick ]]; then
		selected+=("$l")
	fi
done
((${#selected[@]})) || { echo "mutants: nothing selected" >&2; exit 2; }

bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
start=$(date +%s)

# Build each package's test binary once.
declare -A built=()
for l in "${selected[@]}"; do
	read -r _ _ cands <<<"$l"
	for c in $cands; do
		pkg=${c%%:*}
		[[ -n ${built[$pkg]:-} ]] && continue
		bin=$bindir/$(echo "$pkg" | tr / _).test
		$GO test -c -tags mutants -o "$bin" "./$pkg"
		built[$pkg]=$bin
	done
done

# run PKG REGEX MUTANT: runs the tests in the package directory; prints the output.
run() {
	local pkg=$1 re=$2 m=$3
	(cd "$pkg" && RAFTLOCK_MUTANT=$m timeout "$TIMEOUT" "${built[$pkg]}" -test.run "$re" -test.count=1 -test.failfast -test.v 2>&1)
}

# Baseline: every test named must pass without a mutant, or its "kill" means nothing.
declare -A baseline=()
for l in "${selected[@]}"; do
	read -r _ _ cands <<<"$l"
	for c in $cands; do
		[[ -n ${baseline[$c]:-} ]] && continue
		baseline[$c]=1
		if ! out=$(run "${c%%:*}" "${c#*:}" ""); then
			echo "mutants: $c fails without any mutant; fix it first:" >&2
			echo "$out" | tail -30 >&2
			exit 1
		fi
	done
done

# kill NAME CANDIDATES...: runs the candidates with the mutant until one fails; prints
# the killing test, or - when the mutant survived.
kill_once() {
	local name=$1 c pkg out test
	shift
	for c in "$@"; do
		pkg=${c%%:*}
		if out=$(run "$pkg" "${c#*:}" "$name"); then
			continue
		fi
		test=$(echo "$out" | grep -m1 -oE -- '--- FAIL: [^ ]+' | sed 's/--- FAIL: //' || true)
		if [[ -z $test ]]; then
			test="${c#*:} (panic or timeout)"
		fi
		echo "$(basename "$pkg").$test"
		return
	done
	echo -
}

printf '%-26s %-7s %-64s %6s\n' mutant killed by time
survivors=0
killed=0
need=$(((repeat * 95 + 99) / 100)) # at least 95% of the runs, rounded up: 19 of 20
for l in "${selected[@]}"; do
	read -r name _ cands <<<"$l"
	t0=$(date +%s)
	by=-
	kills=0
	for ((r = 0; r < repeat; r++)); do
		got=$(kill_once "$name" $cands)
		if [[ $got != - ]]; then
			kills=$((kills + 1))
			[[ $by == - ]] && by=$got
		fi
	done
	dt=$(($(date +%s) - t0))
	verdict=yes
	((kills >= need)) || verdict=NO
	if ((repeat > 1)); then
		verdict="$verdict $kills/$repeat"
	fi
	if [[ $verdict == NO* ]]; then
		survivors=$((survivors + 1))
	else
		killed=$((killed + 1))
	fi
	printf '%-26s %-7s %-64s %5ss\n' "$name" "$verdict" "$by" "$dt"
done
echo "mutants: $killed/${#selected[@]} killed, $survivors survived, $(($(date +%s) - start))s in all"
((survivors == 0))
