# Shared by oo7/java/load, bench and run-tests.sh (sourced): finds or builds what the Java OO7
# programs need, and sets REPO, BUILD_DIR, COLORS_JAR, AGENT_JAR, COLORS_JNI_LIB, OO7_CLASSES.
#
#   oo7_java_prepare   # builds what is missing: the CMake targets, the agent jar, the classes

OO7_JAVA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$OO7_JAVA/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$REPO/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$REPO/$BUILD_DIR" ;; esac
COLORS_JAR="$BUILD_DIR/bindings-java/colors.jar"
AGENT_JAR="$BUILD_DIR/bindings-java/colors-agent.jar"
export COLORS_JNI_LIB="$BUILD_DIR/bindings-java/libcolors_jni.so"
OO7_CLASSES="$OO7_JAVA/target/classes"

# Runs mvn quietly (Maven 3.8 prints colour codes even with -q -B): its output only if it fails.
oo7_java_mvn() {
    local out
    out="$(mvn -q -B "$@" 2>&1)" || { printf '%s\n' "$out" >&2; oo7_java_fail "mvn $* failed"; }
}

oo7_java_fail() {
    echo "oo7/java: $*" >&2
    exit 1
}

# True when target/classes is missing or older than a source file or the pom.
oo7_java_classes_stale() {
    [ -d "$OO7_CLASSES/oo7" ] || return 0
    local stamp="$OO7_CLASSES/.built"
    [ -f "$stamp" ] || return 0
    [ -n "$(find "$OO7_JAVA/src/main" "$OO7_JAVA/pom.xml" "$COLORS_JAR" -newer "$stamp" -print -quit)" ]
}

oo7_java_prepare() {
    for tool in java mvn; do
        command -v "$tool" >/dev/null 2>&1 || oo7_java_fail "'$tool' not found: install default-jdk-headless and maven (make bootstrap)"
    done
    if [ ! -f "$COLORS_JAR" ] || [ ! -f "$COLORS_JNI_LIB" ] || [ ! -x "$BUILD_DIR/colors-server/colors-server" ]; then
        if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
            cmake -S "$REPO" -B "$BUILD_DIR" >/dev/null
        fi
        cmake --build "$BUILD_DIR" -j"${JOBS:-2}" --target colors-server colors_java >/dev/null
        [ -f "$COLORS_JAR" ] || oo7_java_fail "$COLORS_JAR was not built (no JDK found by CMake? see the configure output)"
    fi
    if [ ! -f "$AGENT_JAR" ]; then
        oo7_java_mvn -f "$REPO/bindings-java/agent/pom.xml" package
        cp "$REPO/bindings-java/agent/target/colors-agent.jar" "$AGENT_JAR"
    fi
    if oo7_java_classes_stale; then
        oo7_java_mvn -f "$OO7_JAVA/pom.xml" -Dcolors.build.dir="$BUILD_DIR" compile
        touch "$OO7_CLASSES/.built"
    fi
}

# Runs a main class of oo7/java with the agent.
oo7_java_run() {
    exec java --enable-native-access=ALL-UNNAMED -javaagent:"$AGENT_JAR" -cp "$COLORS_JAR:$OO7_CLASSES" "$@"
}
