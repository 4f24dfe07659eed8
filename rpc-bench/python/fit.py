"""time = latency + size / throughput, by least squares (section 6.2 of the paper).

As in the paper, the reported latency is the measured time per call at size 1 (the line's
intercept is kept too: time(size) is not quite linear at small sizes), and the throughput is the
inverse of the fitted slope, in elements per millisecond.
"""

from __future__ import annotations

import numpy as np


def fit_cells(cells: list[dict]) -> dict:
    """cells: [{"n", "per_call_s"}, ...] of one framework, kind and variant."""
    cells = sorted(cells, key=lambda c: c["n"])
    xs = np.array([c["n"] for c in cells], dtype=float)
    ys = np.array([c["per_call_s"] for c in cells], dtype=float)
    out = {"sizes": [int(x) for x in xs]}
    at_one = [c["per_call_s"] for c in cells if c["n"] == 1]
    out["latency_us"] = at_one[0] * 1e6 if at_one else None
    if len(xs) >= 2 and xs.min() != xs.max():
        slope, intercept = np.polyfit(xs, ys, 1)
        out["intercept_us"] = float(intercept) * 1e6
        out["slope_us_per_element"] = float(slope) * 1e6
        out["throughput_per_ms"] = 1.0 / (float(slope) * 1e3) if slope > 0 else None
        if out["latency_us"] is None:
            out["latency_us"] = out["intercept_us"]
    else:
        out["intercept_us"] = out["slope_us_per_element"] = out["throughput_per_ms"] = None
    return out


def fit_all(cells: list[dict]) -> dict:
    """{framework: {variant: {kind: fit}}} over all cells."""
    groups: dict = {}
    for c in cells:
        groups.setdefault(c["framework"], {}).setdefault(c["variant"], {}).setdefault(
            c["kind"], []).append(c)
    return {fw: {var: {kind: fit_cells(cs) for kind, cs in kinds.items()}
                 for var, kinds in variants.items()}
            for fw, variants in groups.items()}
