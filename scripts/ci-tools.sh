#!/usr/bin/env bash
# ci-tools.sh: install, with Debian's packages, the tools that tests need and a fresh
# machine may lack: `ip` (iproute2) for the network-namespace attack suite, systemd-analyze
# (systemd) for the deployment unit's check, mount (util-linux) for the full-disk test.
# Under CI=true those tests fail instead of skipping, so CI must provide them. Progress
# messages go to stderr; nothing is printed on stdout.
set -euo pipefail

log() { echo "ci-tools: $*" >&2; }
source "$(dirname "$0")/lib/apt.sh"

missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v mount >/dev/null || missing+=(util-linux)
command -v python3 >/dev/null || missing+=(python3) # the Python client's tests (make test-clients)
if ((${#missing[@]} == 0)); then
	log "ip, systemd-analyze and mount are installed"
	exit 0
fi
apt_install "${missing[*]}" "${missing[@]}"
