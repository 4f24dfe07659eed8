#!/usr/bin/env bash
# Java benchmarks (src/test/java): org.colors.FieldBench (agent-rewritten reads and writes of int
# and double fields on shared vs private instances, the agent's overhead on private code, one JNI
# downcall vs one Java call) and org.colors.TreeBench (rpc-bench's colors server derivation of
# depth-4 trees through a @Shared class, ns per node, against private instances; and the single
# operations of a derivation) and org.colors.TxBench (a read-only traversal in a transaction vs
# outside one; k = 1, 10, 1000 field writes in a transaction vs none vs under a SharedMonitor);
# ratios measured in the same run.
#
#   bindings-java/run-bench.sh            (BUILD_DIR defaults to <repo>/build)
#   JAVA_BENCH=tree bindings-java/run-bench.sh (only TreeBench; JAVA_BENCH=field: only FieldBench;
#                                          JAVA_BENCH=sortedmap: only SortedMapBench, vs TreeMap;
#                                          JAVA_BENCH=map: only MapBench, shared map get vs HashMap;
#                                          JAVA_BENCH=tx: only TxBench, transactions vs none/monitors; extra
#                                          arguments go to the selected benchmark's main)
#   JAVA_OPTS_BENCH="-Dbench.trees=1" ...      (extra JVM options, e.g. TreeBench's tree count)
#   SRVARGS="--gc-pacing=0" ...                (extra colors-server flags)
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
"$SERVER" --name "$NAME" --socket "$TMP/sock" --heap-size 1G --log-level warn ${SRVARGS:-} &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -S "$TMP/sock" ] && break; sleep 0.05; done

echo "load: $(uptime)"
JAVA=(java ${JAVA_OPTS_BENCH:-} -Dcolors.jni.library="$LIB" -Dcolors.socket="$TMP/sock" --enable-native-access=ALL-UNNAMED
      -cp "$HERE/target/classes:$HERE/target/test-classes")
AGENT=-javaagent:"$HERE/agent/target/colors-agent.jar"
JAVA_BENCH="${JAVA_BENCH:-all}"
if [ "$JAVA_BENCH" = sortedmap ]; then
  "${JAVA[@]}" org.colors.SortedMapBench "$@"
  exit 0
fi
if [ "$JAVA_BENCH" = map ]; then
  "${JAVA[@]}" org.colors.MapBench "$@"
  exit 0
fi
if [ "$JAVA_BENCH" = tx ]; then
  "${JAVA[@]}" "$AGENT" org.colors.TxBench "$@"
  exit 0
fi
if [ "$JAVA_BENCH" = tree ]; then
  "${JAVA[@]}" "$AGENT" org.colors.TreeBench "$@"
  exit 0
fi
"${JAVA[@]}" "$AGENT" org.colors.FieldBench "$@"
[ "$JAVA_BENCH" = field ] && exit 0
"${JAVA[@]}" "$AGENT" org.colors.TreeBench
"${JAVA[@]}" "$AGENT" org.colors.TreeBench --parts
"${JAVA[@]}" "$AGENT" org.colors.TxBench

# The agent's overhead on code that never touches shared objects: the same plain workload in a JVM
# without and one with the agent (three runs each, alternating; the best of each).
echo "Agent overhead on code that never touches shared objects (JVM without vs with the agent):"
best() { sort -n | head -1; }
{ for _ in 1 2 3; do
    "${JAVA[@]}" org.colors.FieldBench --plain | awk '/^plain-ns/ {print "off", $2}'
    "${JAVA[@]}" "$AGENT" org.colors.FieldBench --plain | awk '/^plain-ns/ {print "on", $2}'
  done; } > "$TMP/plain"
OFF=$(awk '$1=="off" {print $2}' "$TMP/plain" | best)
ON=$(awk '$1=="on" {print $2}' "$TMP/plain" | best)
awk -v off="$OFF" -v on="$ON" 'BEGIN { r = on / off;
  printf "  plain code: %.2f ns/element without, %.2f with the agent: %.3fx (target <= 1.10x: %s)\n",
         off, on, r, (r <= 1.10 ? "met" : "NOT met") }'
