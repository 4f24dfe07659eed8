"""Property-based crash test of the whole Python surface of colors_shm.

hypothesis draws programs of random operations (fuzz_child.py): the public API, every name in
dir() of the extension module and of the objects the program holds (proxies, stale proxies from
before a detach, _Ref objects and whatever else gc.get_referents reaches, rpc clients, servers
and capsules, classes), called with random operands; detach/attach, gc.collect(), colors
collect(), threads blocked in receive/wait while another thread detaches, and (in
test_fuzz_with_server_kills) SIGKILL of the server. Each program runs in a child process; the test
asserts that the child exits normally: never by a signal, never with SystemError, never a value
read back corrupted, never blocked after a detach().

Time-bounded: each test stops drawing programs after COLORS_FUZZ_SECS seconds (default 20); set
it higher for a long run, e.g. COLORS_FUZZ_SECS=1800.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Server, child_env
from fuzz_child import Fuzz

CHILD = str(pathlib.Path(__file__).resolve().parent / "fuzz_child.py")
SECS = float(os.environ.get("COLORS_FUZZ_SECS", "20"))
N_OPS = len(Fuzz.OPS)  # kill_server is the last: only the second test draws it

ops = st.tuples(st.integers(0, N_OPS - 2), st.lists(st.integers(0, 400), max_size=7))
kill_ops = st.tuples(st.integers(0, N_OPS - 1), st.lists(st.integers(0, 400), max_size=7))


class Budget:
    def __init__(self, secs: float):
        self.end = time.monotonic() + secs
        self.runs = 0

    def over(self) -> bool:
        return time.monotonic() > self.end


class FuzzServer:
    """A server of the fuzz test's own (the programs kill it); restarted when found dead."""

    def __init__(self):
        self.srv = Server()

    def alive(self) -> Server:
        if self.srv.proc.poll() is not None:
            self.srv.stop()
            self.srv = Server()
        return self.srv

    def stop(self):
        self.srv.stop()


def run_program(srv: Server, program) -> None:
    env = child_env(srv.socket)
    env["FUZZ_SERVER_PID"] = str(srv.proc.pid)
    # After kill_server no successor comes: each call that needs the server waits this long for
    # one before it raises ServerGoneError (colors-server/README.md, "Surviving the server").
    env["COLORS_ATTACH_TIMEOUT_MS"] = "100"
    p = subprocess.run([sys.executable, CHILD, json.dumps(program)], env=env, capture_output=True, text=True,
                       timeout=120)
    why = ""
    if p.returncode < 0:
        why = f"killed by {signal.Signals(-p.returncode).name}"
    elif p.returncode != 0:
        why = f"exit status {p.returncode}"
    elif "done" not in p.stdout:
        why = "did not finish"
    assert not why, f"fuzz child {why}\nprogram: {json.dumps(program)}\nstdout: {p.stdout[-3000:]}\nstderr: {p.stderr[-5000:]}"


@pytest.fixture(scope="module")
def fuzz_server():
    s = FuzzServer()
    yield s
    s.stop()


def fuzz(fuzz_server, strategy, max_ops: int):
    budget = Budget(SECS)

    @settings(max_examples=max(10, int(SECS * 20)), deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(strategy, min_size=1, max_size=max_ops))
    def check(program):
        if budget.over():
            return
        budget.runs += 1
        run_program(fuzz_server.alive(), program)

    check()
    assert budget.runs > 0


def test_fuzz_api_and_internals(fuzz_server):
    fuzz(fuzz_server, ops, 80)


def test_fuzz_with_server_kills(fuzz_server):
    fuzz(fuzz_server, kill_ops, 40)
