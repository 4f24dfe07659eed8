#!/usr/bin/env bash
# Model-checks the collector's flag and barrier protocol (satb.pml) with spin, then checks that
# the same model does find the lost-object bugs of two broken protocols (mutants).
# Usage: gc/model/run.sh [STEPS]   (mutator steps; default 4: ~22M states, ~20 s)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check() {  # name, expected (pass|fail), sed expression making the mutant ('' for none)
  local name=$1 expect=$2 edit=$3
  mkdir -p "$work/$name"
  sed "$edit" "$here/satb.pml" >"$work/$name/model.pml"
  (cd "$work/$name" && spin -DSTEPS="$steps" -a model.pml >/dev/null &&
   gcc -O2 -DSAFETY -DCOLLAPSE -w -o pan pan.c && ./pan -m10000000 >out.txt 2>&1) || true
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$name/out.txt")
  local states
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$work/$name/out.txt")
  echo "$name: errors=${errors:-?} states=${states:-?} (expected to $expect)"
  if [ "$expect" = pass ] && [ "$errors" != 0 ]; then cat "$work/$name/out.txt"; return 1; fi
  if [ "$expect" = fail ] && { [ -z "$errors" ] || [ "$errors" = 0 ]; }; then cat "$work/$name/out.txt"; return 1; fi
}

command -v spin >/dev/null || { echo "spin is not installed (scripts/bootstrap.sh installs it)"; exit 1; }
check protocol pass ''
check no-store-barrier fail 's/old = slot\[R\[a\]\]; barrier(old) };/old = slot[R[a]] };/'
check no-root-barrier fail 's/old = R\[b\]; barrier(old); R\[b\] = slot/old = R[b]; R[b] = slot/; s/old = R\[a\]; barrier(old); R\[a\] = NIL/old = R[a]; R[a] = NIL/'
