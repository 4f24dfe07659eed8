"""Section 6.6: sockets vs shared memory.

The same serialized payload (protobuf bytes of an int list and of a depth-4 tree list, n
elements) makes a round trip between two Python processes: over two colors channels (request and
reply; `colors_shm` copies the bytes into the shared heap and out again) and over a Unix domain
socket (4-byte length prefix). The echo side sends the bytes back unchanged, so both transports
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


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        r = sock.recv_into(view[got:], n - got)
        if r == 0:
            raise ConnectionError("peer closed")
        got += r
    return bytes(buf)


def echo_unix(path: str) -> None:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    print("READY", flush=True)
    conn, _ = srv.accept()
    with conn, srv:
        while True:
            try:
                (n,) = _LEN.unpack(_recv_exact(conn, 4))
            except ConnectionError:
                return
            conn.sendall(_LEN.pack(n) + _recv_exact(conn, n))


def _spawn(args: list[str], env: dict) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), *args],
                         stdout=subprocess.PIPE, env=env, text=True)
    ready, _, _ = select.select([p.stdout], [], [], 30)
    if not ready or p.stdout.readline().strip() != "READY":
        p.kill()
        raise RuntimeError(f"echo child {args} did not start")
    return p


# ---- the experiment ------------------------------------------------------------------------

def payloads(kinds, sizes):
    from frameworks import _pb

    return {(k, n): _pb.build_input(k, n).SerializeToString() for k in kinds for n in sizes}


def run(kinds, sizes, budget, log=print) -> dict:
    """Measures both transports for every (kind, n); returns rows and per-kind fits."""
    from fit import fit_cells
    from measure import time_calls

    server_bin, pkg_dir, why = locate_colors()
    if server_bin is None:
        return {"skipped": why}
    data = payloads(kinds, sizes)
    server = ColorsServer(server_bin)
    env = dict(os.environ, COLORS_SOCKET=server.socket, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [pkg_dir, os.environ.get("PYTHONPATH")])))
    os.environ["COLORS_SOCKET"] = server.socket
    if pkg_dir not in sys.path:
        sys.path.insert(0, pkg_dir)
    tmp = tempfile.mkdtemp(prefix="rpc-bench-uds-")
    children = []
    results = {}
    try:
        import colors_shm as cs

        cs.attach(server.socket)
        name = f"rpc-bench-66-{uuid.uuid4().hex[:8]}"
        children.append(_spawn(["--echo-colors", name], env))
        req, resp = cs.channel(name + ".req", 4), cs.channel(name + ".resp", 4)

        path = os.path.join(tmp, "echo.sock")
        children.append(_spawn(["--echo-unix", path], env))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)

        for (kind, n), blob in data.items():
            def over_colors(blob=blob):
                req.send(blob)
                return resp.receive()

            def over_unix(blob=blob):
                sock.sendall(_LEN.pack(len(blob)) + blob)
                (m,) = _LEN.unpack(_recv_exact(sock, 4))
                return _recv_exact(sock, m)

            for transport, fn in (("colors", over_colors), ("unix", over_unix)):
                if fn() != blob:
                    raise AssertionError(f"6.6: {transport} echo of {kind} n={n} differs")
                t = time_calls(fn, budget)
                results[(kind, n, transport)] = t["per_call_s"]
                results[(kind, n, transport + "_p10")] = t["p10_s"]
            log(f"  6.6 {kind:6s} n={n:5d} {len(blob):8d} B  colors {results[(kind, n, 'colors')] * 1e6:9.1f} µs"
                f"  unix {results[(kind, n, 'unix')] * 1e6:9.1f} µs")
        req.send(STOP)
        sock.close()
        cs.detach()
    finally:
        for c in children:
            try:
                c.wait(timeout=10)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()
            c.stdout.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    rows = [{"kind": k, "n": n, "bytes": len(data[(k, n)]),
             "colors_us": results[(k, n, "colors")] * 1e6, "unix_us": results[(k, n, "unix")] * 1e6,
             "colors_p10_us": results[(k, n, "colors_p10")] * 1e6,
             "unix_p10_us": results[(k, n, "unix_p10")] * 1e6}
            for (k, n) in data]
    fits = {}
    for kind in kinds:
        fits[kind] = {}
        for t in ("colors", "unix"):
            f = fit_cells([{"n": len(data[(kind, n)]), "per_call_s": results[(kind, n, t)]} for n in sizes])
            slope = f["slope_us_per_element"]  # µs per byte here
            fits[kind][t] = {"latency_us": results[(kind, min(sizes), t)] * 1e6,
                             "mb_per_s": (1.0 / slope) if slope and slope > 0 else None}
    return {"rows": rows, "fits": fits}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--echo-colors")
    ap.add_argument("--echo-unix")
    a = ap.parse_args()
    if a.echo_colors:
        echo_colors(a.echo_colors)
    elif a.echo_unix:
        echo_unix(a.echo_unix)


if __name__ == "__main__":
    main()
