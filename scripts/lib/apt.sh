# apt.sh: sourced by the ci-*.sh scripts, which define log() first. Installing what a test
# needs is the same everywhere: as root, with Debian's packages, non-interactive, progress on
# stderr so that a script's stdout stays what it prints on purpose.

# apt_install [--with-recommends] WHAT PACKAGE...: install PACKAGEs with apt-get because WHAT
# is missing (WHAT names it in the error), or exit 1 saying why that cannot be done.
# Recommended packages are left out unless --with-recommends asks for them.
apt_install() {
	local recommends=--no-install-recommends
	if [[ ${1-} == --with-recommends ]]; then
		recommends=
		shift
	fi
	local what=$1
	shift
	[[ "$(id -u)" == 0 ]] || { log "error: $what missing and installing needs root"; exit 1; }
	command -v apt-get >/dev/null || { log "error: $what missing and apt-get is not available"; exit 1; }
	log "installing $* with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	# shellcheck disable=SC2086 # an empty $recommends is no word at all
	apt-get install -y $recommends "$@" >&2
}
