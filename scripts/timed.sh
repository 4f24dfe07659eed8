#!/usr/bin/env bash
# Runs a command and then prints how long it took, keeping its exit status:
#   scripts/timed.sh LABEL COMMAND [ARGS...]   ->   "time: LABEL 123 s (exit 0)"
# `make test` and `make asan` run each suite through it, so a CI log shows where the time goes.
set -u
label=$1
shift
start=$SECONDS
"$@"
rc=$?
# On a line of its own even after output that did not end one (Maven's -q leaves colour codes).
printf '\ntime: %s %d s (exit %d)\n' "$label" $((SECONDS - start)) "$rc"
exit $rc
