"""The colors floors: the same workload as the Python -> Java matrix, with other languages at the
ends of the call (issue 6: "a Java client -> Python server row and a C++ <-> C++ row for colors,
to show the floor").

- `colors_java_py`: a Java client (java/colors/bench/ColorsClientMain.java, compiled by setup.sh,
  run with the colors agent) calls a Python colors_shm.rpc server (python/colors_py_server.py)
  through an org.colors.rpc.RpcClient interface proxy; trees are the Java
  @Shared(name = "bench.Node") class on the client and the Python class registered as
  "bench.Node" on the server.
- `colors_cpp`: cpp/colors_floor.cpp, a C++ client and a C++ server process over colors::rpc
  (built by the top-level CMake into $BUILD_DIR/rpc-bench/cpp/colors_floor).

Both programs time their own calls the way measure.time_calls does (warm-up, every call timed,
median per cell, the same budget), in both variants (paper, read), pass by pass, and print JSON
lines (see colors_floor.cpp); this module runs them, checks every reply's length and checksum
against workload.expected_checksum (before and after each cell), keeps each cell's best pass and
fits time = latency + size/throughput with fit.py like the other rows.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import uuid

import fit
import shm_vs_socket
import workload
from measure import Budget, keep_best

HERE = pathlib.Path(__file__).resolve().parent
RPC_BENCH = HERE.parent

ROWS = {"colors_java_py": "colors, Java client → Python server",
        "colors_cpp": "colors, C++ client → C++ server"}
ALWAYS_KINDS = ("int", "tree4")  # measured in every mode, whatever --kinds says


def floor_kinds(kinds) -> list[str]:
    want = set(kinds) | set(ALWAYS_KINDS)
    return [k for k in workload.KINDS if k in want]


def _paths() -> dict:
    b = shm_vs_socket._build_dir()
    server = os.environ.get("COLORS_SERVER_BIN") or str(b / "colors-server" / "colors-server")
    return {"server": pathlib.Path(server), "floor": b / "rpc-bench" / "cpp" / "colors_floor",
            "jar": b / "bindings-java" / "colors.jar", "agent": b / "bindings-java" / "colors-agent.jar",
            "jni": b / "bindings-java" / "libcolors_jni.so",
            "client": RPC_BENCH / "build" / "colors-classes" / "bench" / "ColorsClientMain.class"}


def missing(row: str) -> str:
    """Why `row` cannot run here ("" when it can)."""
    p = _paths()
    need = ["server", "floor"] if row == "colors_cpp" else ["server", "jar", "agent", "jni", "client"]
    for k in need:
        if not p[k].exists():
            how = "rpc-bench/setup.sh (after make build)" if k == "client" else "make build"
            return f"{p[k]} is missing ({how})"
    if row == "colors_java_py":
        _, pkg, why = shm_vs_socket.locate_colors()
        if pkg is None:
            return why
    return ""


def _budget_args(budget: Budget, passes: int) -> list[str]:
    return ["--passes", str(passes), "--warmup-s", str(budget.warmup_s), "--measure-s", str(budget.measure_s),
            "--min-calls", str(budget.min_calls), "--max-calls", str(budget.max_calls)]


def _collect(row: str, proc: subprocess.Popen, passes: int, log) -> list[dict]:
    """Reads the JSON lines of a floor program; checks replies; returns the best cells."""
    best: dict = {}
    paper_us = 0.0
    done, checks = False, 0
    for line in proc.stdout:
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d.get("done"):
            done = True
        elif d.get("check"):
            kind, n = d["kind"], d["n"]
            want = workload.expected_checksum(kind, n)
            if d["len"] != n or not workload.same_checksum(d["checksum"], want):
                proc.kill()
                raise AssertionError(f"{row} {kind} n={n}: reply of {d['len']} elements, checksum "
                                     f"{d['checksum']!r}, expected {n} and {want!r}")
            checks += 1
        else:
            t = {k: d[k] for k in ("per_call_s", "mean_s", "p10_s", "p90_s", "calls")}
            keep_best(best, (d["kind"], d["n"], d["variant"]), t)
            if d["variant"] == "paper":
                paper_us = t["per_call_s"] * 1e6
            else:
                log(f"  {row:14s} {d['kind']:6s} n={d['n']:5d} pass {d['pass']}/{passes}  "
                    f"paper {paper_us:10.1f} µs  read {t['per_call_s'] * 1e6:10.1f} µs")
    rc = proc.wait()
    if rc != 0 or not done:
        raise RuntimeError(f"{row}: {proc.args[0]} exited with {rc}" + ("" if done else " before it was done"))
    if checks == 0:
        raise AssertionError(f"{row}: no reply was checked")
    return [dict(framework=row, kind=k, n=n, variant=v, **t) for (k, n, v), t in best.items()]


def run_cpp(kinds, sizes, budget: Budget, passes: int, log) -> list[dict]:
    p = _paths()
    cmd = [str(p["floor"]), str(p["server"]), "--json", "--kinds", ",".join(kinds),
           "--sizes", ",".join(map(str, sizes)), *_budget_args(budget, passes)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        return _collect("colors_cpp", proc, passes, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def run_java_py(kinds, sizes, budget: Budget, passes: int, prewarm_s: float, log) -> list[dict]:
    p = _paths()
    server_bin, pkg, why = shm_vs_socket.locate_colors()
    if server_bin is None:
        raise RuntimeError(why)
    heap = shm_vs_socket.ColorsServer(server_bin, heap="1G")
    endpoint = f"rpcbench-py-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    env = dict(os.environ, COLORS_SOCKET=heap.socket, COLORS_JNI_LIB=str(p["jni"]),
               PYTHONPATH=os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")])))
    server = client = None
    try:
        server = subprocess.Popen([sys.executable, str(HERE / "colors_py_server.py"), endpoint],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        line = server.stdout.readline()
        if line.strip() != "READY":
            raise RuntimeError(f"the Python colors server did not start (got {line!r})")
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        cp = os.pathsep.join([str(p["client"].parents[1]), str(p["jar"])])
        client = subprocess.Popen(
            [java, "-Xms256m", "-Xmx1g", f"-javaagent:{p['agent']}", "-cp", cp, "bench.ColorsClientMain", endpoint,
             "--kinds", ",".join(kinds), "--sizes", ",".join(map(str, sizes)), "--prewarm-s", str(prewarm_s),
             *_budget_args(budget, passes)],
            stdout=subprocess.PIPE, text=True, env=env)
        return _collect("colors_java_py", client, passes, log)
    finally:
        if client is not None:
            if client.poll() is None:
                client.kill()
                client.wait()
            client.stdout.close()
        if server is not None:
            try:
                server.stdin.close()  # the server exits at end of stdin
                server.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                server.kill()
                server.wait()
            server.stdout.close()
        heap.stop()


def run(kinds, sizes, budget: Budget, passes: int, prewarm_s: float, log, required: bool) -> dict:
    """Both rows. A row that cannot run (something not built) is an error when `required` (smoke
    mode), else recorded in "skipped" with the reason and logged."""
    kinds = floor_kinds(kinds)
    out = {"rows": {}, "labels": ROWS, "kinds": kinds, "sizes": list(sizes), "skipped": {}}
    whys = {row: missing(row) for row in ROWS}
    for row, why in whys.items():
        if why and required:
            raise SystemExit(f"rpc-bench: the {ROWS[row]} row cannot run: {why}")
    for row in ROWS:
        why = whys[row]
        if why:
            out["skipped"][row] = why
            log(f"  {row}: skipped: {why}")
            continue
        if row == "colors_cpp":
            cells = run_cpp(kinds, sizes, budget, passes, log)
        else:
            cells = run_java_py(kinds, sizes, budget, passes, prewarm_s, log)
        out["rows"][row] = {"label": ROWS[row], "cells": cells, "fits": fit.fit_all(cells)[row]}
    return out
