#!/usr/bin/env bash
# Builds and tests the Java binding (bindings-java/) against a real colors-server.
#
#   bindings-java/run-tests.sh [extra mvn args, e.g. -Dtest=ValuesTest]
#
# 1. builds the top-level CMake build in $BUILD_DIR (default <repo>/build): colors-server, the
#    JNI library <build>/bindings-java/libcolors_jni.so and the Python binding (cross-language tests);
# 2. builds the agent jar (agent/, mvn package) and runs `mvn -q -B test` in bindings-java/ (the
#    first run downloads JUnit, ASM and the Maven plugins from Maven Central into ~/.m2; later
#    runs need no network), with COLORS_JNI_LIB and
#    COLORS_SERVER_BIN pointing into the build. Exits non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$REPO/$BUILD_DIR" ;; esac
JOBS="${JOBS:-2}"

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run-tests.sh: '$tool' not found: install default-jdk-headless and maven (make bootstrap)" >&2
        exit 1
    fi
done

# ---- 1. build ------------------------------------------------------------------------------
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$REPO" -B "$BUILD_DIR" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$JOBS" >/dev/null
LIB="$BUILD_DIR/bindings-java/libcolors_jni.so"
if [ ! -f "$LIB" ] && grep -q "bindings-java" "$REPO/CMakeLists.txt"; then
    # Configured before the JDK was installed: configure again so the binding is included.
    cmake "$BUILD_DIR" >/dev/null
    cmake --build "$BUILD_DIR" -j"$JOBS" >/dev/null
fi
if [ ! -f "$LIB" ]; then
    echo "run-tests.sh: $LIB was not built (no JDK found by CMake? see the configure output)" >&2
    exit 1
fi

# The agent jar (ASM shaded in; Maven because ASM comes from Maven Central): the tests JVM runs
# with -javaagent:agent/target/colors-agent.jar (pom.xml's surefire argLine); also copied next to
# colors.jar.
(cd "$HERE/agent" && mvn -q -B package)
cp "$HERE/agent/target/colors-agent.jar" "$BUILD_DIR/bindings-java/colors-agent.jar"

# ---- 2. tests ------------------------------------------------------------------------------
export COLORS_JNI_LIB="$LIB"
export COLORS_SERVER_BIN="${COLORS_SERVER_BIN:-$BUILD_DIR/colors-server/colors-server}"
export COLORS_PYTHONPATH="$BUILD_DIR/bindings-python"  # cross-language tests (skipped without it)
cd "$HERE"
# Release artifacts already in ~/.m2 are not fetched again, so after the first run this needs no
# network.
exec mvn -q -B test "$@"
