#!/usr/bin/env bash
# <build>/env.sh gives a shell everything a user of the built tree needs: colors-server on PATH,
# the Python package on PYTHONPATH, and for Java colors.jar on CLASSPATH (javac finds org.colors),
# the JNI library and the agent jar.
#   test_env_sh.sh <build dir>
set -euo pipefail
BUILD="$1"
# shellcheck disable=SC1091
. "$BUILD/env.sh"
command -v colors-server >/dev/null || { echo "colors-server is not on PATH"; exit 1; }
python3 -c "import colors_shm" || { echo "colors_shm is not importable"; exit 1; }
[ -f "$COLORS_JNI_LIB" ] || { echo "COLORS_JNI_LIB=$COLORS_JNI_LIB is not a file"; exit 1; }
[ -f "$COLORS_AGENT_JAR" ] || { echo "COLORS_AGENT_JAR=$COLORS_AGENT_JAR is not a file"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/UsesColors.java" <<'JAVA'
import org.colors.SharedMemory;
public class UsesColors {
  public static void main(String[] args) { System.out.println(SharedMemory.isAttached()); }
}
JAVA
javac -d "$tmp" "$tmp/UsesColors.java" || { echo "javac cannot compile against CLASSPATH=$CLASSPATH"; exit 1; }
echo "env.sh: PATH, PYTHONPATH, CLASSPATH, COLORS_JNI_LIB and COLORS_AGENT_JAR work"
