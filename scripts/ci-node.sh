#!/usr/bin/env bash
# ci-node.sh: make sure `node` (>= 20) and `npm` are installed, for the TypeScript client's
# tests (make test-ts); install them from Debian's packages when missing. The TypeScript
# compiler itself comes from the npm registry (npm ci in clients/typescript, pinned by its
# package-lock.json). Progress messages go to stderr; nothing is printed on stdout.
#
# Debian 12 (bookworm) packages nodejs 18, which is too old (the client uses
# AbortSignal.any, Node 20.3+); Debian 13 (trixie) packages nodejs 20. When the configured
# archives offer no node 20, the script adds NodeSource's apt repository of node 20 and
# installs it from there. Quiet (exit 0, nothing printed) when node >= 20 and npm are there.
set -euo pipefail

log() { echo "ci-node: $*" >&2; }
source "$(dirname "$0")/lib/apt.sh"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# build_tools installs what node-gyp needs to compile better-sqlite3's native module (the
# SQLite fencing tests' dev dependency) when no prebuilt binary can be downloaded, as on a CI
# machine that reaches no GitHub: a C++ compiler, make and python3.
build_tools() {
	local tools=()
	command -v g++ >/dev/null || tools+=(g++)
	command -v make >/dev/null || tools+=(make)
	command -v python3 >/dev/null || tools+=(python3)
	if ((${#tools[@]} > 0)); then
		apt_install "${tools[*]} (to build better-sqlite3)" "${tools[@]}"
	fi
}

# quiet when node >= 20, npm and the build tools are there (make test-deps runs this on every
# make test)
if command -v npm >/dev/null && (($(node_major) >= 20)); then
	build_tools
	exit 0
fi

# debian_archive_node_major prints the major version of the nodejs package apt would install
# from the configured archives (0 when none).
debian_archive_node_major() {
	apt-cache policy nodejs 2>/dev/null | awk '/Candidate:/ { split($2, v, "."); sub(/^[0-9]+:/, "", v[1]); print v[1] + 0; exit }' || echo 0
}

# add_nodesource adds NodeSource's apt repository of node 20, as its documentation's manual
# installation does (a signed-by key in /etc/apt/keyrings): Debian 12 packages node 18, older
# than clients/typescript needs (AbortSignal.any, Symbol.asyncDispose).
add_nodesource() {
	[[ "$(id -u)" == 0 ]] || { log "error: node >= 20 missing and installing it needs root"; exit 1; }
	local need=()
	command -v curl >/dev/null || need+=(curl)
	command -v gpg >/dev/null || need+=(gnupg)
	[[ -e /etc/ssl/certs/ca-certificates.crt ]] || need+=(ca-certificates)
	if ((${#need[@]} > 0)); then
		apt_install "${need[*]}" "${need[@]}"
	fi
	log "adding NodeSource's apt repository for node 20 (deb.nodesource.com)"
	mkdir -p /etc/apt/keyrings
	curl -fsSL https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key | gpg --batch --yes --dearmor -o /etc/apt/keyrings/nodesource.gpg
	echo "deb [signed-by=/etc/apt/keyrings/nodesource.gpg] https://deb.nodesource.com/node_20.x nodistro main" >/etc/apt/sources.list.d/nodesource.list
}

if command -v apt-get >/dev/null && (($(node_major) < 20)); then
	if (($(debian_archive_node_major) < 20)); then
		[[ "$(id -u)" == 0 ]] && apt-get update >&2 || true
	fi
	if (($(debian_archive_node_major) < 20)); then
		add_nodesource
	fi
	# NodeSource's nodejs package carries npm; Debian's has it apart.
	apt_install "node >= 20" nodejs
	command -v npm >/dev/null || apt_install npm npm
fi
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]} > 0)); then
	apt_install "${missing[*]}" "${missing[@]}"
fi
build_tools
major=$(node_major)
if ((major < 20)); then
	log "error: node $(node --version 2>/dev/null) is older than 20, which clients/typescript needs"
	exit 1
fi
log "node $(node --version) and npm $(npm --version) are installed"
