"""Section 6.6: sockets vs shared memory.

The same serialized payload (protobuf bytes of an int list and of a depth-4 tree list, n
elements) makes a round trip between two Python processes: over two colors channels (request and
reply; `colors_shm` copies the bytes into the shared heap and out again), with the default spin
budget and with none, and over a Unix domain socket (4-byte length prefix). The echo side sends the bytes back unchanged, so both transports
carry the same bytes and nobody (de)serializes: the difference is what shared memory buys by
itself, apart from avoiding serialization.

Run by the harness (`run(...)`); the echo children are this file with --echo-colors / --echo-unix.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import uuid

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
_LEN = struct.Struct(">I")
STOP = b""  # sent to the colors echo child to end it (None cannot be sent)


# ---- where colors is -----------------------------------------------------------------------

def _build_dir() -> pathlib.Path:
    b = pathlib.Path(os.environ.get("BUILD_DIR") or "build")
    return b if b.is_absolute() else REPO / b


def locate_colors() -> tuple[str | None, str | None, str]:
    """(server binary, directory holding the colors_shm package, reason if not found)."""
    server = os.environ.get("COLORS_SERVER_BIN") or str(_build_dir() / "colors-server" / "colors-server")
    if not os.access(server, os.X_OK):
        return None, None, f"colors-server not found at {server} (make build)"
    pkg = _build_dir() / "bindings-python"
    if list(pkg.glob("colors_shm/_colors_shm*.so")):
        return server, str(pkg), ""
    try:
        import colors_shm  # noqa: F401  (installed with pip)
        return server, str(pathlib.Path(colors_shm.__file__).resolve().parents[1]), ""
    except ImportError:
        return None, None, f"the colors_shm module is neither in {pkg} nor installed (make build)"


class ColorsServer:
    def __init__(self, binary: str, heap: str = "256M"):
        self.dir = tempfile.mkdtemp(prefix="rpc-bench-colors-")
        self.socket = os.path.join(self.dir, "colors.sock")
        self.proc = subprocess.Popen(
            [binary, "--name", f"rpc-bench-{os.getpid()}-{uuid.uuid4().hex[:8]}",
             "--socket", self.socket, "--heap-size", heap, "--log-level", "warn"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], 20)
            line = self.proc.stdout.readline() if ready else ""
            if line.startswith("colors-server ready:"):
                return
            if not line:
                self.stop()
                raise RuntimeError("colors-server did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- echo children -------------------------------------------------------------------------

def echo_colors(name: str) -> None:
    import colors_shm as cs

    req, resp = cs.channel(name + ".req", 4), cs.channel(name + ".resp", 4)
    print("READY", flush=True)
    while True:
        msg = req.receive()
        if msg == STOP:
            return
        resp.send(msg)


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        r = sock.recv_into(view[got:], n - got)
        if r == 0:
            raise ConnectionError("peer closed")
        got += r
    return buf


def echo_unix(path: str) -> None:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    print("READY", flush=True)
    conn, _ = srv.accept()
    with conn, srv:
        while True:
            try:
                header = _recv_exact(conn, 4)
            except ConnectionError:
                return
            body = _recv_exact(conn, _LEN.unpack(header)[0])
            conn.sendall(header)
            conn.sendall(body)


def _spawn(args: list[str], env: dict) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), *args],
                         stdout=subprocess.PIPE, env=env, text=True)
    ready, _, _ = select.select([p.stdout], [], [], 30)
    if not ready or p.stdout.readline().strip() != "READY":
        p.kill()
        raise RuntimeError(f"echo child {args} did not start")
    return p


# ---- the experiment ------------------------------------------------------------------------
# Colors channels wait by spinning for COLORS_SPIN_NS (libshared's default: 50 µs), then block on
# a futex. The budget is read once per process, so each setting is measured in its own process
# (measure_colors, run as `--measure-colors`), with an echo child that inherits the setting.
SPIN_SETTINGS = ((None, "colors"), ("0", "colors_nospin"))


def payloads(kinds, sizes):
    from frameworks import _pb

    return {(k, n): _pb.build_input(k, n).SerializeToString() for k in kinds for n in sizes}


def _timed(fn, blob, budget, what):
    from measure import time_calls

    if fn() != blob:
        raise AssertionError(f"6.6: echo over {what} differs")
    t = time_calls(fn, budget)
    return t["per_call_s"], t["p10_s"]


def measure_colors(spec: dict) -> dict:
    """In a child process: round trips over colors channels; returns {"kind,n": [median, p10]}."""
    from measure import Budget

    import colors_shm as cs

    budget = Budget(**spec["budget"])
    data = payloads(spec["kinds"], spec["sizes"])
    name = f"rpc-bench-66-{uuid.uuid4().hex[:8]}"
    child = _spawn(["--echo-colors", name], dict(os.environ))
    out = {}
    try:
        req, resp = cs.channel(name + ".req", 4), cs.channel(name + ".resp", 4)
        for (kind, n), blob in data.items():
            def over_colors(blob=blob):
                req.send(blob)
                return resp.receive()

            out[f"{kind},{n}"] = _timed(over_colors, blob, budget, f"colors {kind} n={n}")
        req.send(STOP)
    finally:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()
    return out


def measure_unix(data: dict, budget, env: dict) -> dict:
    tmp = tempfile.mkdtemp(prefix="rpc-bench-uds-")
    path = os.path.join(tmp, "echo.sock")
    child = _spawn(["--echo-unix", path], env)
    out = {}
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        with sock:
            for (kind, n), blob in data.items():
                def over_unix(blob=blob):
                    sock.sendall(_LEN.pack(len(blob)))  # two sends: no copy of the payload;
                    sock.sendall(blob)                  # Unix sockets have no Nagle delay
                    (m,) = _LEN.unpack(_recv_exact(sock, 4))
                    return _recv_exact(sock, m)

                out[f"{kind},{n}"] = _timed(over_unix, blob, budget, f"unix socket {kind} n={n}")
    finally:
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def run(kinds, sizes, budget, log=print) -> dict:
    """Measures the Unix socket and colors channels (default spin budget, and no spinning) for
    every (kind, n); returns rows and per-kind fits."""
    import json
    from dataclasses import asdict

    from fit import fit_cells

    server_bin, pkg_dir, why = locate_colors()
    if server_bin is None:
        return {"skipped": why}
    data = payloads(kinds, sizes)
    server = ColorsServer(server_bin)
    env = dict(os.environ, COLORS_SOCKET=server.socket, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [pkg_dir, str(HERE), os.environ.get("PYTHONPATH")])))
    env.pop("COLORS_SPIN_NS", None)
    res = {}
    try:
        res["unix"] = measure_unix(data, budget, env)
        spec = json.dumps({"kinds": list(kinds), "sizes": list(sizes), "budget": asdict(budget)})
        for spin, label in SPIN_SETTINGS:
            env2 = dict(env, **({"COLORS_SPIN_NS": spin} if spin is not None else {}))
            p = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--measure-colors", spec],
                               env=env2, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"6.6 colors measurement ({label}) failed:\n{p.stderr}")
            res[label] = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        server.stop()

    rows = []
    for (k, n), blob in data.items():
        row = {"kind": k, "n": n, "bytes": len(blob)}
        for t in ("colors", "colors_nospin", "unix"):
            row[f"{t}_us"], row[f"{t}_p10_us"] = (x * 1e6 for x in res[t][f"{k},{n}"])
        rows.append(row)
        log(f"  6.6 {k:6s} n={n:5d} {len(blob):8d} B  colors {row['colors_us']:8.1f} µs  "
            f"colors/no spin {row['colors_nospin_us']:8.1f} µs  unix {row['unix_us']:8.1f} µs")
    fits = {}
    for kind in kinds:
        fits[kind] = {}
        for t in ("colors", "colors_nospin", "unix"):
            f = fit_cells([{"n": len(data[(kind, n)]), "per_call_s": res[t][f"{kind},{n}"][0]} for n in sizes])
            slope = f["slope_us_per_element"]  # µs per byte here
            fits[kind][t] = {"latency_us": res[t][f"{kind},{min(sizes)}"][0] * 1e6,
                             "mb_per_s": (1.0 / slope) if slope and slope > 0 else None}
    return {"rows": rows, "fits": fits,
            "spin_budget": "colors: libshared's default COLORS_SPIN_NS (50 µs); colors_nospin: COLORS_SPIN_NS=0"}


def main() -> None:
    import json

    ap = argparse.ArgumentParser()
    ap.add_argument("--echo-colors")
    ap.add_argument("--echo-unix")
    ap.add_argument("--measure-colors")
    a = ap.parse_args()
    if a.echo_colors:
        echo_colors(a.echo_colors)
    elif a.echo_unix:
        echo_unix(a.echo_unix)
    elif a.measure_colors:
        sys.path.insert(0, str(HERE))
        print(json.dumps(measure_colors(json.loads(a.measure_colors))))


if __name__ == "__main__":
    main()
