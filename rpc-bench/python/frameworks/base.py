"""The adapter interface every framework implements, and helpers to run the Java servers.

An adapter is one module frameworks/<name>.py defining `class Adapter(base.Adapter)`. The harness
drives it as:

    a = Adapter()
    ok, why = a.available()           # skip the framework (with the reason) when False
    a.start_server()                  # launch the server process, return once it accepts
    a.connect()                       # open the client connection / channel / stub
    payload = a.build_input(kind, n)  # once per (kind, n), in the framework's own client types
    reply = a.call(kind, payload)     # one RPC, timed; returns a sized sequence of n elements
    checksum = a.read_all(kind, reply)  # read every element and field ("read" variant, checks)
    a.close(); a.stop_server()

Kinds are workload.KINDS ("bool", "int", "float", "string", "tree1".."tree4"); the server must
answer with a new list derived from the input by the rules in workload.py / Derive.java.
"""

from __future__ import annotations

import os
import pathlib
import select
import subprocess
import sys
from typing import Any, Sequence

RPC_BENCH = pathlib.Path(__file__).resolve().parents[2]  # rpc-bench/
REPO = RPC_BENCH.parent
BUILD = RPC_BENCH / "build"  # generated code and tools (setup.sh)
JAVA_DIR = RPC_BENCH / "java"

# Generated Python code (bench_pb2, bench_pb2_grpc, bench_thrift) lives in build/gen-py.
_GEN_PY = str(BUILD / "gen-py")
if _GEN_PY not in sys.path:
    sys.path.insert(0, _GEN_PY)
# The harness's own modules (workload, measure, ...) live in python/.
_PY = str(RPC_BENCH / "python")
if _PY not in sys.path:
    sys.path.append(_PY)

import workload  # noqa: E402

KINDS = workload.KINDS


class Adapter:
    """Base class of the framework adapters. `name` is the framework's name in results (by
    convention the module name)."""

    name: str = "?"

    def available(self) -> tuple[bool, str]:
        """(True, "") when this framework can run here, else (False, reason)."""
        return True, ""

    def start_server(self) -> None:
        """Start the server (a Java process for the peers) and return once it accepts calls."""
        raise NotImplementedError

    def stop_server(self) -> None:
        """Stop the server started by start_server (idempotent)."""
        raise NotImplementedError

    def connect(self) -> None:
        """Open the client side (channel, socket, stub); called after start_server."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the client side (idempotent); called before stop_server."""

    def build_input(self, kind: str, n: int) -> Any:
        """The list of n elements of `kind` in this framework's client types, built once and
        reused across calls."""
        raise NotImplementedError

    def call(self, kind: str, payload: Any) -> Sequence:
        """One call of the server method for `kind`; returns the reply as a sized sequence of n
        elements in the framework's client types (decoded as far as the framework decodes by
        itself: lazily decoding frameworks pay the rest in read_all)."""
        raise NotImplementedError

    def read_all(self, kind: str, reply: Sequence) -> float:
        """Read every element and every field of a reply; return workload's checksum of it."""
        raise NotImplementedError


class JavaServer:
    """A `bench.Server <framework> 0` process of the Maven project in java/.

    It prints `READY <port>` once it listens on 127.0.0.1 and exits when its stdin closes.
    """

    def __init__(self, framework: str, jvm_args: Sequence[str] = ("-Xms256m", "-Xmx1g")):
        self.framework = framework
        self.jvm_args = list(jvm_args)
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    @staticmethod
    def classpath() -> str:
        cp_file = JAVA_DIR / "target" / "classpath.txt"
        if not cp_file.is_file():
            raise RuntimeError(f"{cp_file} is missing: run rpc-bench/setup.sh")
        return str(JAVA_DIR / "target" / "classes") + os.pathsep + cp_file.read_text().strip()

    def start(self, timeout: float = 60.0) -> int:
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        self.proc = subprocess.Popen(
            [java, *self.jvm_args, "-cp", self.classpath(), "bench.Server", self.framework, "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"Java {self.framework} server did not start (got {line!r})")
        self.port = int(line.split()[1])
        return self.port

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()  # the server exits at end of stdin
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc = None


class JavaServerAdapter(Adapter):
    """An adapter whose server is bench.Server <name> (the four peers)."""

    def __init__(self):
        self.server = JavaServer(self.name)

    def start_server(self) -> None:
        self.server.start()

    def stop_server(self) -> None:
        self.server.stop()

    @property
    def port(self) -> int:
        assert self.server.port is not None, "start_server() first"
        return self.server.port
