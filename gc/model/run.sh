#!/usr/bin/env bash
# Model-checks the collector's flag and barrier protocol (satb.pml) with spin, then checks that
# the same model does find the lost-object bugs of broken protocols (mutants).
# Two root protocols: sequentially consistent root stores (default), and plain root stores
# through a TSO store buffer with the collector's membarrier after the epoch flip (LIGHT_ROOTS);
# the latter also with root releases that skip the barrier while the collector is not marking
# (LIGHT_ROOTS + IDLE_RELEASE), and then with read scopes (LIGHT_ROOTS + IDLE_RELEASE + READ_SCOPE).
# Usage: gc/model/run.sh [--list | --check NAME] [STEPS [LIGHT_STEPS [SCOPE_STEPS]]]   (mutator steps)
#   --list prints the checks' names, one per line; --check NAME runs that check alone (ctest runs
#   each check as its own test, gc_model_spin.NAME, so they spread over the cores); without either,
#   every check runs in turn.
#   STEPS, default 4: ~22M states, ~20 s.
#   LIGHT_STEPS, default 3: ~7.7M states, ~10 s; with IDLE_RELEASE ~39M states, ~55 s, 2.7 GB
#   (its mutant steps are compound: a new root and a release, in either order). The store buffer
#   multiplies the state space: at 4 steps the LIGHT_ROOTS model has ~98M states (~2.5 min,
#   5.3 GB), too slow for ctest. The IDLE_RELEASE mutants fail only from 3 steps on.
#   SCOPE_STEPS, default 2: ~52M states, ~90 s, 3.3 GB (one scope and two borrowed loads per run,
#   which are not steps; a promotion is one). At 3 steps it does not fit (the IDLE_RELEASE model
#   alone has 39M states there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=all only=
case "${1:-}" in
  --list) mode=list; shift ;;
  --check) mode=one; only=${2:?--check needs a check name}; shift 2 ;;
esac
steps=${1:-4}
light_steps=${2:-3}
scope_steps=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# pan: -O3 -march=native and a 2^26-slot hash table (-w26, 512 MB; the default 2^24 is a third
# of the largest model's 52M states) take the read-scope check from 112 s to 93 s.
# name, expected (pass|fail), sed expression making the mutant ('' for none), mutator steps,
# then spin's -D options. pan_flags (optional, in the environment): more options for pan's build.
found=
check() {
  local name=$1 expect=$2 edit=$3 n=$4
  shift 4
  if [ "$mode" = list ]; then echo "$name"; return 0; fi
  if [ "$mode" = one ] && [ "$name" != "$only" ]; then return 0; fi
  found=1
  mkdir -p "$work/$name"
  sed "$edit" "$here/satb.pml" >"$work/$name/model.pml"
  if [ -n "$edit" ] && cmp -s "$here/satb.pml" "$work/$name/model.pml"; then
    echo "$name: the edit making the mutant matches nothing in satb.pml"; return 1
  fi
  local start=$SECONDS
  (cd "$work/$name" && spin -DSTEPS="$n" "$@" -a model.pml >/dev/null &&
   gcc -O3 -march=native -DSAFETY -DCOLLAPSE ${pan_flags:-} -w -o pan pan.c &&
   ./pan -m10000000 -w26 >out.txt 2>&1) || true
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$name/out.txt")
  local states
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$work/$name/out.txt")
  echo "$name: errors=${errors:-?} states=${states:-?} steps=$n time=$((SECONDS - start))s (expected to $expect)"
  if [ "$expect" = pass ] && [ "$errors" != 0 ]; then cat "$work/$name/out.txt"; return 1; fi
  if [ "$expect" = fail ] && { [ -z "$errors" ] || [ "$errors" = 0 ]; }; then cat "$work/$name/out.txt"; return 1; fi
}

[ "$mode" = list ] || command -v spin >/dev/null ||
  { echo "spin is not installed (scripts/bootstrap.sh installs it)"; exit 1; }
check protocol pass '' "$steps"
check no-store-barrier fail 's/old = slot\[R\[a\]\]; barrier(old) };/old = slot[R[a]] };/' "$steps"
check no-root-barrier fail 's/old = R\[b\]; barrier(old); R\[b\] = slot/old = R[b]; R[b] = slot/; s/old = R\[a\]; barrier(old); root_store(a, NIL)/old = R[a]; root_store(a, NIL)/' "$steps"
check light-roots pass '' "$light_steps" -DLIGHT_ROOTS
check light-roots-no-membarrier fail 's/^\( *\)membarrier();$/\1skip;/' "$light_steps" -DLIGHT_ROOTS
check idle-release pass '' "$light_steps" -DLIGHT_ROOTS -DIDLE_RELEASE
check idle-release-no-membarrier fail 's/^\( *\)membarrier();$/\1skip;/' "$light_steps" -DLIGHT_ROOTS -DIDLE_RELEASE
# The phase set after the flip (still before the membarrier): a release may read the phase
# after the flip and before it is set, skip the barrier, and have its store land after the cut.
check idle-release-marking-after-flip fail 's/^  marking = 1;.*$/  skip;/; s/^  started = 1;$/  started = 1; marking = 1;/' "$light_steps" -DLIGHT_ROOTS -DIDLE_RELEASE
check idle-release-marking-after-root-pass fail 's/^  marking = 1;.*$/  skip;/; s/^  drain(0);$/  drain(0); marking = 1;/' "$light_steps" -DLIGHT_ROOTS -DIDLE_RELEASE
check read-scope pass '' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
# The read-scope mutants' pans try the processes in reverse order (-DREVERSE: the same states, the
# collector's moves after the mutator's), which finds their errors in seconds rather than after
# most of the state space.
# No wait for the scope read active: the sweep frees what the scope borrowed before the cut, whose
# holder's root was dropped without a flag (not marking), and the thread dereferences it.
pan_flags=-DREVERSE check read-scope-no-wait fail 's/^  atomic { !sc_watch || sc_moved -> sc_watch = 0; sc_moved = 0 };$/  skip;/' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
# A promotion that never flags: promoted after the cut while marking, its root store still
# buffered when the root pass reads the slot, the object is freed while rooted.
pan_flags=-DREVERSE check read-scope-no-promote-flag fail 's/-> pending\[bw\[j\]\] = 1/-> skip/g' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
# The scope word read before the membarrier: the entry store, before the cut in program order, is
# still buffered, so the scope is not waited for, though its loads ran before the flip.
pan_flags=-DREVERSE check read-scope-read-before-membarrier fail 's/^  atomic { sc_read = 1; sc_watch = Sc };.*$/  skip;/; s/^\( *\)membarrier();$/\1atomic { sc_read = 1; sc_watch = Sc }; membarrier();/' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
# The pending passes before the wait (then the wait, then the sweep): a promotion's flag set after
# the last pass is lost.
pan_flags=-DREVERSE check read-scope-passes-before-wait fail 's/^  atomic { !sc_watch || sc_moved -> sc_watch = 0; sc_moved = 0 };$/  skip;/; s/^  marking = 0;/  atomic { !sc_watch || sc_moved -> sc_watch = 0; sc_moved = 0 }; marking = 0;/' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
# A promotion that reads the phase before its root store: it reads "not marking" before the flip
# and its root store lands after the cut, after the root pass read the slot.
pan_flags=-DREVERSE check read-scope-promote-reads-phase-first fail 's/atomic { (seq \& 1) \&\& bw\[j\] != NIL \&\& R\[k\] == NIL -> root_store(k, bw\[j\]) }; atomic { m = marking; e = started };/atomic { (seq \& 1) \&\& bw[j] != NIL \&\& R[k] == NIL -> m = marking; e = started }; atomic { root_store(k, bw[j]) };/' "$scope_steps" -DLIGHT_ROOTS -DIDLE_RELEASE -DREAD_SCOPE
if [ "$mode" = one ] && [ -z "$found" ]; then
  echo "no check named '$only' (gc/model/run.sh --list names them)"; exit 1
fi
