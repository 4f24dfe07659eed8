"""Benchmark of the shared sorted map (SharedSortedDict) against sortedcontainers.SortedDict
(or, when that is not installed, a dict plus a sorted key list searched with bisect).

10,000 integer keys (0, 3, 6, ...), values are the keys. Per round, in one process, interleaved:
  * point lookup: d[k] for 1,000 random present keys;
  * 1% range: the keys of a random range of 100 keys (list(d.irange(lo, hi)));
  * 10% range: the same with 1,000 keys;
  * 1% range items: (key, value) pairs of a 1% range (shared: irange_items; baseline: irange then
    d[k] per key, what SortedDict offers).
Prints the median over rounds of the per-round ratio shared / baseline (lower is better; the
issue's target is <= 2). Starts its own colors-server like the tests ($COLORS_SERVER_BIN or
build/colors-server). `--quick`: fewer rounds.
"""

from __future__ import annotations

import argparse
import bisect
import pathlib
import random
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import Server  # noqa: E402  (the tests' server launcher)

N = 10_000


class DictBisect:
    """The baseline without sortedcontainers: a dict and a sorted key list."""

    def __init__(self, items):
        self.d = dict(items)
        self.keys = sorted(self.d)

    def __getitem__(self, k):
        return self.d[k]

    def irange(self, lo, hi):
        i = bisect.bisect_left(self.keys, lo)
        j = bisect.bisect_right(self.keys, hi)
        return iter(self.keys[i:j])


def timed(fn) -> float:
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=0)
    args = ap.parse_args()
    rounds = args.rounds or (7 if args.quick else 21)

    srv = Server(heap="256M")
    import os

    os.environ["COLORS_SOCKET"] = srv.socket
    import colors_shm as cs

    try:
        from sortedcontainers import SortedDict

        base_name = "sortedcontainers.SortedDict"
        base = SortedDict((k * 3, k * 3) for k in range(N))
    except ImportError:
        base_name = "dict + bisect"
        base = DictBisect((k * 3, k * 3) for k in range(N))
    shared = cs.allocate(cs.SharedSortedDict)
    for k in range(N):
        shared[k * 3] = k * 3

    rng = random.Random(1)
    ratios: dict[str, list[float]] = {"point lookup": [], "1% range": [], "10% range": [], "1% range items": []}
    ns_shared: dict[str, list[float]] = {k: [] for k in ratios}

    def lookups(d, keys):
        for k in keys:
            d[k]

    def scan(d, bounds):
        for lo, hi in bounds:
            list(d.irange(lo, hi))

    def scan_items_base(d, bounds):
        for lo, hi in bounds:
            [(k, d[k]) for k in d.irange(lo, hi)]

    def scan_items_shared(d, bounds):
        for lo, hi in bounds:
            list(d.irange_items(lo, hi))

    for _ in range(rounds):
        keys = [rng.randrange(N) * 3 for _ in range(1000)]
        b1 = [(lo * 3, (lo + 99) * 3) for lo in (rng.randrange(N - 100) for _ in range(100))]
        b10 = [(lo * 3, (lo + 999) * 3) for lo in (rng.randrange(N - 1000) for _ in range(20))]
        cases = {
            "point lookup": (lambda d: lookups(d, keys), lambda d: lookups(d, keys), 1000),
            "1% range": (lambda d: scan(d, b1), lambda d: scan(d, b1), 100),
            "10% range": (lambda d: scan(d, b10), lambda d: scan(d, b10), 20),
            "1% range items": (lambda d: scan_items_base(d, b1), lambda d: scan_items_shared(d, b1), 100),
        }
        for name, (fb, fs, ops) in cases.items():
            tb = timed(lambda: fb(base))
            ts = timed(lambda: fs(shared))
            ratios[name].append(ts / tb)
            ns_shared[name].append(ts / ops)

    print(f"shared sorted map vs {base_name}: {N} integer keys, median of {rounds} rounds")
    print(f"  {'operation':<18}{'shared ns/op':>14}{'ratio':>8}   target")
    for name in ratios:
        print(f"  {name:<18}{statistics.median(ns_shared[name]):>14.0f}{statistics.median(ratios[name]):>8.2f}   <= 2")
    cs.detach()
    srv.stop()


if __name__ == "__main__":
    main()
