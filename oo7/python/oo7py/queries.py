"""Q1, Q2, Q3 over the indexes (``indexes.py``), one code for the shared sorted maps and the
private ``dict`` / ``SortedDict``.

* Q1: 10 lookups of ids ``1 + rand(number of atomic parts)`` drawn by SplitMix64(seed + 1):
  (parts found, sum of their ``x``);
* Q2 / Q3: the parts with buildDate in [1000, 1010) (1% of the date range) / [1000, 1100) (10%),
  through the date index's range iteration: (count, sum of ``x``).
"""

from __future__ import annotations

import colors_shm as cs

from .params import SplitMix64

Q1_LOOKUPS = 10
RANGES = {"q2": (1000, 1010), "q3": (1000, 1100)}
NAMES = ("q1", "q2", "q3")


def q1(by_id, seed: int, parts: int) -> tuple[int, int]:
    rng = SplitMix64(seed + 1)
    n = total = 0
    for _ in range(Q1_LOOKUPS):
        part = by_id.get(1 + rng.rand(parts))
        if part is not None:
            n += 1
            total += part.x
    return n, total


def _range_items(by_date, lo, hi):
    """(date, parts) for lo <= date < hi: a SortedDict user's irange then lookups; the shared map
    gives the pairs in one call per 256 entries."""
    if isinstance(by_date, cs.SharedSortedDict):
        return by_date.irange_items(lo, hi, inclusive=(True, False))
    return ((k, by_date[k]) for k in by_date.irange(lo, hi, inclusive=(True, False)))


def date_range(by_date, lo: int, hi: int) -> tuple[int, int]:
    n = total = 0
    for _, same in _range_items(by_date, lo, hi):
        for part in same:
            n += 1
            total += part.x
    return n, total


def run(name: str, by_id, by_date, seed: int, parts: int) -> tuple[int, int]:
    if name == "q1":
        return q1(by_id, seed, parts)
    if name in RANGES:
        return date_range(by_date, *RANGES[name])
    raise ValueError(f"unknown OO7 query {name!r}: use one of {', '.join(NAMES)}")


def atomic_parts(p) -> int:
    """The number of atomic parts of a database of parameters ``p``."""
    return p.num_atomic_per_comp * p.num_comp_per_module
