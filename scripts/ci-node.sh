#!/usr/bin/env bash
# ci-node.sh: make sure `node` (>= 20) and `npm` are installed, for the TypeScript client's
# tests (make test-ts); install them from Debian's packages when missing. The TypeScript
# compiler itself comes from the npm registry (npm ci in clients/typescript, pinned by its
# package-lock.json). Progress messages go to stderr; nothing is printed on stdout.
#
# Debian 12 (bookworm) packages nodejs 18, which is too old (the client uses
# AbortSignal.any, Node 20.3+); Debian 13 (trixie) packages nodejs 20. On bookworm, install a
# Node 20 build (NodeSource's, say) before running CI: this script then finds it and says so.
set -euo pipefail

log() { echo "ci-node: $*" >&2; }
source "$(dirname "$0")/lib/apt.sh"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]} > 0)); then
	apt_install "${missing[*]}" "${missing[@]}"
fi
major=$(node_major)
if ((major < 20)); then
	log "error: node $(node --version 2>/dev/null) is older than 20, which clients/typescript needs (Debian bookworm packages 18; trixie packages 20)"
	exit 1
fi
log "node $(node --version) and npm $(npm --version) are installed"
