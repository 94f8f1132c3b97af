#!/usr/bin/env bash
# ci-chromium.sh: make sure a headless-capable Chromium is installed for the dashboard's
# browser test (test/browser), and print its path as the one and only stdout line.
#
#   export RAFTLOCK_CHROMIUM="$(scripts/ci-chromium.sh)"
#
# When no chromium (or chromium-browser, google-chrome) is on PATH, Debian's "chromium"
# package is installed with apt-get (as root). Progress messages go to stderr.
set -euo pipefail

log() { echo "ci-chromium: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}
source "$(dirname "$0")/lib/apt.sh"

find_chromium() {
	local name
	for name in chromium chromium-browser google-chrome google-chrome-stable; do
		if command -v "$name" >/dev/null; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

if ! bin="$(find_chromium)"; then
	apt_install --with-recommends Chromium chromium
	bin="$(find_chromium)" || die "installed chromium but found no chromium binary on PATH"
fi
log "using $bin ($("$bin" --version 2>/dev/null | tail -n 1))"
echo "$bin"
