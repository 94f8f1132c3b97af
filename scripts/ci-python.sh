#!/usr/bin/env bash
# ci-python.sh: make sure Debian's python3 has what installing the Python client as a user
# would needs offline (venv, pip, and the build backend: python3-setuptools, python3-wheel),
# for `make test-python-install`; install them with apt-get when missing. Only Debian's
# packages are used: `pip install --no-build-isolation` then builds with the system's
# setuptools instead of fetching one from the package index. Progress goes to stderr.
set -euo pipefail

log() { echo "ci-python: $*" >&2; }
source "$(dirname "$0")/lib/apt.sh"

PY=/usr/bin/python3
# The suites run `python3` from PATH; it must be 3.11 or newer.
if command -v python3 >/dev/null && ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
	log "error: $(python3 --version) is older than 3.11, which clients/python needs (Debian 12 packages 3.11)"
	exit 1
fi
missing=()
[[ -x $PY ]] || missing+=(python3)
$PY -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
$PY -c 'import setuptools' 2>/dev/null || missing+=(python3-setuptools)
$PY -c 'import wheel' 2>/dev/null || missing+=(python3-wheel)
$PY -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if ((${#missing[@]} == 0)); then
	exit 0 # quiet: make test-deps runs this on every make test
fi
apt_install "${missing[*]}" "${missing[@]}"
log "$($PY --version) with setuptools $($PY -c 'import setuptools; print(setuptools.__version__)') and wheel $($PY -c 'import wheel; print(wheel.__version__)')"
