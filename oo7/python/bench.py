#!/usr/bin/env python3
"""OO7 operations in Python: the shared database vs the same database in private objects.

    python3 oo7/python/bench.py [--rounds N] [--size small|medium] [--quick] [--profile OP]

Starts its own colors-server ($COLORS_SERVER_BIN, else $BUILD_DIR/colors-server/colors-server,
else <repo>/build/...; or --socket PATH to use a running one), builds the database of --size from
seed 42 twice in this process, once in private objects (``__dict__`` instances, Python lists) and
once in the shared heap (allocated object by object, as the loader does), checks both against the
SPEC, builds the indexes on each side (shared sorted maps as the loader publishes them; a ``dict``
by id and a ``sortedcontainers.SortedDict`` by date privately), then runs T1, T6, T2b, Q7 and the
queries Q1, Q2, Q3 in interleaved rounds: each round times every operation on both
databases (which goes first alternates), and the table gives the median time of each side and the
median of the per-round ratios shared / private. Operations much shorter than T1 are repeated
within a timing (the "x" column) so each timing lasts milliseconds. T2b on the shared database
runs each composite part visit as one transaction (as the loader's T2b does); the private one calls
the visit directly at the same place.

--profile OP: instead of the table, cProfile OP on the shared database and print the top entries.
--proxy-cache N: the capacity of colors_shm's proxy cache for the run (0 turns it off: every read
of an object no variable holds makes a new proxy).
--breakdown: also time, on both databases, the accesses T1 is made of (a field read that returns an
int, a list, a live or a new object proxy; iterating a list: its fixed cost and its cost per
element whose proxy is live or new) and multiply them by how often T1 does each, to show where the
shared T1's extra time goes.
A benchmark, not a test: nothing is asserted about the timings.
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import statistics
import sys
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tests"))

import colors_shm as cs  # noqa: E402

from oo7py import build, checks, indexes, models, ops, params, queries  # noqa: E402

TARGETS = {"t1": "<= 1.5", "q1": "<= 2", "q2": "<= 2", "q3": "<= 2"}


class Side:
    """One side of the comparison: a database, its model and its indexes (by_id, by_date)."""

    __slots__ = ("db", "model", "ix", "parts")

    def __init__(self, db, model, ix, parts: int):
        self.db, self.model, self.ix, self.parts = db, model, ix, parts


def _query(name):
    return lambda side: queries.run(name, *side.ix, 42, side.parts)


# op -> (callable(side), repetitions per timing)
OPS = {
    "t1": (lambda side: ops.t1(side.db), 1),
    "t6": (lambda side: ops.t6(side.db), 40),
    "t2b": (lambda side: ops.t2b(side.db, side.model.atomic), 1),
    "q7": (lambda side: ops.q7(side.db), 10),
    "q1": (_query("q1"), 2000),
    "q2": (_query("q2"), 200),
    "q3": (_query("q3"), 20),
}


def timed(op: str, side: Side) -> float:
    fn, reps = OPS[op]
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(side)
    return (time.perf_counter() - t0) / reps


def timed_scoped(op: str, side: Side) -> float:
    """timed(), each run inside a read scope of its own (proxies read in it take no root)."""
    fn, reps = OPS[op]
    t0 = time.perf_counter()
    for _ in range(reps):
        with cs.read_scope():
            fn(side)
    return (time.perf_counter() - t0) / reps


def read_only(op: str) -> bool:
    """Whether op only reads (a read scope refuses transactions)."""
    return not op.startswith("t2")


def check(db, size: str) -> None:
    want = checks.expected(size, 42)
    got = (*checks.visits_and_order(db), checks.fingerprint(db))
    if want is not None and got != (want[0], want[2], want[1]):
        sys.exit(f"bench: database does not match the SPEC: {got} vs {want}")


def table(side_p: Side, side_s: Side, rounds: int) -> None:
    times = {op: ([], [], []) for op in OPS}  # private, shared, ratio
    scoped = {op: ([], []) for op in OPS if read_only(op)}  # shared in a read scope, its ratio
    for op in OPS:  # warm-up: proxies' classes, code paths
        timed(op, side_p)
        timed(op, side_s)
        if read_only(op):
            timed_scoped(op, side_s)
    for r in range(rounds):
        for op in OPS:
            gc.collect()
            if r % 2:
                ts = timed(op, side_s)
                tp = timed(op, side_p)
            else:
                tp = timed(op, side_p)
                ts = timed(op, side_s)
            p, s, q = times[op]
            p.append(tp)
            s.append(ts)
            q.append(ts / tp)
            if read_only(op):
                tsc = timed_scoped(op, side_s)
                scoped[op][0].append(tsc)
                scoped[op][1].append(tsc / tp)
    print(f"{'op':<5} {'x':>4} {'private ms':>11} {'shared ms':>10} {'ratio':>6} {'target':>7}"
          f" {'scoped ms':>10} {'ratio':>6}")
    for op, (p, s, q) in times.items():
        extra = ""
        if op in scoped:
            extra = f" {statistics.median(scoped[op][0]) * 1e3:>10.3f} {statistics.median(scoped[op][1]):>6.2f}"
        print(f"{op:<5} {OPS[op][1]:>4} {statistics.median(p) * 1e3:>11.3f} {statistics.median(s) * 1e3:>10.3f}"
              f" {statistics.median(q):>6.2f} {TARGETS.get(op, '-'):>7}{extra}")
    print(f"(median of {rounds} interleaved rounds; ratio = median of per-round shared/private;")
    print(" scoped: each shared run inside colors_shm.read_scope(), its ratio to the same round's private run)")


def _ns(stmt: str, env: dict, number: int = 20000, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, globals=env, number=number, repeat=repeat)) / number * 1e9


def _access_costs(db) -> dict[str, float]:
    """ns per access kind on ``db``. What ``env`` names is held (its proxy live); the "new proxy"
    accesses reach objects whose proxies nothing holds, so each access makes and drops one."""
    cp = db.composites[11]
    part = cp.rootPart  # held: conn.from_ reads a live proxy
    conn = part.to[0]  # conn.to is parts[1], held by nothing
    live_list = db.composites[12].rootPart.to
    live_elements = list(live_list)  # noqa: F841  (keeps the elements' proxies live)
    env = dict(part=part, conn=conn, live_list=live_list, fresh_list=db.composites[13].rootPart.to,
               empty=cs.allocate(list) if cs.is_shared(db) else [])
    c = {
        "int field (part.x)": _ns("part.x", env),
        "list field (part.to), dropped": _ns("part.to", env),
        "object field, live proxy (conn.from_)": _ns("conn.from_", env),
        "object field, new proxy (conn.to)": _ns("conn.to", env),
        "iterate an empty list (fixed cost)": _ns("for e in empty: pass", env),
    }
    fixed = c["iterate an empty list (fixed cost)"]
    c["list element, live proxy"] = (_ns("for e in live_list: pass", env) - fixed) / 3
    c["list element, new proxy"] = (_ns("for e in fresh_list: pass", env) - fixed) / 3
    return c


def t1_counts(db) -> dict[str, int]:
    """How often one T1 over ``db`` does each access kind of _access_costs."""
    visits = ops.t1(db)
    complex_ = [a for a in db.assemblies if isinstance(a, ops.ComplexAssembly)]
    base = [a for a in db.assemblies if not isinstance(a, ops.ComplexAssembly)]
    comps = sum(len(a.components) for a in base)  # composite part visits, one rootPart read each
    lists = visits + len(complex_) + len(base)  # every part's `to`, subAssemblies, components
    return {
        "int field (part.x)": 0,
        "list field (part.to), dropped": lists,
        "iterate an empty list (fixed cost)": lists,
        # Connections, sub-assemblies and components are reached only through their lists, and
        # no proxy of them is alive at that moment: each element makes a new proxy.
        "list element, new proxy": 3 * visits + 3 * len(complex_) + comps,
        "list element, live proxy": 0,
        # conn.to makes a new proxy when it first reaches a part (every visited part but the
        # roots); later reaches find it live in the visited set. rootPart and designRoot: new.
        "object field, new proxy (conn.to)": (visits - comps) + comps + 1,
        "object field, live proxy (conn.from_)": 3 * visits - (visits - comps),
    }


def breakdown(db_p, db_s) -> None:
    counts = t1_counts(db_p)
    cp_, cs_ = _access_costs(db_p), _access_costs(db_s)
    print("\nwhere a shared T1 spends its extra time (ns per access measured here, x count per T1):")
    print(f"{'access':<40} {'private':>8} {'shared':>8} {'count':>8} {'extra ms':>9}")
    total = 0.0
    for k in cs_:
        n = counts[k]
        extra = (cs_[k] - cp_[k]) * n / 1e6
        total += extra
        print(f"{k:<40} {cp_[k]:>8.1f} {cs_[k]:>8.1f} {n:>8} {extra:>9.1f}")
    print(f"{'sum (compare: shared - private T1 above)':<40} {'':>8} {'':>8} {'':>8} {total:>9.1f}")


def profile(side_s: Side, op: str) -> None:
    import cProfile
    import pstats

    timed(op, side_s)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(5):
        timed(op, side_s)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="small", choices=sorted(params.SIZES))
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--quick", action="store_true", help="5 rounds")
    ap.add_argument("--socket", help="use the running server at this socket instead of starting one")
    ap.add_argument("--profile", choices=sorted(OPS), help="cProfile this operation on the shared database")
    ap.add_argument("--breakdown", action="store_true", help="also time the accesses T1 is made of")
    ap.add_argument("--proxy-cache", type=int, metavar="N",
                    help="capacity of colors_shm's proxy cache for the run (0: off; default: the binding's)")
    a = ap.parse_args()
    rounds = 5 if a.quick else a.rounds
    srv = None
    if a.socket:
        cs.attach(a.socket)
    else:
        from oo7_harness import Server

        srv = Server(heap="1G" if a.size == "medium" else "256M")
        cs.attach(srv.socket)
    try:
        if a.proxy_cache is not None:
            cs.proxy_cache(a.proxy_cache)
        print(f"proxy cache capacity {cs.proxy_cache()}")
        p = params.params(a.size)
        t0 = time.perf_counter()
        db_p = build.build(models.PRIVATE, p, 42)
        t1 = time.perf_counter()
        db_s = build.build(models.SHARED, p, 42)
        t2 = time.perf_counter()
        print(f"oo7 {a.size} seed 42: built private in {t1 - t0:.2f} s, shared in {t2 - t1:.2f} s")
        check(db_p, a.size)
        check(db_s, a.size)
        n = queries.atomic_parts(p)
        side_p = Side(db_p, models.PRIVATE, indexes.build_private(db_p), n)
        side_s = Side(db_s, models.SHARED, indexes.build_shared(db_s), n)
        for q in queries.NAMES:
            if OPS[q][0](side_p) != OPS[q][0](side_s):
                sys.exit(f"bench: {q} differs between the shared and the private indexes")
        if a.profile:
            profile(side_s, a.profile)
        else:
            table(side_p, side_s, rounds)
            if a.breakdown:
                breakdown(db_p, db_s)
    finally:
        cs.detach()
        if srv is not None:
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
