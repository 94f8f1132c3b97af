#!/bin/sh
# native-deps.sh: make better-sqlite3's native module (a dev dependency, for the SQLite
# fencing tests) load after `npm ci --ignore-scripts`. Its install script downloads a
# prebuilt binary or, without network access to GitHub, compiles one (about a minute of CPU):
# the result is kept in the user's cache, one per (version, Node ABI, platform), and copied
# in on later runs, so only the first run on a machine pays for it.
set -eu
cd "$(dirname "$0")/.."
mod=node_modules/better-sqlite3
[ -d "$mod" ] || exit 0
loads() { node -e 'require("better-sqlite3")(":memory:").close()' 2>/dev/null; }
ver=$(node -p 'require("./node_modules/better-sqlite3/package.json").version')
key=$(node -p 'process.versions.modules + "-" + process.platform + "-" + process.arch')
cache=${XDG_CACHE_HOME:-$HOME/.cache}/raftlock/better-sqlite3-$ver-$key.node
out=$mod/build/Release/better_sqlite3.node
loads && exit 0
if [ -f "$cache" ]; then
	mkdir -p "$(dirname "$out")"
	cp "$cache" "$out"
	loads && exit 0
fi
echo "native-deps: building better-sqlite3 $ver for node ABI $key (kept in $cache)" >&2
# node-gyp downloads node's headers from nodejs.org unless told where the installed ones are
# (Debian's and NodeSource's nodejs put them in <prefix>/include/node): a CI machine reaches
# no nodejs.org.
prefix=$(dirname "$(dirname "$(node -p process.execPath)")")
if [ -f "$prefix/include/node/node.h" ]; then
	npm rebuild better-sqlite3 --loglevel=error --nodedir="$prefix"
else
	npm rebuild better-sqlite3 --loglevel=error
fi
loads
mkdir -p "$(dirname "$cache")"
cp "$out" "$cache.tmp.$$" && mv "$cache.tmp.$$" "$cache"
