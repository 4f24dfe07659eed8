#!/usr/bin/env bash
# Java field-access benchmark (org.colors.FieldBench, src/test/java): agent-rewritten reads and
# writes of int and double fields on shared vs private instances, the agent's overhead on private
# code, one JNI downcall vs one Java call; ratios measured in the same run.
#
#   bindings-java/run-bench.sh            (BUILD_DIR defaults to <repo>/build)
#
# Builds what is missing (CMake build, agent jar, test classes), starts a private colors-server
# (unique name, socket in a temporary directory), runs the benchmark with -javaagent, stops it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$REPO/$BUILD_DIR" ;; esac

cmake --build "$BUILD_DIR" -j"${JOBS:-2}" --target colors-server colors_jni colors_java >/dev/null
LIB="$BUILD_DIR/bindings-java/libcolors_jni.so"
SERVER="$BUILD_DIR/colors-server/colors-server"
(cd "$HERE/agent" && mvn -q -B package)
(cd "$HERE" && mvn -q -B test-compile)

TMP="$(mktemp -d)"
NAME="colors-bench-java-$$"
"$SERVER" --name "$NAME" --socket "$TMP/sock" --heap-size 64M --log-level warn &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -S "$TMP/sock" ] && break; sleep 0.05; done

echo "load: $(uptime)"
java -javaagent:"$HERE/agent/target/colors-agent.jar" -Dcolors.jni.library="$LIB" -Dcolors.socket="$TMP/sock" \
    --enable-native-access=ALL-UNNAMED -cp "$HERE/target/classes:$HERE/target/test-classes" org.colors.FieldBench "$@"
