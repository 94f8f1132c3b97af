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
missing=()
[[ -x $PY ]] || missing+=(python3)
$PY -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
$PY -c 'import setuptools' 2>/dev/null || missing+=(python3-setuptools)
$PY -c 'import wheel' 2>/dev/null || missing+=(python3-wheel)
$PY -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if ((${#missing[@]} > 0)); then
	apt_install "${missing[*]}" "${missing[@]}"
fi
log "$($PY --version) with setuptools $($PY -c 'import setuptools; print(setuptools.__version__)') and wheel $($PY -c 'import wheel; print(wheel.__version__)')"
