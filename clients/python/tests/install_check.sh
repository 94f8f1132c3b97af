#!/usr/bin/env bash
# install_check.sh: install the Python client as a user would, offline, and use it.
#
# Debian's python3 makes a venv that sees the system's packages (--system-site-packages, so
# that python3-setuptools and python3-wheel are the build backend: nothing comes from the
# package index), `pip install --no-build-isolation --no-index clients/python` builds and
# installs the package into it, and a script run from outside the source tree takes a lock on
# a one-node cluster through the installed package (never the source tree's). It fails, not
# skips, when anything is missing (scripts/ci-python.sh installs Debian's packages).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${RAFTLOCK_BIN:-$REPO/bin/raftlock}
PY=${RAFTLOCK_SYSTEM_PYTHON:-/usr/bin/python3}
work=$(mktemp -d /tmp/raftlock-pyinstall.XXXXXX)
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

$PY -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-build-isolation --no-index "$REPO/clients/python"

port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
raft=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --id n1 --http-addr "127.0.0.1:$port" --raft-addr "127.0.0.1:$raft" --data-dir "$work/data" --bootstrap "n1=127.0.0.1:$raft" >"$work/node.log" 2>&1 &
pid=$!

cd "$work"
RAFTLOCK_ENDPOINTS="http://127.0.0.1:$port" "$work/venv/bin/python" - <<'PY'
import time

import raftlock

assert "site-packages" in raftlock.__file__, raftlock.__file__
client = raftlock.Client()  # RAFTLOCK_ENDPOINTS
end = time.monotonic() + 20
while True:
    try:
        client.cluster(timeout=1)
        break
    except raftlock.RaftlockError:
        if time.monotonic() > end:
            raise
        time.sleep(0.1)
with client.lock("install/check", ttl=5, wait=10) as held:
    assert held.token > 0 and not held.lost.is_set()
try:
    client.lock("/abs")
    raise SystemExit("an invalid name was accepted")
except raftlock.InvalidRequest as e:
    assert e.code == "invalid_name", e
client.close()
print("install_check: installed", raftlock.__version__, "from", raftlock.__file__, "and held a lock")
PY
