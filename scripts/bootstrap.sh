#!/usr/bin/env bash
# Install the Debian packages needed to build and test colors.
#
# Idempotent and quiet: if every package is already installed it prints
# nothing and exits 0. Otherwise it runs `apt-get update` once and installs
# only the missing packages. Never reads stdin (safe under CI=true).
set -euo pipefail

# Single list of required Debian packages. Bindings add to it later
# (e.g. python3-dev pybind11-dev default-jdk maven).
PACKAGES="g++ cmake make libboost-dev catch2 spin default-jdk-headless maven"

missing=()
for pkg in $PACKAGES; do
    # dpkg -s succeeds for removed-but-not-purged packages too, so check
    # the actual install state.
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    if [ "$status" != "installed" ]; then
        missing+=("$pkg")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: missing Debian packages: ${missing[*]}"

    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        # -n: never prompt for a password (no stdin in CI); fail instead.
        SUDO=(sudo -n)
    else
        echo "bootstrap: error: not root and sudo is not available." >&2
        echo "bootstrap: please install as root: apt-get install ${missing[*]}" >&2
        exit 1
    fi

    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update </dev/null
    "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
fi

# Python build and test dependencies of bindings-python/ (and sortedcontainers, which oo7/python
# and so `make demo` use for the private indexes; matplotlib, which draws oo7/run's figure), from PyPI, into the project's python3
# (the interpreter on PATH). Quiet when they are all there already.
py_missing=()
for mod in pybind11:pybind11 scikit_build_core:scikit-build-core hypothesis:hypothesis pytest:pytest sortedcontainers:sortedcontainers matplotlib:matplotlib; do
    python3 -c "import ${mod%%:*}" 2>/dev/null || py_missing+=("${mod#*:}")
done
if [ ${#py_missing[@]} -gt 0 ]; then
    echo "bootstrap: installing Python packages: ${py_missing[*]}"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${py_missing[@]}" </dev/null
fi
