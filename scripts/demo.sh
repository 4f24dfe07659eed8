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

colors-server --name "demo-$$" --socket "$COLORS_SOCKET" --heap-size 64M --log-level info >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q "colors-server ready" "$work/server.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.05
done
cat "$work/server.out"

"$demo_bin" payroll &
payroll_pid=$!
"$demo_bin" hr
wait "$payroll_pid"
echo "--- server log ---"
cat "$work/server.log"
