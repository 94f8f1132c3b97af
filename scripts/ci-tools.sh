#!/usr/bin/env bash
# ci-tools.sh: install, with Debian's packages, the tools that tests need and a fresh
# machine may lack: `ip` (iproute2) for the network-namespace attack suite, systemd-analyze
# (systemd) for the deployment unit's check, mount (util-linux) for the full-disk test.
# Under CI=true those tests fail instead of skipping, so CI must provide them. Progress
# messages go to stderr; nothing is printed on stdout.
set -euo pipefail

log() { echo "ci-tools: $*" >&2; }

missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v mount >/dev/null || missing+=(util-linux)
command -v python3 >/dev/null || missing+=(python3) # the Python client's tests (make test-clients)
if ((${#missing[@]} == 0)); then
	log "ip, systemd-analyze and mount are installed"
	exit 0
fi
[[ "$(id -u)" == 0 ]] || { log "error: ${missing[*]} missing and installing needs root"; exit 1; }
command -v apt-get >/dev/null || { log "error: ${missing[*]} missing and apt-get is not available"; exit 1; }
log "installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends "${missing[@]}" >&2
