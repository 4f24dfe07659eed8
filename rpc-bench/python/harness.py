"""rpc-bench harness: runs the matrix framework x kind x size x variant, checks every reply,
fits time = latency + size/throughput, runs the colors floors (Java client -> Python server,
C++ <-> C++; floors.py) and the section 6.6 experiment, and writes results.json, results.md and
figure3.png into the output directory.

    python3 harness.py --mode full|quick|smoke [--frameworks grpc,thrift] [--kinds int,tree4]
                       [--sizes 1,8,64] [--figure colors,grpc] [--out DIR] [--no-66] [--no-floors]

Normally run through ../run (which runs ../setup.sh first).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import figure  # noqa: E402
import fit  # noqa: E402
import floors  # noqa: E402
import frameworks  # noqa: E402
import report  # noqa: E402
import shm_vs_socket  # noqa: E402
import workload  # noqa: E402
from measure import Budget, keep_best, time_batches, time_calls  # noqa: E402

MODES = {
    # sizes, kinds, per-cell budget and passes over the matrix, JIT warm-up per framework (s),
    # 6.6 sizes and budget
    "full": dict(sizes=workload.SIZES, kinds=workload.KINDS, passes=3,
                 budget=Budget(warmup_s=0.05, measure_s=0.2, min_calls=5), prewarm_s=3.0,
                 sizes66=workload.SIZES, budget66=Budget(warmup_s=0.05, measure_s=0.3, min_calls=7)),
    "quick": dict(sizes=(1, 16, 128, 1024), kinds=workload.KINDS, passes=2,
                  budget=Budget(warmup_s=0.03, measure_s=0.08, min_calls=5), prewarm_s=1.5,
                  sizes66=(1, 32, 1024), budget66=Budget(warmup_s=0.02, measure_s=0.1, min_calls=5)),
    "smoke": dict(sizes=(1, 4), kinds=("int", "tree2"), passes=1,
                  budget=Budget(warmup_s=0.0, measure_s=0.0, min_calls=5, max_calls=5, rounds=2),
                  prewarm_s=0.0, sizes66=(1, 4),
                  budget66=Budget(warmup_s=0.0, measure_s=0.0, min_calls=5, max_calls=5)),
}
KINDS66 = ("int", "tree4")


def log(msg: str) -> None:
    print(msg, flush=True)


def check_reply(adapter, kind: str, n: int, reply) -> None:
    if len(reply) != n:
        raise AssertionError(f"{adapter.name} {kind} n={n}: reply has {len(reply)} elements")
    got, want = adapter.read_all(kind, reply), workload.expected_checksum(kind, n)
    if not workload.same_checksum(got, want):
        raise AssertionError(f"{adapter.name} {kind} n={n}: checksum {got!r}, expected {want!r}")


def prewarm(adapter, kinds, seconds: float) -> None:
    """Lets the server's JIT compile the hot paths before the first timed cell."""
    if seconds <= 0:
        return
    inputs = [(k, adapter.build_input(k, 64)) for k in kinds]
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for kind, payload in inputs:
            adapter.read_all(kind, adapter.call(kind, payload))


def run_pass(adapter, kinds, sizes, budget: Budget, prewarm_s: float, p: int, passes: int, best: dict) -> None:
    """One pass of one framework over the matrix, with a server of its own (started, warmed up,
    stopped); each cell's time goes into `best` if it is the lowest so far."""
    adapter.start_server()
    try:
        adapter.connect()
        try:
            prewarm(adapter, kinds, prewarm_s)
            for kind in kinds:
                for n in sizes:
                    payload = adapter.build_input(kind, n)
                    check_reply(adapter, kind, n, adapter.call(kind, payload))
                    call, read_all = adapter.call, adapter.read_all

                    def paper(kind=kind, payload=payload):
                        call(kind, payload)

                    def read(kind=kind, payload=payload):
                        read_all(kind, call(kind, payload))

                    row = []
                    for variant, fn in (("paper", paper), ("read", read)):
                        t = time_calls(fn, budget)
                        keep_best(best, (kind, n, variant), t)
                        row.append(f"{variant} {t['per_call_s'] * 1e6:10.1f} µs")
                    check_reply(adapter, kind, n, adapter.call(kind, payload))
                    log(f"  {adapter.name:12s} {kind:6s} n={n:5d} pass {p + 1}/{passes}  " + "  ".join(row))
        finally:
            adapter.close()
    finally:
        adapter.stop_server()


def run_frameworks(adapters, kinds, sizes, budget: Budget, prewarm_s: float, passes: int) -> list[dict]:
    """The matrix, pass by pass: each pass runs every framework in turn, so a slow spell of this
    shared machine (load from elsewhere, which moved whole frameworks' results by up to 1.6x
    between runs when each framework ran its passes back to back) is spread over all of them."""
    best = {a.name: {} for a in adapters}
    for p in range(passes):
        for adapter in adapters:
            run_pass(adapter, kinds, sizes, budget, prewarm_s, p, passes, best[adapter.name])
    return [dict(framework=a.name, kind=k, n=n, variant=v, **t)
            for a in adapters for (k, n, v), t in best[a.name].items()]


def run_floor(kinds, sizes, budget: Budget, passes: int) -> list[dict]:
    """Reading the same reply held in private Python objects: the floor of the read variant."""
    best: dict = {}
    data = {}
    for kind in kinds:
        for n in sizes:
            data[kind, n] = workload.private_reply(kind, n)
            if not workload.same_checksum(workload.read_private(kind, data[kind, n]),
                                          workload.expected_checksum(kind, n)):
                raise AssertionError(f"private {kind} n={n}: checksum mismatch")
    for _ in range(passes):
        for (kind, n), d in data.items():
            keep_best(best, (kind, n), time_batches(lambda kind=kind, d=d: workload.read_private(kind, d), budget))
    for kind in kinds:
        log(f"  {report.FLOOR:12s} {kind:6s} " + " ".join(
            f"{best[kind, n]['per_call_s'] * 1e6:.2f}" for n in sizes) + " µs")
    return [dict(framework=report.FLOOR, kind=k, n=n, variant="read", **t) for (k, n), t in best.items()]


# ---- metadata ------------------------------------------------------------------------------

def _cmd(args) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30)
        return (out.stdout + out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def versions() -> dict:
    v = {"python": platform.python_version()}
    for pkg in ("grpcio", "grpcio-tools", "protobuf", "thrift", "numpy", "matplotlib"):
        try:
            v[f"{pkg} (PyPI)"] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            v[f"{pkg} (PyPI)"] = "not installed"
    pom = (HERE.parent / "java" / "pom.xml").read_text()
    for prop, label in (("grpc.version", "grpc-java: grpc-netty-shaded, grpc-protobuf, grpc-stub"),
                        ("protobuf.version", "protobuf-java"), ("thrift.version", "libthrift"),
                        ("jackson.version", "jackson-databind")):
        m = re.search(f"<{re.escape(prop)}>([^<]+)</", pom)
        v[f"{label} (Maven Central)"] = m.group(1) if m else "?"
    v["protoc for Python stubs"] = _cmd([sys.executable, "-m", "grpc_tools.protoc", "--version"]) + " (grpcio-tools)"
    tools = sorted((HERE.parent / "build" / "tools").glob("protoc-*"))
    v["protoc for Java classes"] = (_cmd([str(tools[-1]), "--version"]) + " (com.google.protobuf:protoc, Maven Central)") if tools else "?"
    v["thrift compiler"] = _cmd(["thrift", "--version"]) + " (Debian thrift-compiler)"
    v["java"] = _cmd(["java", "-version"])
    return v


def machine() -> str:
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    virt = _cmd(["systemd-detect-virt"])
    return f"{os.cpu_count()} vCPU {model}, {platform.system()} {platform.release()}, virt: {virt}"


# ---- main ----------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=sorted(MODES), default="full")
    ap.add_argument("--frameworks", help="comma-separated (default: every module in frameworks/; "
                    "\"\" for none, e.g. to run only the floor and 6.6)")
    ap.add_argument("--kinds", help="comma-separated subset of " + ",".join(workload.KINDS))
    ap.add_argument("--sizes", help="comma-separated list sizes")
    ap.add_argument("--figure", help="frameworks for figure3.png (default: colors,grpc; without "
                    "colors: grpc and the peer fastest on depth-4 trees)")
    ap.add_argument("--out", help="output directory (default rpc-bench/results/<UTC time>)")
    ap.add_argument("--no-66", action="store_true", help="skip the section 6.6 experiment")
    ap.add_argument("--no-floors", action="store_true", help="skip the colors floors (Java client -> "
                    "Python server, C++ <-> C++; run by default when colors is among the frameworks)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    mode = MODES[a.mode]
    kinds = a.kinds.split(",") if a.kinds else list(mode["kinds"])
    try:
        sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else list(mode["sizes"])
    except ValueError:
        raise SystemExit(f"--sizes {a.sizes!r}: expected comma-separated list sizes, e.g. 1,64,1024") from None
    if any(n < 1 for n in sizes):
        raise SystemExit(f"--sizes {a.sizes!r}: list sizes must be >= 1")
    bad = [k for k in kinds if k not in workload.KINDS]
    if bad:
        raise SystemExit(f"unknown kinds: {bad}")
    known = frameworks.discover()
    names = [n for n in a.frameworks.split(",") if n] if a.frameworks is not None else known
    bad = [n for n in names if n not in known]
    if bad:
        raise SystemExit(f"unknown frameworks: {bad} (known: {','.join(known)})")
    stamp = datetime.datetime.now(datetime.timezone.utc)
    out = pathlib.Path(a.out) if a.out else HERE.parent / "results" / stamp.strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_before = os.getloadavg()
    log(f"rpc-bench {a.mode}: frameworks {names}, kinds {kinds}, sizes {sizes} -> {out}")

    unavailable, adapters = {}, []
    for name in names:
        adapter = frameworks.load(name)
        ok, why = adapter.available()
        if not ok:
            unavailable[name] = why
            log(f"  {name}: not available: {why}")
            continue
        adapters.append(adapter)
    measured = [a.name for a in adapters]
    cells = run_frameworks(adapters, kinds, sizes, mode["budget"], mode["prewarm_s"], mode["passes"])
    cells += run_floor(kinds, sizes, mode["budget"], mode["passes"])

    colors_floors = None
    if "colors" in names and not a.no_floors:
        colors_floors = floors.run(kinds, sizes, mode["budget"], mode["passes"], mode["prewarm_s"], log,
                                   required=a.mode == "smoke")

    s66 = None
    if not a.no_66:
        k66 = [k for k in KINDS66 if k in kinds] or list(KINDS66)
        s66 = shm_vs_socket.run(k66, list(mode["sizes66"]), mode["budget66"], log)
        if s66.get("skipped"):
            log(f"  6.6 skipped: {s66['skipped']}")

    ref = "colors" if "colors" in measured else ("grpc" if "grpc" in measured else (measured or ["?"])[0])
    results = {
        "meta": {"mode": a.mode, "date": stamp.strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
                 "versions": versions(), "budget": vars(mode["budget"]),
                 "loadavg_start_end": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
                 "wall_s": round(time.perf_counter() - started, 1),
                 "passes": mode["passes"],
                 "cell_value": "lowest over passes of: RPC cells, the median of per-call times; "
                               "private floor, the median round of back-to-back calls"},
        "frameworks": measured, "unavailable": unavailable, "kinds": kinds, "sizes": sizes,
        "reference": ref, "cells": cells, "fits": fit.fit_all(cells), "colors_floors": colors_floors,
        "sockets_vs_shm": s66,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "results.md").write_text(report.markdown(results))
    shown = figure.pick_frameworks(results, a.figure.split(",") if a.figure else None)
    if shown:
        figure.draw(results, shown, str(out / "figure3.png"))
    log(f"rpc-bench {a.mode}: done in {time.perf_counter() - started:.0f} s; wrote {out}/results.json, "
        f"results.md" + (f", figure3.png ({' vs '.join(shown)})" if shown else " (no framework: no figure)"))

    if a.mode == "smoke":
        smoke_checks(out, results, names, unavailable, s66, "colors" in names and not a.no_floors)
    return 0


def smoke_checks(out: pathlib.Path, results: dict, names, unavailable, s66, floors_wanted: bool) -> None:
    """What `make test` relies on: every framework ran every cell, outputs written, 6.6 ran."""
    problems = [f"{n} unavailable: {w}" for n, w in unavailable.items()]
    for name in results["frameworks"] + [report.FLOOR]:
        variants = ("read",) if name == report.FLOOR else ("paper", "read")
        want = len(results["kinds"]) * len(results["sizes"]) * len(variants)
        got = sum(1 for c in results["cells"] if c["framework"] == name)
        if got != want:
            problems.append(f"{name}: {got} cells, expected {want}")
    for f in ("results.json", "results.md", "figure3.png"):
        if not (out / f).is_file() or (out / f).stat().st_size == 0:
            problems.append(f"{f} not written")
    fl = results.get("colors_floors")
    if floors_wanted and fl is None:
        problems.append("the colors floors did not run")
    if fl is not None:
        for row in floors.ROWS:
            want = len(fl["kinds"]) * len(fl["sizes"]) * 2
            got = len(fl["rows"].get(row, {}).get("cells", []))
            if got != want:
                problems.append(f"{row}: {got} cells, expected {want}")
            for kind in fl["kinds"]:
                for variant in ("paper", "read"):
                    if fl["rows"].get(row, {}).get("fits", {}).get(variant, {}).get(kind, {}).get("latency_us") is None:
                        problems.append(f"{row} {kind} {variant}: no fit")
    if s66 is not None and s66.get("skipped"):
        problems.append(f"6.6 experiment skipped: {s66['skipped']}")
    if problems:
        raise SystemExit("rpc-bench smoke: FAILED\n  " + "\n  ".join(problems))
    n = len(results["cells"]) + sum(len(r["cells"]) for r in (fl or {}).get("rows", {}).values())
    log(f"rpc-bench smoke: {n} cells passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
