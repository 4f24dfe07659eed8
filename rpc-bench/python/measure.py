"""Timing of one benchmark cell: warm up, then time rounds of back-to-back calls."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass
class Budget:
    """How long to measure one cell. Seconds are targets; the call counts are minimums."""

    warmup_s: float
    measure_s: float
    rounds: int
    min_warmup_calls: int = 2
    min_calls_per_round: int = 1
    max_calls_per_round: int = 1_000_000


def time_cell(fn, budget: Budget) -> dict:
    """Runs fn() repeatedly; returns per-call seconds over `rounds` rounds (each round times k
    back-to-back calls and divides by k): median (the cell's value), mean, min, max, and the
    number of timed calls."""
    perf = time.perf_counter
    t0 = perf()
    calls = 0
    while calls < budget.min_warmup_calls or perf() - t0 < budget.warmup_s:
        fn()
        calls += 1
    per_call = (perf() - t0) / calls
    k = int(budget.measure_s / budget.rounds / max(per_call, 1e-9))
    k = max(budget.min_calls_per_round, min(k, budget.max_calls_per_round))
    rounds = []
    for _ in range(budget.rounds):
        t = perf()
        for _ in range(k):
            fn()
        rounds.append((perf() - t) / k)
    return {
        "per_call_s": statistics.median(rounds),
        "mean_s": statistics.fmean(rounds),
        "min_s": min(rounds),
        "max_s": max(rounds),
        "calls": k * budget.rounds,
        "rounds": budget.rounds,
    }
