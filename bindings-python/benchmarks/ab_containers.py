"""Compares the uncontended container operations of two builds (A = before, B = after a change).

    python3 ab_containers.py BUILD_A BUILD_B [--rounds 9] [--quick]

Each BUILD is a CMake build directory holding bindings-python/ (the package) and
colors-server/colors-server. The rounds alternate A, B, A, B, ...; each round runs
`bench.py --containers --json` in a fresh process against that build's own server (the two builds'
segment layouts may differ). Prints, per operation, the median over rounds of B's shared ns / A's
shared ns within the same round pair, and the same for the private baseline (which should be ~1.0:
it shows how much the machine drifted between A and B).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def one_round(build: pathlib.Path, quick: bool) -> dict[str, list[float]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(build / "bindings-python")
    env["COLORS_SERVER_BIN"] = str(build / "colors-server" / "colors-server")
    args = [sys.executable, str(HERE / "bench.py"), "--containers", "--json"] + (["--quick"] if quick else [])
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=pathlib.Path)
    ap.add_argument("b", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    shared: dict[str, list[float]] = {}
    private: dict[str, list[float]] = {}
    abs_a: dict[str, list[float]] = {}
    abs_b: dict[str, list[float]] = {}
    for r in range(args.rounds):
        ra = one_round(args.a.resolve(), args.quick)
        rb = one_round(args.b.resolve(), args.quick)
        for label in ra:
            shared.setdefault(label, []).append(rb[label][1] / ra[label][1])
            private.setdefault(label, []).append(rb[label][0] / ra[label][0])
            abs_a.setdefault(label, []).append(ra[label][1])
            abs_b.setdefault(label, []).append(rb[label][1])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"B/A over {args.rounds} interleaved rounds (median of per-round ratios)")
    print(f"  {'operation':<16}{'A shared ns':>12}{'B shared ns':>12}{'B/A shared':>12}{'B/A private':>13}")
    for label in shared:
        print(f"  {label:<16}{statistics.median(abs_a[label]):>12.1f}{statistics.median(abs_b[label]):>12.1f}"
              f"{statistics.median(shared[label]):>12.2f}{statistics.median(private[label]):>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
