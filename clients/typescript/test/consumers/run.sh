#!/bin/sh
# run.sh: install the package as a user would, from its `npm pack` tarball (offline: it has
# no dependencies), into a CommonJS project, an ES module project and a TypeScript project
# compiled to CommonJS, and run each against a one-node cluster of $RAFTLOCK_BIN.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pkg=$(cd "$here/../.." && pwd)
bin=${RAFTLOCK_BIN:?set RAFTLOCK_BIN to the raftlock binary}
work=$(mktemp -d /tmp/raftlock-consumers.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

(cd "$pkg" && npm pack --silent --ignore-scripts --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/raftlock-*.tgz)
freeport() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
port=$(freeport)
raft=$(freeport)
"$bin" serve --id n1 --http-addr "127.0.0.1:$port" --raft-addr "127.0.0.1:$raft" --data-dir "$work/data" --bootstrap "n1=127.0.0.1:$raft" >"$work/node.log" 2>&1 &
pid=$!
export RAFTLOCK_ENDPOINTS="http://127.0.0.1:$port"
i=0
until node -e 'fetch(process.env.RAFTLOCK_ENDPOINTS+"/readyz").then(r=>process.exit(r.ok?0:1),()=>process.exit(1))'; do
	i=$((i + 1))
	[ "$i" -lt 200 ] || { echo "consumers: the node did not become ready" >&2; cat "$work/node.log" >&2; exit 1; }
	sleep 0.1
done
for c in cjs esm ts-cjs; do
	cp -r "$here/$c" "$work/$c"
	# As a user installs it: scripts allowed, warnings shown. The package has no install
	# script (no prepare: dist is built by prepack, into the tarball), so npm has nothing to
	# warn about; its optional peer dependencies (pg, better-sqlite3) are not installed.
	(cd "$work/$c" && npm install --offline --no-audit --no-fund --loglevel=warn "$tarball") >"$work/install-$c.log" 2>&1 || { cat "$work/install-$c.log" >&2; exit 1; }
	if grep -qi "script" "$work/install-$c.log"; then
		echo "consumers: npm warned about scripts when installing the package into $c:" >&2
		cat "$work/install-$c.log" >&2
		exit 1
	fi
	[ ! -e "$work/$c/node_modules/pg" ] && [ ! -e "$work/$c/node_modules/better-sqlite3" ] || { echo "consumers: an optional peer dependency was installed" >&2; exit 1; }
done
node "$work/cjs/index.js"
node "$work/esm/index.js"
(cd "$work/ts-cjs" && ln -s "$pkg/node_modules/@types" node_modules/@types && node "$pkg/node_modules/typescript/bin/tsc" -p . && node out/index.js)
