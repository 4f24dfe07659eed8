#!/usr/bin/env bash
# Builds what Figure 6-1 needs (idempotent; quiet when everything is there):
#
#   1. rpc-bench's setup (rpc-bench/setup.sh): the PyPI packages (grpcio, grpcio-tools, protobuf,
#      matplotlib, ...), the protoc that Maven Central publishes for rpc-bench's protobuf-java,
#      and rpc-bench's Maven project, whose target/classpath.txt lists the gRPC and protobuf jars
#      the Java server runs with;
#   2. the Java OO7 classes, the colors jar and agent (oo7/java/lib.sh);
#   3. from proto/oo7.proto: Python messages and gRPC stubs (grpcio-tools' protoc) into
#      build/gen-py, Java messages (rpc-bench's protoc) into build/gen-java;
#   4. the server classes (javac) into build/classes, and build/server-classpath.txt (the
#      classpath the server runs with).
#
# BUILD_DIR names the CMake build (default <repo>/build). Steps 3 and 4 rerun when their
# inputs changed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
. "$HERE/../java/lib.sh"          # REPO, BUILD_DIR, COLORS_JAR, AGENT_JAR, OO7_CLASSES, oo7_java_prepare
export BUILD_DIR
OUT="$HERE/build"
mkdir -p "$OUT"

bash "$REPO/rpc-bench/setup.sh"
oo7_java_prepare

RPCB="$REPO/rpc-bench"
RPCB_CP="$RPCB/java/target/classpath.txt"
PROTOC_JAVA="$(ls "$RPCB"/build/tools/protoc-*.exe 2>/dev/null | head -n 1)"
[ -x "$PROTOC_JAVA" ] || { echo "oo7/fig61/setup.sh: rpc-bench's protoc is missing (rpc-bench/setup.sh failed?)" >&2; exit 1; }
[ -f "$RPCB_CP" ] || { echo "oo7/fig61/setup.sh: $RPCB_CP is missing (rpc-bench/setup.sh failed?)" >&2; exit 1; }

stale() {
    local stamp="$1"; shift
    [ -f "$stamp" ] || return 0
    [ -n "$(find "$@" -type f -newer "$stamp" -print -quit 2>/dev/null)" ]
}

if stale "$OUT/gen.stamp" "$HERE/proto" "$HERE/setup.sh" "$PROTOC_JAVA"; then
    rm -rf "$OUT/gen-py" "$OUT/gen-java"
    mkdir -p "$OUT/gen-py" "$OUT/gen-java"
    "$PYTHON" -m grpc_tools.protoc -I "$HERE/proto" --python_out="$OUT/gen-py" \
        --grpc_python_out="$OUT/gen-py" "$HERE/proto/oo7.proto"
    "$PROTOC_JAVA" -I "$HERE/proto" --java_out="$OUT/gen-java" "$HERE/proto/oo7.proto"
    touch "$OUT/gen.stamp"
fi

CP="$COLORS_JAR:$OO7_CLASSES:$(cat "$RPCB_CP")"
if stale "$OUT/classes/.stamp" "$HERE/java" "$OUT/gen-java" "$COLORS_JAR" "$OO7_CLASSES" "$RPCB_CP"; then
    rm -rf "$OUT/classes"
    mkdir -p "$OUT/classes"
    javac -nowarn -d "$OUT/classes" -cp "$CP" $(find "$HERE/java" "$OUT/gen-java" -name '*.java')
    touch "$OUT/classes/.stamp"
fi
printf '%s\n' "$OUT/classes:$CP" >"$OUT/server-classpath.txt"
printf '%s\n' "$AGENT_JAR" >"$OUT/agent-jar.txt"
