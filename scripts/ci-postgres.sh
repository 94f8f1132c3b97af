#!/usr/bin/env bash
# ci-postgres.sh: a throwaway PostgreSQL server for tests.
#
#   scripts/ci-postgres.sh start DIR PORT   initdb (once) and start a cluster in DIR that listens
#                                           on 127.0.0.1:PORT only, create database raftlock_test,
#                                           and print its DSN as the one and only stdout line
#   scripts/ci-postgres.sh stop DIR         stop it (a no-op when it is not running)
#   scripts/ci-postgres.sh status DIR       exit 0 when it is running
#
# Typical use:
#
#   export RAFTLOCK_TEST_POSTGRES_DSN="$(scripts/ci-postgres.sh start /tmp/raftlock-pg 55432)"
#   go test -race ./fencing/... ./ledger/...
#   scripts/ci-postgres.sh stop /tmp/raftlock-pg
#
# The cluster is for tests only: trust authentication on loopback, fsync off. When the server
# binaries are missing they are installed with apt-get (Debian's "postgresql" package). When run
# as root the server runs as the "postgres" system user, since PostgreSQL refuses to run as root.
# Every progress message goes to stderr, so $(...) captures exactly the DSN.
set -euo pipefail

DB_NAME=raftlock_test

log() { echo "ci-postgres: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}
source "$(dirname "$0")/lib/apt.sh"

usage() {
	echo "usage: $0 start DIR PORT | stop DIR | status DIR" >&2
	exit 2
}

# find_bindir prints the newest /usr/lib/postgresql/*/bin that has initdb and pg_ctl.
find_bindir() {
	local d best=""
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]]; then
			best="$d"
		fi
	done
	[[ -n "$best" ]] && echo "$best"
}

# as_owner runs a command as the user that owns the cluster: "postgres" when we are root,
# ourselves otherwise. It runs from DIR so that no inaccessible working directory is inherited.
as_owner() {
	if [[ "$(id -u)" == 0 ]]; then
		as_owner_at "$DIR" "$@"
	else
		(cd "$DIR" && "$@")
	fi
}

# as_owner_at runs a command as the postgres user from directory $1 (root only).
as_owner_at() {
	local dir="$1"
	shift
	if command -v runuser >/dev/null; then
		(cd "$dir" && runuser -u postgres -- "$@")
	else
		(cd "$dir" && su -s /bin/sh postgres -c "$(printf '%q ' "$@")")
	fi
}

# make_reachable lets the postgres user into DIR: it gives DIR to postgres and adds search
# permission (x, not r) for others to any ancestor directory that lacks it, e.g. /root.
make_reachable() {
	[[ "$(id -u)" == 0 ]] || return 0
	if ! id postgres >/dev/null 2>&1; then
		log "creating the postgres system user"
		useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
	fi
	chown postgres: "$DIR"
	chmod 700 "$DIR"
	# Walk down from / so that each directory is tested with its ancestors already passable.
	local p="" part
	local -a parts
	IFS=/ read -r -a parts <<<"${DIR#/}"
	for part in "${parts[@]:0:${#parts[@]}-1}"; do
		p+="/$part"
		if ! as_owner_at / test -x "$p"; then
			log "adding search permission (o+x) to $p so that postgres can reach $DIR"
			chmod o+x "$p"
		fi
	done
}

is_running() {
	[[ -f "$DATA/PG_VERSION" ]] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

cmd_start() {
	local port="$1"
	[[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port: $port"

	BIN="$(find_bindir || true)"
	if [[ -z "$BIN" ]]; then
		apt_install "PostgreSQL server binaries" postgresql
		BIN="$(find_bindir || true)"
		[[ -n "$BIN" ]] || die "installed postgresql but found no initdb/pg_ctl under /usr/lib/postgresql/*/bin"
	fi
	log "using $BIN"

	mkdir -p "$DIR"
	make_reachable

	if [[ ! -f "$DATA/PG_VERSION" ]]; then
		rm -rf "$DATA"
		log "initdb $DATA"
		as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >&2
	fi

	# Settings go on the command line rather than into postgresql.conf, so a rerun with
	# another port just works. Durability is off: this cluster is thrown away.
	local opts="-c listen_addresses=127.0.0.1 -p $port -k $DIR -c fsync=off"
	opts+=" -c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
	if is_running; then
		local running_port
		running_port="$(sed -n 4p "$DATA/postmaster.pid" 2>/dev/null || true)"
		if [[ "$running_port" != "$port" ]]; then
			log "running in $DIR on port $running_port; restarting on $port"
			as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2
		else
			log "already running in $DIR"
		fi
	fi
	if ! is_running; then
		log "starting on 127.0.0.1:$port (log: $DIR/postgres.log)"
		if ! as_owner "$BIN/pg_ctl" -D "$DATA" -l "$DIR/postgres.log" -w -t 60 -o "$opts" start >&2; then
			tail -n 20 "$DIR/postgres.log" >&2 || true
			die "pg_ctl start failed"
		fi
	fi

	local psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres)
	local exists
	exists="$(as_owner "${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ||
		die "cannot connect to 127.0.0.1:$port (is another server on that port?)"
	if [[ "$exists" != 1 ]]; then
		log "creating database $DB_NAME"
		as_owner "${psql[@]}" -c "CREATE DATABASE $DB_NAME" >&2
	fi
	log "ready"
	echo "postgres://postgres@127.0.0.1:$port/$DB_NAME?sslmode=disable"
}

cmd_stop() {
	BIN="$(find_bindir || true)"
	if [[ -z "$BIN" || ! -d "$DIR" ]]; then
		log "nothing to stop in $DIR"
		return 0
	fi
	if is_running; then
		log "stopping the server in $DIR"
		as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2
	else
		log "not running in $DIR"
	fi
}

cmd_status() {
	BIN="$(find_bindir || true)"
	[[ -n "$BIN" && -d "$DIR" ]] && is_running
}

[[ $# -ge 2 ]] || usage
cmd="$1"
DIR="$2"
[[ -n "$DIR" ]] || usage
# An absolute path: pg_ctl and the socket directory are used from other working directories.
DIR="$(realpath -m -- "$DIR")"
DATA="$DIR/data"

case "$cmd" in
start)
	[[ $# -eq 3 ]] || usage
	cmd_start "$3"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	cmd_stop
	;;
status)
	[[ $# -eq 2 ]] || usage
	if cmd_status; then
		log "running in $DIR"
	else
		log "not running in $DIR"
		exit 1
	fi
	;;
*)
	usage
	;;
esac
