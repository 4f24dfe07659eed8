#!/usr/bin/env bash
# Builds and tests the Python binding (bindings-python/) against a real colors-server.
#
#   bindings-python/run-tests.sh [pytest args...]
#
# 1. installs what the tests need into the project's python3 (pybind11, scikit-build-core,
#    hypothesis, pytest, sortedcontainers: the sorted map's reference) if missing — idempotent and quiet;
# 2. builds: the top-level build in $BUILD_DIR (default <repo>/build; it must include
#    add_subdirectory(bindings-python)), or, when that build has no Python module, a standalone
#    CMake build of bindings-python/ in $BUILD_DIR/bindings-python-standalone;
# 3. runs pytest on bindings-python/tests with PYTHONPATH pointing at the built package and
#    COLORS_SERVER_BIN at the built server. Exits non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$REPO/$BUILD_DIR" ;; esac
JOBS="${JOBS:-2}"
PYTHON="${PYTHON:-python3}"

# ---- 1. Python packages --------------------------------------------------------------------
missing=()
"$PYTHON" -c "import pybind11" 2>/dev/null || missing+=(pybind11)
"$PYTHON" -c "import scikit_build_core" 2>/dev/null || missing+=(scikit-build-core)
"$PYTHON" -c "import hypothesis" 2>/dev/null || missing+=(hypothesis)
"$PYTHON" -c "import sortedcontainers" 2>/dev/null || missing+=(sortedcontainers)
"$PYTHON" -c "import pytest" 2>/dev/null || missing+=(pytest)
if [ ${#missing[@]} -gt 0 ]; then
    echo "run-tests.sh: installing ${missing[*]} into $("$PYTHON" -c 'import sys; print(sys.executable)')"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${missing[@]}"
fi

# ---- 2. build ------------------------------------------------------------------------------
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$REPO" -B "$BUILD_DIR" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$JOBS" >/dev/null
PKG_DIR="$BUILD_DIR/bindings-python"
have_module() { ls "$PKG_DIR"/colors_shm/_colors_shm*.so >/dev/null 2>&1; }
if ! have_module && grep -q "bindings-python" "$REPO/CMakeLists.txt"; then
    # Configured before pybind11 was installed: configure again so the binding is included.
    cmake "$BUILD_DIR" >/dev/null
    cmake --build "$BUILD_DIR" -j"$JOBS" >/dev/null
fi
if ! have_module; then
    # The top-level build does not include bindings-python (yet): build it on its own.
    SA="$BUILD_DIR/bindings-python-standalone"
    cmake -S "$HERE" -B "$SA" -DPython_EXECUTABLE="$("$PYTHON" -c 'import sys; print(sys.executable)')" >/dev/null
    cmake --build "$SA" -j"$JOBS" >/dev/null
    PKG_DIR="$SA/bindings-python"
fi

# ---- 3. tests ------------------------------------------------------------------------------
export COLORS_SERVER_BIN="${COLORS_SERVER_BIN:-$BUILD_DIR/colors-server/colors-server}"
export PYTHONPATH="$PKG_DIR${PYTHONPATH:+:$PYTHONPATH}"
cd "$HERE"
exec "$PYTHON" -m pytest -q -p no:cacheprovider "$HERE/tests" "$REPO/oo7/python/tests" "$@"
