"""Timing of one benchmark cell.

RPC cells time every call on its own and keep the median: the machine has 2 vCPUs shared with the
client, the server and whatever else runs, and a call that lost its CPU in the middle should not
set the cell's value. The private-read floor (sub-microsecond at small sizes, where the timer
would dominate) times rounds of back-to-back calls instead and keeps the median round.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass
class Budget:
    """How long to measure one cell: warm up for warmup_s (at least min_warmup_calls calls), then
    time calls for measure_s (at least min_calls, at most max_calls)."""

    warmup_s: float
    measure_s: float
    min_calls: int = 5
    max_calls: int = 100_000
    min_warmup_calls: int = 2
    rounds: int = 5  # batch mode only


def _warm_up(fn, budget: Budget) -> float:
    """Runs the warm-up; returns the mean seconds per call seen during it."""
    perf = time.perf_counter
    t0 = perf()
    calls = 0
    while calls < budget.min_warmup_calls or perf() - t0 < budget.warmup_s:
        fn()
        calls += 1
    return (perf() - t0) / calls


def time_calls(fn, budget: Budget) -> dict:
    """Per-call timing: median (the cell's value), mean, 10th and 90th percentile, count."""
    _warm_up(fn, budget)
    perf = time.perf_counter
    times = []
    end = perf() + budget.measure_s
    while len(times) < budget.min_calls or (perf() < end and len(times) < budget.max_calls):
        t = perf()
        fn()
        times.append(perf() - t)
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]  # noqa: E731
    return {"per_call_s": statistics.median(times), "mean_s": statistics.fmean(times),
            "p10_s": q(0.10), "p90_s": q(0.90), "calls": len(times)}


def time_batches(fn, budget: Budget) -> dict:
    """Batch timing: `rounds` rounds of k back-to-back calls; median round's seconds per call."""
    per_call = _warm_up(fn, budget)
    k = int(budget.measure_s / budget.rounds / max(per_call, 1e-9))
    k = max(budget.min_calls, min(k, budget.max_calls))
    perf = time.perf_counter
    rounds = []
    for _ in range(budget.rounds):
        t = perf()
        for _ in range(k):
            fn()
        rounds.append((perf() - t) / k)
    return {"per_call_s": statistics.median(rounds), "mean_s": statistics.fmean(rounds),
            "p10_s": min(rounds), "p90_s": max(rounds), "calls": k * budget.rounds}


def keep_best(best: dict, key, t: dict) -> None:
    """Cells are measured in several passes over the matrix; a cell keeps the pass with the lowest
    median (a pass slowed by something else running on the machine loses) and all pass medians."""
    old = best.get(key)
    medians = (old["pass_medians_s"] if old else []) + [t["per_call_s"]]
    if old is None or t["per_call_s"] < old["per_call_s"]:
        best[key] = dict(t)
    best[key]["pass_medians_s"] = medians
