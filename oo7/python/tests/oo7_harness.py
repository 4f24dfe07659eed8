"""Fixtures and helpers of the OO7 Python tests: one fresh colors-server for these tests, this
process attached to it, and helpers that run the loaders against it.

Not a conftest.py: run-tests.sh collects this directory in the same pytest session as
bindings-python/tests, whose test files import their helpers with ``from conftest import ...``; a
second conftest.py would take that module name. Test files import the fixtures from here.

The server binary: $COLORS_SERVER_BIN, else $BUILD_DIR/colors-server/colors-server, else
<repo>/build/colors-server/colors-server. The build dir (for <build>/oo7/oo7-load) is $BUILD_DIR,
else the one the server binary lies in.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

OO7_PY = pathlib.Path(__file__).resolve().parents[1]  # oo7/python
REPO = OO7_PY.parents[1]
LOAD_PY = OO7_PY / "load.py"

sys.path.insert(0, str(OO7_PY))  # the oo7py package


def build_dir() -> pathlib.Path:
    if os.environ.get("BUILD_DIR"):
        p = pathlib.Path(os.environ["BUILD_DIR"])
        return p if p.is_absolute() else REPO / p
    if os.environ.get("COLORS_SERVER_BIN"):
        return pathlib.Path(os.environ["COLORS_SERVER_BIN"]).resolve().parents[1]
    return REPO / "build"


def server_binary() -> pathlib.Path:
    p = pathlib.Path(os.environ.get("COLORS_SERVER_BIN") or build_dir() / "colors-server" / "colors-server")
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise RuntimeError(f"colors-server not found at {p}: build it or set COLORS_SERVER_BIN / BUILD_DIR")
    return p


def child_env(socket: str) -> dict:
    import colors_shm

    env = dict(os.environ)
    pkg_root = str(pathlib.Path(colors_shm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["COLORS_SOCKET"] = socket
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Server:
    """A colors-server with a unique name, its socket and segment in a temporary directory."""

    def __init__(self, heap: str = "256M"):
        self.dir = tempfile.mkdtemp(prefix="colors-oo7-")
        self.socket = os.path.join(self.dir, "colors.sock")
        name = f"oo7-pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.proc = subprocess.Popen(
            [str(server_binary()), "--name", name, "--socket", self.socket, "--heap-dir",
             os.path.join(self.dir, "heap"), "--heap-size", heap, "--log-level", "warn"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 20
        while True:
            line = self.proc.stdout.readline()
            if line.startswith("colors-server ready:"):
                break
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"colors-server exited with {self.proc.returncode}: {self.proc.stderr.read()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("colors-server did not print its ready line within 20 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def oo7_server():
    """Starts the server and attaches this process to it (detaching first from whatever server an
    earlier test directory of the same pytest session attached it to)."""
    import colors_shm as cs

    srv = Server()
    old = os.environ.get("COLORS_SOCKET")
    os.environ["COLORS_SOCKET"] = srv.socket
    cs.detach()
    cs.attach(srv.socket)
    yield srv
    cs.detach()
    if old is None:
        os.environ.pop("COLORS_SOCKET", None)
    else:
        os.environ["COLORS_SOCKET"] = old
    srv.stop()


@pytest.fixture
def run_load(oo7_server):
    """run_load(*args, timeout=60) -> CompletedProcess of `python3 oo7/python/load.py args`."""

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(LOAD_PY), *args], capture_output=True, text=True,
                              env=child_env(oo7_server.socket), timeout=timeout)

    return run


@pytest.fixture
def spawn_load(oo7_server):
    """spawn_load(*args) -> Popen of load.py with pipes (stdin included)."""

    def spawn(*args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(LOAD_PY), *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=child_env(oo7_server.socket))

    return spawn
