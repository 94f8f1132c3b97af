#!/usr/bin/env bash
# The GC-pause demo with real JVMs: two worker processes charge card 42 in PostgreSQL under
# the raftlock lock "payments/card-42". Worker 1 takes the lock, checks isLost() (false),
# and is frozen by SIGSTOP before its write, as a stop-the-world GC pause freezes a JVM,
# keepalive thread included, for longer than the TTL. Its lease expires; worker 2 is granted
# the lock with a higher token and charges. Worker 1 is resumed (SIGCONT) and charges with
# its old token. Run twice:
#   fenced: the charge is Fence.update (... AND last_token <= token): worker 1's is refused;
#   plain:  the charge is a plain UPDATE: the card is charged twice.
# Exits non-zero unless the ledger shows 1 charge fenced and 2 plain.
#
# Needs: bin/raftlock (built when missing), the client compiled (clients/java/target/classes;
# built with Maven when missing), JDK 17+, pgjdbc and Jackson jars (Debian's /usr/share/java, or
# RAFTLOCK_JAVA_CP), and PostgreSQL: RAFTLOCK_TEST_POSTGRES_DSN, or a throwaway server started
# with scripts/ci-postgres.sh. TTL_MS sets the lock's TTL (default 1500).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JAVA_DIR=$(cd "$HERE/../.." && pwd)
REPO=$(cd "$JAVA_DIR/../.." && pwd)
export TTL_MS=${TTL_MS:-1500}
WORK=$(mktemp -d /tmp/raftlock-java-demo.XXXXXX)
PIDS=()
PGDIR=

cleanup() {
	for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n "$PGDIR" ]]; then "$REPO/scripts/ci-postgres.sh" stop "$PGDIR" >/dev/null 2>&1 || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

BIN=${RAFTLOCK_BIN:-$REPO/bin/raftlock}
[[ -x "$BIN" ]] || (cd "$REPO" && go build -o "$BIN" ./cmd/raftlock)
if [[ ! -d "$JAVA_DIR/target/classes/io/raftlock" ]]; then
	(cd "$JAVA_DIR" && mvn -B -q -o -Pdebian -Dmaven.repo.local=/usr/share/maven-repo compile)
fi
CP=${RAFTLOCK_JAVA_CP:-/usr/share/java/jackson-databind.jar:/usr/share/java/jackson-core.jar:/usr/share/java/jackson-annotations.jar:/usr/share/java/postgresql.jar}
CP="$JAVA_DIR/target/classes:$CP"
javac -d "$WORK/classes" -cp "$CP" "$HERE/Worker.java"
CP="$WORK/classes:$CP"
JAVA=(java -XX:TieredStopAtLevel=1 -cp "$CP" Worker)
java_() { "${JAVA[@]}" "$@"; }

if [[ -z "${RAFTLOCK_TEST_POSTGRES_DSN:-}" ]]; then
	PGDIR="$WORK/pg"
	read -r PGPORT _ <<<"$(java_ ports 1)"
	RAFTLOCK_TEST_POSTGRES_DSN=$("$REPO/scripts/ci-postgres.sh" start "$PGDIR" "$PGPORT")
fi
export RAFTLOCK_TEST_POSTGRES_DSN
export DEMO_SCHEMA="gcpause_$$" # a schema of our own in the database, dropped at the end

read -r H1 H2 H3 R1 R2 R3 <<<"$(java_ ports 6)"
BOOT="n1=127.0.0.1:$R1,n2=127.0.0.1:$R2,n3=127.0.0.1:$R3"
i=0
for hp in "$H1:$R1" "$H2:$R2" "$H3:$R3"; do
	i=$((i + 1))
	"$BIN" serve --id "n$i" --http-addr "127.0.0.1:${hp%%:*}" --raft-addr "127.0.0.1:${hp##*:}" \
		--data-dir "$WORK/n$i" --bootstrap "$BOOT" >"$WORK/n$i.log" 2>&1 &
	PIDS+=($!)
done
export RAFTLOCK_ENDPOINTS="http://127.0.0.1:$H1,http://127.0.0.1:$H2,http://127.0.0.1:$H3"
java_ wait-leader

run() { # mode: fenced or plain; prints the ledger, returns the number of charges in $CHARGES
	local mode=$1
	say "=== $mode: two JVM workers charge card 42 (TTL ${TTL_MS} ms) ==="
	java_ setup
	mkfifo "$WORK/go-$mode"
	# java itself in the background (not a function's subshell): SIGSTOP must reach the JVM.
	"${JAVA[@]}" charge worker-1 "$mode" pause <"$WORK/go-$mode" >"$WORK/w1-$mode.out" 2>&1 &
	local w1=$!
	PIDS+=("$w1")
	exec 7>"$WORK/go-$mode" # open the fifo's writer so worker 1's read blocks until we write
	local end=$((SECONDS + 30))
	until grep -q '^HOLDING' "$WORK/w1-$mode.out"; do
		kill -0 "$w1" 2>/dev/null || { cat "$WORK/w1-$mode.out"; echo "worker 1 exited before holding the lock" >&2; exit 1; }
		((SECONDS < end)) || { echo "worker 1 did not take the lock in 30 s" >&2; exit 1; }
		sleep 0.05
	done
	kill -STOP "$w1"
	grep -v '^HOLDING' "$WORK/w1-$mode.out"
	echo "worker-1: SIGSTOP (the whole JVM frozen, keepalive thread included)"
	local t0=$SECONDS
	java_ charge worker-2 "$mode" go </dev/null | grep -v '^HOLDING'
	echo "worker-1: SIGCONT after $((SECONDS - t0)) s frozen (worker 2 waited for the lease to expire, then charged)"
	kill -CONT "$w1"
	echo go >&7
	exec 7>&-
	wait "$w1" || { cat "$WORK/w1-$mode.out"; echo "worker 1 failed" >&2; exit 1; }
	sed -n '/resumed/,$p' "$WORK/w1-$mode.out"
	echo "ledger ($mode):"
	set +e
	java_ ledger
	CHARGES=$?
	set -e
}

run fenced
FENCED=$CHARGES
run plain
PLAIN=$CHARGES
java_ drop

say "fenced: $FENCED charge(s); plain: $PLAIN charge(s)"
if [[ "$FENCED" == 1 && "$PLAIN" == 2 ]]; then
	echo "as told: with the fencing token the stale worker's charge is refused by the database; without it the card is charged twice"
	exit 0
fi
echo "NOT as told: want 1 charge fenced and 2 plain" >&2
exit 1
