#!/usr/bin/env bash
# The main job: a colors-server plus client processes sharing objects (see demo/README.md).
# Run through `make demo`, which builds first and puts colors-server on PATH.
set -euo pipefail
build=${COLORS_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}
demo_bin="$build/demo/employee-demo"
work=$(mktemp -d /tmp/colors-demo.XXXXXX)
export COLORS_SOCKET="$work/demo.sock"
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

colors-server --name "demo-$$" --socket "$COLORS_SOCKET" --heap-size 256M --log-level info >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q "colors-server ready" "$work/server.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.05
done
cat "$work/server.out"

# Java: the audit rpc service (when the Java binding is built); runs until its stdin closes.
audit_jar="$build/demo/colors-demo.jar"
audit_pid=
if [ -f "$audit_jar" ] && command -v java >/dev/null 2>&1; then
  mkfifo "$work/audit.in"
  java -cp "$audit_jar:$build/bindings-java/colors.jar" demo.Audit <"$work/audit.in" &
  audit_pid=$!
  exec 3>"$work/audit.in"  # holding the fifo open keeps the service running
fi

# Python payroll if the Python binding is built (it calls the Java audit service), else the C++ one.
if [ -d "$build/bindings-python/colors_shm" ] && [ -n "$audit_pid" ]; then
  python3 "$(dirname "$0")/../demo/python/payroll.py" &
else
  "$demo_bin" payroll &
fi
payroll_pid=$!
"$demo_bin" hr
wait "$payroll_pid"
if [ -n "$audit_pid" ]; then
  exec 3>&-
  wait "$audit_pid" || true
fi
# OO7 (oo7/README.md): the C++ loader builds the database in this server's heap and publishes it;
# each language then runs T1 (and C++ and Python the range query Q2 through the shared sorted-map
# index) on that one shared database directly, and a short benchmark against
# the same database in its own private objects.
repo=$(cd "$(dirname "$0")/.." && pwd)
echo "--- OO7: one database in the heap, used directly by C++, Python and Java ---"
BUILD_DIR="$build" "$repo/oo7/load" --lang cpp
"$build/oo7/oo7-load" --check --op t1
"$build/oo7/oo7-load" --check --op q2
if [ -d "$build/bindings-python/colors_shm" ]; then
  PYTHONPATH="$build/bindings-python" python3 "$repo/oo7/python/load.py" --check --op t1
  PYTHONPATH="$build/bindings-python" python3 "$repo/oo7/python/load.py" --check --op q2
fi
if [ -n "$audit_pid" ]; then
  BUILD_DIR="$build" bash "$repo/oo7/java/load" --check --op t1
fi
echo "--- OO7 operations and queries: shared database vs the language's private objects (ratio = shared/private) ---"
"$build/oo7/oo7-bench" --rounds 3
if [ -d "$build/bindings-python/colors_shm" ]; then
  PYTHONPATH="$build/bindings-python" python3 "$repo/oo7/python/bench.py" --rounds 3 --socket "$COLORS_SOCKET"
fi
if [ -n "$audit_pid" ]; then
  BUILD_DIR="$build" bash "$repo/oo7/java/bench" --rounds 3
fi
echo "--- server log ---"
cat "$work/server.log"
