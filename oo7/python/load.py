#!/usr/bin/env python3
"""OO7 loader and checker in Python (SPEC: /work/shared/oo7/SPEC.md).

    python3 oo7/python/load.py [--size small|medium] [--seed N]
        builds the database in the heap of the server COLORS_SOCKET names (or the default one),
        publishes its oo7.Database in the repository oo7.<size>, reads it back and prints
        "oo7 size=... seed=... lang=python", "visits N", "fingerprint H", "visit-order H";
        for (small, 42) checks them against the SPEC (exit 1 on a mismatch). Builds and publishes
        the indexes oo7.<size>.parts_by_id and oo7.<size>.parts_by_date and checks them
        ("indexes ok").
    python3 oo7/python/load.py --check [--size ...] [--seed N]
        builds nothing: reads the database published in oo7.<size> (by any language), prints and
        checks the same lines (--seed names the seed it is expected to have been built from), and
        the published indexes against the database ("indexes ok"; "indexes none" when the
        loader published none; exit 1 naming what is wrong).
    python3 oo7/python/load.py --op t1|t6|t2a|t2b|t2c|q7|q1|q2|q3 [--repeat N] [--check] [--size ...]
        runs an operation N times on the published database (after --check's checks if given);
        each composite part's updates run as one transaction. Prints
        "op NAME result R start T end T seconds S" per run (T: wall clock). --wait-stdin: print
        "ready" and read one line before the first run (lets a test start several processes'
        operations at once). q1|q2|q3 run through the published indexes (Q1 draws its ids from
        --seed + 1) and print "op NAME result (count, sum of x) ...".

PYTHONPATH must contain the colors_shm package (<build>/bindings-python); this script adds its
own directory (for the oo7py package) to sys.path.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import colors_shm as cs  # noqa: E402

from oo7py import build, checks, indexes, models, ops, params, publish, queries  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="small", choices=sorted(params.SIZES))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--check", action="store_true", help="check the published database, build nothing")
    ap.add_argument("--op", choices=ops.NAMES + queries.NAMES, help="run this operation on the published database")
    ap.add_argument("--repeat", type=int, default=1, help="runs of --op (default 1)")
    ap.add_argument("--wait-stdin", action="store_true", help="print 'ready', read a line, then run --op")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.seed < 0 or a.seed >= 1 << 64:
        ap.error("--seed must be an unsigned 64-bit integer")
    if a.wait_stdin and not a.op:
        ap.error("--wait-stdin needs --op")
    return a


def report_and_check(db, size: str, seed: int) -> bool:
    """Prints the contract's lines computed from ``db``; checks them if the SPEC gives values."""
    visits, order = checks.visits_and_order(db)
    fp = checks.fingerprint(db)
    print(f"oo7 size={size} seed={seed} lang=python")
    print(f"visits {visits}")
    print(f"fingerprint {fp}")
    print(f"visit-order {order}", flush=True)
    want = checks.expected(size, seed)
    if want is None:
        return True
    ok = True
    for name, w, got in zip(("visits", "fingerprint", "visit-order"), want, (visits, fp, order)):
        if w != got:
            print(f"oo7: {name} mismatch: expected {w}, found {got}", file=sys.stderr)
            ok = False
    return ok


def check_indexes(db, size: str) -> bool:
    """Prints "indexes ok" if the published indexes index ``db`` exactly ("indexes none" if none is
    published), else what is wrong on stderr."""
    ix = indexes.fetch(size)
    if ix is None:
        print("indexes none", flush=True)
        return True
    wrong = indexes.problems(db, *ix)
    for msg in wrong:
        print(f"oo7: index: {msg}", file=sys.stderr)
    if not wrong:
        print("indexes ok", flush=True)
    return not wrong


def run_query(name: str, size: str, seed: int):
    ix = indexes.fetch(size)
    if ix is None:
        raise LookupError(
            f"repositories {indexes.by_id_repository(size)!r} and {indexes.by_date_repository(size)!r} hold no"
            " index: load the database with a loader that builds them"
        )
    return queries.run(name, *ix, seed, queries.atomic_parts(params.params(size)))


def main(argv=None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if a.check or a.op:
            db = publish.fetch(a.size)
        else:
            t0 = time.perf_counter()
            db = build.build(models.SHARED, params.params(a.size), a.seed)
            print(f"built the database in {time.perf_counter() - t0:.2f} s")
            t0 = time.perf_counter()
            ix = indexes.build_shared(db)
            print(f"built the indexes in {time.perf_counter() - t0:.2f} s")
            # The database and its indexes appear together, in one transaction: a load interrupted
            # between the stores, or another loader's stores between them, left one load's
            # database with another's indexes.
            cs.atomically(lambda: (publish.publish(db, a.size), indexes.publish(*ix, a.size)))
            print(f"published {publish.repository_name(a.size)} and its indexes")
            db = None  # read back what was published, not the builder's proxy
            db = publish.fetch(a.size)
        if not a.op or a.check:
            ok = report_and_check(db, a.size, a.seed)
            if not check_indexes(db, a.size) or not ok:
                return 1
        if a.op:
            if a.wait_stdin:
                print("ready", flush=True)
                sys.stdin.readline()
            sync = models.SHARED.atomic
            for _ in range(a.repeat):
                t0, w0 = time.perf_counter(), time.time()
                if a.op in queries.NAMES:
                    r = run_query(a.op, a.size, a.seed)
                else:
                    r = ops.run(a.op, db, sync)
                t1, w1 = time.perf_counter(), time.time()
                print(f"op {a.op} result {r} start {w0:.6f} end {w1:.6f} seconds {t1 - t0:.3f}", flush=True)
    except (cs.SharedMemoryError, LookupError, TypeError) as e:
        print(f"oo7: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
