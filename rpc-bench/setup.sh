#!/usr/bin/env bash
# Installs and builds what rpc-bench needs; idempotent and quiet (prints nothing when all is there).
#
#   1. PyPI packages into the python3 on PATH: grpcio, grpcio-tools, protobuf, thrift, numpy,
#      matplotlib (only the missing ones);
#   2. Debian thrift-compiler (apt-get only if `thrift` is missing; root or sudo -n, like
#      scripts/bootstrap.sh);
#   3. generated code into build/ (not committed): Python protobuf + gRPC stubs with grpcio-tools'
#      protoc, Java protobuf classes with the protoc that Maven Central publishes for the
#      protobuf-java version in java/pom.xml (grpcio-tools' protoc has no Java generator), Thrift
#      stubs for Python and Java with thrift-compiler;
#   4. the Java servers: `mvn -q -B package` in java/ (writes java/target/classpath.txt).
# Steps 3 and 4 rerun only when their inputs changed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
BUILD="$HERE/build"
mkdir -p "$BUILD"

# ---- 1. Python packages --------------------------------------------------------------------
# One interpreter checks every module (import name -> PyPI name); find_spec does not import.
read -r -a py_missing <<<"$("$PYTHON" - <<'PY'
import importlib.util
wanted = {"grpc": "grpcio", "grpc_tools": "grpcio-tools", "google.protobuf": "protobuf",
          "thrift": "thrift", "numpy": "numpy", "matplotlib": "matplotlib"}
def have(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False
print(" ".join(pkg for mod, pkg in wanted.items() if not have(mod)))
PY
)"
if [ ${#py_missing[@]} -gt 0 ]; then
    echo "rpc-bench/setup.sh: installing Python packages: ${py_missing[*]}"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        "${py_missing[@]}" </dev/null
fi

# ---- 2. Debian packages --------------------------------------------------------------------
deb_missing=()
command -v thrift >/dev/null 2>&1 || deb_missing+=(thrift-compiler)
command -v mvn >/dev/null 2>&1 || deb_missing+=(maven)
command -v javac >/dev/null 2>&1 || deb_missing+=(default-jdk-headless)
if [ ${#deb_missing[@]} -gt 0 ]; then
    echo "rpc-bench/setup.sh: installing Debian packages: ${deb_missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)
    else
        echo "rpc-bench/setup.sh: error: not root and no sudo; install: ${deb_missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -qq </dev/null
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${deb_missing[@]}" </dev/null >/dev/null
fi

# True when $1 (a stamp file) is missing or older than any of the remaining paths' files.
stale() {
    local stamp="$1"; shift
    [ -f "$stamp" ] || return 0
    [ -n "$(find "$@" -type f -newer "$stamp" -print -quit 2>/dev/null)" ]
}

# Maven in java/, its output shown only when it fails.
mvn_quiet() {
    local log="$BUILD/mvn.log"
    if ! (cd "$HERE/java" && mvn -q -B "$@" </dev/null >"$log" 2>&1); then
        cat "$log" >&2
        echo "rpc-bench/setup.sh: mvn $* failed" >&2
        return 1
    fi
}

# ---- 3. generated code ---------------------------------------------------------------------
PB_JAVA="$(sed -n 's:.*<protobuf.version>\(.*\)</protobuf.version>.*:\1:p' "$HERE/java/pom.xml")"
case "$(uname -m)" in
    x86_64) PROTOC_ARCH=linux-x86_64 ;;
    aarch64) PROTOC_ARCH=linux-aarch_64 ;;
    *) echo "rpc-bench/setup.sh: no protoc artifact for $(uname -m)" >&2; exit 1 ;;
esac
PROTOC_JAVA="$BUILD/tools/protoc-$PB_JAVA-$PROTOC_ARCH.exe"
if [ ! -x "$PROTOC_JAVA" ]; then
    mvn_quiet dependency:copy -Dartifact="com.google.protobuf:protoc:$PB_JAVA:exe:$PROTOC_ARCH" \
        -DoutputDirectory="$BUILD/tools"
    chmod +x "$PROTOC_JAVA"
fi

GEN_STAMP="$BUILD/gen.stamp"
if stale "$GEN_STAMP" "$HERE/proto" "$HERE/thrift" "$HERE/setup.sh" "$HERE/java/pom.xml"; then
    rm -rf "$BUILD/gen-py" "$BUILD/gen-java"
    mkdir -p "$BUILD/gen-py" "$BUILD/gen-java"
    "$PYTHON" -m grpc_tools.protoc -I "$HERE/proto" --python_out="$BUILD/gen-py" \
        --grpc_python_out="$BUILD/gen-py" "$HERE/proto/bench.proto"
    "$PROTOC_JAVA" -I "$HERE/proto" --java_out="$BUILD/gen-java" "$HERE/proto/bench.proto"
    thrift --gen py -out "$BUILD/gen-py" "$HERE/thrift/bench.thrift"
    thrift --gen java:generated_annotations=suppress -out "$BUILD/gen-java" "$HERE/thrift/bench.thrift"
    rm -f "$BUILD/gen-py/__init__.py"      # thrift writes one at the output root; not a package
    touch "$GEN_STAMP"
fi

# ---- 4. Java servers -----------------------------------------------------------------------
CP_FILE="$HERE/java/target/classpath.txt"
if stale "$CP_FILE" "$HERE/java/src" "$HERE/java/pom.xml" "$BUILD/gen-java"; then
    mvn_quiet package
    touch "$CP_FILE"
fi

# ---- 5. the colors server and client ---------------------------------------------------------
# java/colors/bench/: the colors server (ColorsMain) and the Java client of the "Java client ->
# Python server" floor (ColorsClientMain). Compiled here with javac, not by Maven: they need the
# colors binding ($BUILD_DIR/bindings-java/colors.jar from the top-level build; BUILD_DIR defaults
# to <repo>/build, relative paths are relative to the repository), which the peers do not.
# Skipped when colors is not built (the colors adapter then reports itself unavailable; --smoke
# fails on the missing client class).
BUILD_DIR_ABS="${BUILD_DIR:-build}"
case "$BUILD_DIR_ABS" in /*) ;; *) BUILD_DIR_ABS="$HERE/../$BUILD_DIR_ABS" ;; esac
COLORS_JAR="$BUILD_DIR_ABS/bindings-java/colors.jar"
COLORS_OUT="$BUILD/colors-classes"
if [ -f "$COLORS_JAR" ] && stale "$COLORS_OUT/.stamp" "$HERE/java/colors" "$COLORS_JAR" "$CP_FILE"; then
    rm -rf "$COLORS_OUT"
    mkdir -p "$COLORS_OUT"
    javac -d "$COLORS_OUT" -cp "$COLORS_JAR:$HERE/java/target/classes" "$HERE"/java/colors/bench/*.java
    touch "$COLORS_OUT/.stamp"
fi
