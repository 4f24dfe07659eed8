#!/usr/bin/env bash
# Builds what the Java OO7 tests need and runs them (mirrors bindings-java/run-tests.sh):
#
#   oo7/java/run-tests.sh [extra mvn args, e.g. -Dtest=SmallDatabaseTest]
#
# 1. the CMake targets colors-server and colors_java (colors.jar, the JNI library) in $BUILD_DIR
#    (default <repo>/build), and the agent jar, when missing;
# 2. `mvn -q -B test` in oo7/java with COLORS_JNI_LIB and COLORS_SERVER_BIN pointing into the
#    build. Each test class starts its own colors-server. The cross-language tests read a database
#    the Python loader (oo7/python/load.py, colors_shm from COLORS_PYTHONPATH, default
#    <build>/bindings-python) or the C++ loader (<build>/oo7/oo7-load) published, and fail, with
#    the reason, when those are absent. Exits non-zero on any failure.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
oo7_java_prepare
export COLORS_SERVER_BIN="${COLORS_SERVER_BIN:-$BUILD_DIR/colors-server/colors-server}"
export COLORS_PYTHONPATH="${COLORS_PYTHONPATH:-$BUILD_DIR/bindings-python}"
export BUILD_DIR
cd "$OO7_JAVA"
exec mvn -q -B -Dcolors.build.dir="$BUILD_DIR" test "$@"
