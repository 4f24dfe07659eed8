"""Figure 6-1, today: the driver of ``oo7/run``.

    python3 -m fig61.main [--quick] [--out DIR] [--size small] [--seed 42]

Starts a private colors-server and the Java server (which builds OO7 into its shared objects and
serves it over colors rpc and gRPC), attaches this process to the same heap, and runs T1 in every
way a Python client can reach the database (the rows of ROWS), in interleaved rounds: a checked
warm-up round, then timed rounds (median time per row). Every row's visits and visit order must
equal the direct row's, and every remote row's request and call counts must equal what the
direct traversal computes; anything else stops the run with exit 1. Prints the table and the cost
model (costmodel.py) and writes results.json, table.md and fig61.png to the output directory
(default oo7/results/<UTC time>/, ignored by git).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import pathlib
import statistics
import sys
import time

from . import aggregate, costmodel, handles, report, servers, traversal
from .access import AggregatedAccess, ColorsAccess, DirectAccess, GrpcAccess

FIG61 = servers.FIG61
OO7_PY = FIG61.parent / "python"
sys.path.insert(0, str(OO7_PY))                 # oo7py
sys.path.insert(0, str(FIG61 / "build" / "gen-py"))  # oo7_pb2, oo7_pb2_grpc (setup.sh)

ENDPOINT = "oo7.fig61"

# key, label, transport (for C), timed rounds in full / quick mode (None: skipped)
ROWS = [
    ("direct", "direct (shared heap)", None, 7, 3),
    ("colors", "colors rpc, per access", "colors", 3, 1),
    ("aggregated", "colors rpc, aggregated", "colors", 3, 1),
    ("colors_batched", "colors rpc, batched by hand", "colors", 5, 3),
    ("grpc", "gRPC, per access", "grpc", 1, None),
    ("grpc_batched", "gRPC, batched by hand", "grpc", 3, 1),
]


class CheckFailed(Exception):
    pass


def fold_visit():
    from oo7py.checks import Fold

    f = Fold()
    return f, f.int


class Client:
    """This process's ends of the connections, and each row's T1."""

    def __init__(self, java: servers.JavaServer, size: str):
        import colors_shm
        import grpc
        from colors_shm import rpc
        from oo7py import publish, schema

        import oo7_pb2
        import oo7_pb2_grpc

        self.db = publish.fetch(size)
        self.complex_cls = schema.ComplexAssembly
        self.rpc = rpc.connect(ENDPOINT, timeout=60)
        self.module = self.rpc.module()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{java.port}")
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.stub = oo7_pb2_grpc.Oo7Stub(self.channel)
        self.pb = oo7_pb2
        self.colors_acc = ColorsAccess(self.rpc)
        self.grpc_acc = GrpcAccess(self.stub, oo7_pb2)
        self.plan_transport = aggregate.ColorsPlanTransport(self.rpc)
        self._colors_shm = colors_shm
        self.last_agg = None

    def close(self):
        self.channel.close()

    # ---- the rows: each returns (visits, visit order) --------------------------------------------

    def direct(self):
        from oo7py import ops

        f, fi = fold_visit()
        n = ops.t1(self.db, lambda part: fi(part.id))
        return n, f.hex()

    def colors(self):
        f, fi = fold_visit()
        return traversal.t1(self.colors_acc, self.module, fi), f.hex()

    def aggregated(self):
        f, fi = fold_visit()
        agg = aggregate.Aggregator(self.plan_transport)
        n = traversal.t1(AggregatedAccess(agg), agg.ref(self.module), fi)
        self.last_agg = agg
        return n, f.hex()

    def colors_batched(self):
        f, fi = fold_visit()
        return traversal.t1_batched(self.colors_acc, self.module, fi), f.hex()

    def grpc(self):
        f, fi = fold_visit()
        return traversal.t1(self.grpc_acc, self.module, fi), f.hex()

    def grpc_batched(self):
        f, fi = fold_visit()
        return traversal.t1_batched(self.grpc_acc, self.module, fi), f.hex()

    # ---- counts and baselines -------------------------------------------------------------------

    def direct_counts(self):
        """T1 over the shared objects through DirectAccess: visits, order, and the accesses of
        each kind (what the per-access rows must send)."""
        counter = _CountingDirect(self.complex_cls)
        f, fi = fold_visit()
        n = traversal.t1(counter, self.db.module, fi)
        return n, f.hex(), counter.counts

    def stats(self):
        return list(self.rpc.stats())

    def reset_stats(self):
        self.rpc.resetStats()

    def ping_colors(self, n: int) -> float:
        ping = self.rpc.ping
        t = time.perf_counter()
        for i in range(n):
            ping(i)
        return (time.perf_counter() - t) / n

    def ping_grpc(self, n: int) -> float:
        ping, ref = self.stub.Ping, self.pb.Ref
        t = time.perf_counter()
        for i in range(n):
            ping(ref(h=i))
        return (time.perf_counter() - t) / n


class _CountingDirect(DirectAccess):
    """DirectAccess counting each kind of access."""

    def __init__(self, complex_cls):
        super().__init__(complex_cls)
        self.counts = dict.fromkeys(("designRoot", "subAssemblies", "components", "rootPart", "outgoing", "target"), 0)
        c = self.counts
        base = DirectAccess

        def counted(name, fn):
            def f(x):
                c[name] += 1
                return fn(self, x)
            return f

        self.design_root = counted("designRoot", base.design_root)
        self.sub_assemblies = counted("subAssemblies", base.sub_assemblies)
        self.components = counted("components", base.components)
        self.root_part = counted("rootPart", base.root_part)
        self.outgoing = counted("outgoing", base.outgoing)
        self.target = counted("target", base.target)


class PrivateT1:
    """R_C's measurement: T1 over the private Python copy (oo7py's __dict__ objects), built once."""

    def __init__(self, size: str, seed: int):
        from oo7py import build, models, params

        self.db = build.build(models.PRIVATE, params.params(size), seed)

    def run(self) -> tuple[float, int, str]:
        from oo7py import ops

        f, fi = fold_visit()
        gc.collect()
        t = time.perf_counter()
        n = ops.t1(self.db, lambda part: fi(part.id))
        return time.perf_counter() - t, n, f.hex()


def expected_counts(counts: dict) -> dict:
    """(requests, calls) the server must count for each row (none for the direct row; None: any),
    from the direct traversal's access counts."""
    per_access = sum(counts.values())
    tree = counts["designRoot"] + counts["subAssemblies"] + counts["components"]
    batched = tree + counts["rootPart"]  # one composite call per composite part visit
    return {"direct": (0, 0), "colors": (per_access, per_access), "aggregated": (None, per_access),
            "colors_batched": (batched, batched), "grpc": (per_access, per_access),
            "grpc_batched": (batched, batched)}


def run(args) -> int:
    import colors_shm
    from oo7py import checks

    mode = "quick" if args.quick else "full"
    started = datetime.datetime.now(datetime.timezone.utc)
    out = pathlib.Path(args.out) if args.out else FIG61.parent / "results" / started.strftime("%Y-%m-%dT%H-%M-%SZ")
    rows = [(k, label, tr, full if mode == "full" else quick) for k, label, tr, full, quick in ROWS]
    for k, label, _, r in rows:
        if r is None:
            print(f"fig61: --quick skips the row '{label}' (about 35 s or more; run oo7/run for it)")
    rows = [r for r in rows if r[3] is not None]

    cs = servers.ColorsServer()
    java = None
    client = None
    try:
        java = servers.JavaServer(cs.socket, ENDPOINT, args.size, args.seed)
        print(f"fig61: Java server built OO7 {args.size} seed {args.seed}: " +
              ", ".join(f"{k} {v}" for k, v in java.checks.items()))
        colors_shm.attach(cs.socket)
        client = Client(java, args.size)

        n, order, counts = client.direct_counts()
        spec = checks.expected(args.size, args.seed)
        if spec is not None and (n, order) != (spec[0], spec[2]):
            raise CheckFailed(f"direct T1 gives visits {n} order {order}; the SPEC says {spec[0]} {spec[2]}")
        if java.checks.get("visits") != str(n) or java.checks.get("visit-order") != order:
            raise CheckFailed(f"the Java server's T1 ({java.checks}) differs from this client's ({n}, {order})")
        accesses = sum(counts.values())
        if args.size == "small" and args.seed == 42 and accesses != 178241:
            raise CheckFailed(f"T1 makes {accesses} object accesses; the SPEC says 178,241 for seed 42 small")
        print(f"fig61: T1 visits {n}, visit order {order}, {accesses:,} object accesses "
              f"({', '.join(f'{k} {v:,}' for k, v in counts.items())})")
        want = expected_counts(counts)

        private = PrivateT1(args.size, args.seed)
        ping_n = (20000, 2000) if mode == "full" else (5000, 500)
        base = {"R_C": [], "colors": [], "grpc": []}  # the cost model's baselines, one per round

        results = {k: {"key": k, "label": label, "transport": tr, "times": [], "requests": [], "calls": [],
                       "server_s": []} for k, label, tr, _ in rows}
        max_rounds = max(r for *_, r in rows)
        for rnd in range(max_rounds + 1):  # round 0: warm-up (checked, untimed)
            # The baselines run in every round too, so they see the same machine as the rows.
            t_private, pn, porder = private.run()
            if (pn, porder) != (n, order):
                raise CheckFailed(f"the private copy's T1 gives ({pn}, {porder}), the shared one ({n}, {order})")
            c_colors, c_grpc = client.ping_colors(ping_n[0]), client.ping_grpc(ping_n[1])
            if rnd > 0:
                base["R_C"].append(t_private)
                base["colors"].append(c_colors)
                base["grpc"].append(c_grpc)
            for k, label, tr, reps in rows:
                if rnd > reps:
                    continue
                if rnd == 0 and k == "grpc":
                    _warm_grpc(client)
                    continue
                fn = getattr(client, k)
                client.reset_stats()
                gc.collect()
                t = time.perf_counter()
                got = fn()
                dt = time.perf_counter() - t
                req, calls, nanos = client.stats()
                if got != (n, order):
                    raise CheckFailed(f"row '{label}' gives visits {got[0]} order {got[1]}; direct gives {n} {order}")
                w_req, w_calls = want[k]
                if k == "aggregated":
                    agg = client.last_agg
                    if (agg.round_trips, agg.calls) != (req, calls):
                        raise CheckFailed(f"aggregated: the client sent {agg.round_trips} requests with {agg.calls} "
                                          f"calls, the server counted {req} and {calls}")
                    w_req = req
                if (req, calls) != (w_req, w_calls):
                    raise CheckFailed(f"row '{label}': {req} requests / {calls} calls, expected {w_req} / {w_calls}")
                if k == "direct":
                    calls = accesses  # no call reached the server; N is T1's object accesses
                if rnd > 0:
                    r = results[k]
                    r["times"].append(dt)
                    r["requests"].append(req)
                    r["calls"].append(calls)
                    r["server_s"].append(nanos / 1e9)
                    print(f"fig61: round {rnd}: {label}: {dt:.3f} s")

        r_c = statistics.median(base["R_C"])
        c_colors, c_grpc = statistics.median(base["colors"]), statistics.median(base["grpc"])
        c_of = {None: 0.0, "colors": c_colors, "grpc": c_grpc}

        table = []
        direct_t = statistics.median(results["direct"]["times"])
        for k, label, tr, _ in rows:
            r = results[k]
            t = statistics.median(r["times"])
            x, nn = r["requests"][0], r["calls"][0]
            r_s = statistics.median(r["server_s"])
            model = costmodel.terms(t, x, nn, c_of[tr], r_c, r_s)
            table.append({"key": k, "label": label, "transport": tr, "time": t, "times": r["times"], "requests": x, "calls": nn,
                          "per_request": t / x if x else None, "per_call": t / nn, "ratio": t / direct_t, "model": model})
        result = {"mode": mode, "started": started.isoformat(), "size": args.size, "seed": args.seed,
                  "visits": n, "visit_order": order, "accesses": counts, "R_C": r_c,
                  "baselines": base,
                  "C": {"colors": c_colors, "grpc": c_grpc}, "rows": table,
                  "skipped": [label for k, label, tr, f, q in ROWS if (q if mode == "quick" else f) is None],
                  "load_average": os.getloadavg(), "machine": os.uname().machine, "cpus": os.cpu_count()}
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(result, indent=1))
        md = report.markdown(result)
        (out / "table.md").write_text(md)
        report.figure(result, out / "fig61.png")
        print()
        print(md)
        print(f"fig61: wrote {out}/results.json, table.md, fig61.png")
        return 0
    except CheckFailed as e:
        print(f"fig61: CHECK FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
        try:
            colors_shm.detach()
        except Exception:  # noqa: BLE001 - not attached
            pass
        if java is not None:
            java.stop()
        cs.stop()


def _warm_grpc(client):
    """The gRPC per-access row's warm-up: T1 below one level-3 assembly (a twenty-seventh of the
    traversal), checked against the direct traversal of the same assembly."""
    a = _level3(client.db)
    f1, fi1 = fold_visit()
    n1 = traversal.assembly_walk(DirectAccess(client.complex_cls), a, fi1)
    f2, fi2 = fold_visit()
    n2 = traversal.assembly_walk(client.grpc_acc, handles.make(handles.COMPLEX, a.id), fi2)
    if (n1, f1.hex()) != (n2, f2.hex()):
        raise CheckFailed(f"gRPC per access below assembly {a.id}: ({n2}, {f2.hex()}), direct ({n1}, {f1.hex()})")


def _level3(db):
    """The first complex assembly whose sub-assemblies' sub-assemblies are base assemblies."""
    a = db.module.designRoot
    from oo7py.schema import ComplexAssembly

    while isinstance(a.subAssemblies[0].subAssemblies[0], ComplexAssembly):
        a = a.subAssemblies[0]
    return a


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="oo7/run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds; skips the gRPC per-access row")
    ap.add_argument("--out", help="output directory (default oo7/results/<UTC time>/)")
    ap.add_argument("--size", default="small", choices=("small", "medium"))
    ap.add_argument("--seed", type=int, default=42)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
