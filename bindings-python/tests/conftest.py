"""Fixtures: one real colors-server for the whole session, and helpers to run child processes.

The server binary comes from $COLORS_SERVER_BIN, else <repo>/build/colors-server/colors-server.
It gets a unique --name, a socket in a temporary directory and a 64 MiB heap; COLORS_SOCKET points
every colors_shm user (this process and its children) at it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid

import pytest
from hypothesis import settings

# No example database in the source tree; failures print a reproduction blob instead.
settings.register_profile("colors", database=None, print_blob=True)
settings.load_profile("colors")

REPO = pathlib.Path(__file__).resolve().parents[2]


def server_binary() -> pathlib.Path:
    path = os.environ.get("COLORS_SERVER_BIN") or str(REPO / "build" / "colors-server" / "colors-server")
    p = pathlib.Path(path)
    if not p.is_file() or not os.access(p, os.X_OK):
        raise RuntimeError(
            f"colors-server not found at {p}: build it (make build) or set COLORS_SERVER_BIN"
        )
    return p


class Server:
    """A colors-server process started for tests."""

    def __init__(self, heap: str = "64M", extra: tuple[str, ...] = (), log: str | None = None,
                 successor_of: "Server | None" = None):
        """`extra`: more colors-server flags; `log`: a file for its log (stderr), else a pipe;
        `successor_of`: a server that is gone, whose name and socket this one takes (it adopts
        the heap that server left)."""
        self.dir = tempfile.mkdtemp(prefix="colors-py-")
        self.handed_over = False  # a successor adopted this server's heap: its stop() keeps the files
        if successor_of is not None:
            successor_of.handed_over = True
        self.name = successor_of.name if successor_of else f"pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.socket = successor_of.socket if successor_of else os.path.join(self.dir, "colors.sock")
        self.log = open(log, "w") if log else None
        self.proc = subprocess.Popen(
            [str(server_binary()), "--name", self.name, "--socket", self.socket, "--heap-size", heap,
             "--log-level", "warn", *extra],
            stdout=subprocess.PIPE,
            stderr=self.log or subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while True:
            line = self.proc.stdout.readline()
            if line.startswith("colors-server ready:"):
                break
            if not line and self.proc.poll() is not None:
                err = self.proc.stderr.read() if self.proc.stderr else open(log).read()
                raise RuntimeError(f"colors-server exited with {self.proc.returncode}: {err}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("colors-server did not print its ready line within 20 s")

    def stop(self, sig=signal.SIGTERM) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr, self.log):
            if f:
                f.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if not self.handed_over:
            # A server that was killed leaves its heap for a successor (colors-server/README.md);
            # no test server has one after stop(), so its files go (in tmpfs they hold memory).
            heap_dir = pathlib.Path(f"/dev/shm/colors-{os.geteuid()}")
            for suffix in (".heap", ".lock"):
                (heap_dir / (self.name + suffix)).unlink(missing_ok=True)
        return self.proc.returncode


@pytest.fixture(scope="session", autouse=True)
def server():
    srv = Server()
    os.environ["COLORS_SOCKET"] = srv.socket
    yield srv
    import colors_shm

    colors_shm.detach()
    srv.stop()


def child_env(socket: str | None = None) -> dict:
    import colors_shm

    env = dict(os.environ)
    pkg_root = str(pathlib.Path(colors_shm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if socket is not None:
        env["COLORS_SOCKET"] = socket
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn(code: str, socket: str | None = None, **kwargs) -> subprocess.Popen:
    """Starts `python3 -c code` (dedented) with colors_shm importable and COLORS_SOCKET set."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(socket),
        **kwargs,
    )


def run(code: str, timeout: float = 30, socket: str | None = None) -> subprocess.CompletedProcess:
    p = spawn(code, socket=socket)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"child timed out\nstdout: {out}\nstderr: {err}")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@contextlib.contextmanager
def collecting(after_each=None):
    """Runs collector cycles back to back in a thread (calling ``after_each()`` after each) for the
    duration of the block; then stops it and fails the test with whatever it raised."""
    import colors_shm

    stop = threading.Event()
    errors = []

    def loop():
        try:
            while not stop.is_set():
                colors_shm.collect(timeout=30)
                if after_each is not None:
                    after_each()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=loop)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
    assert not errors, errors


@pytest.fixture
def fresh_proxy_cache():
    """An empty proxy cache of the default capacity for the test, and again after it (a module
    takes it for each of its tests with ``pytestmark = pytest.mark.usefixtures("fresh_proxy_cache")``)."""
    import colors_shm as cs

    before = cs.proxy_cache()
    cs.proxy_cache(0)
    cs.proxy_cache(before)
    yield before
    cs.proxy_cache(0)
    cs.proxy_cache(before)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
