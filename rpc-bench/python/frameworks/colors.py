"""colors: the call's list is a shared object handed to a Java server (bench.ColorsMain, built on
org.colors.rpc and run with the colors agent) through the shared heap; the reply is a shared list
the server built. Nothing is serialized. A colors-server process owns the heap for the run.

The client builds each input once in the heap (copy_to of the private list, reused by every
call); a call hands over one reference and gets one back. The read variant then reads every
element and field through the Python proxies."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
import uuid

from . import base

import workload  # noqa: E402
from shared_node import SHARED_NAME, Node  # noqa: E402

_METHOD = {"bool": "bools", "int": "ints", "float": "floats", "string": "strings"}
_BUILD = pathlib.Path(os.environ.get("BUILD_DIR") or "build")  # as the Makefile and rpc-bench/run
_BUILD = _BUILD if _BUILD.is_absolute() else base.REPO / _BUILD
_SERVER_BIN = _BUILD / "colors-server" / "colors-server"
_JAR = _BUILD / "bindings-java" / "colors.jar"
_AGENT = _BUILD / "bindings-java" / "colors-agent.jar"
_JNI = _BUILD / "bindings-java" / "libcolors_jni.so"
_CLASSES = base.BUILD / "colors-classes"  # setup.sh compiles java/colors/ there
_PY = _BUILD / "bindings-python"


class _ColorsJavaServer(base.JavaServer):
    """bench.ColorsMain with the colors agent; READY 0 (there is no port). `env`: extra
    environment of the Java process (e.g. its spin budget)."""

    env: dict[str, str] = {}

    def start(self, timeout: float = 60.0) -> int:
        import select

        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        cp = os.pathsep.join([str(_CLASSES), self.classpath(), str(_JAR)])
        self.proc = subprocess.Popen([java, *self.jvm_args, f"-javaagent:{_AGENT}", "-cp", cp, "bench.ColorsMain"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, **self.env})
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"Java colors server did not start (got {line!r})")
        self.port = 0
        return 0


class Adapter(base.Adapter):
    name = "colors"
    # Spin budget of both ends in ns (None: libshared's defaults, COLORS_SPIN_NS = 50 µs for the
    # client's wait for its result, 20x that, at most 2 ms, for the server's wait for a request).
    spin_ns: int | None = None

    def __init__(self):
        self.heap_proc: subprocess.Popen | None = None
        self.dir: str | None = None
        self.server: _ColorsJavaServer | None = None

    def available(self) -> tuple[bool, str]:
        for p in (_SERVER_BIN, _JAR, _AGENT, _JNI, _PY / "colors_shm", _CLASSES / "bench" / "ColorsMain.class"):
            if not p.exists():
                return False, f"{p} is missing: run `make build` first"
        return True, ""

    def _start_heap(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="colors-bench-")
        sock = os.path.join(self.dir, "colors.sock")
        self.heap_proc = subprocess.Popen(
            [str(_SERVER_BIN), "--name", f"rpcbench-{os.getpid()}-{uuid.uuid4().hex[:6]}", "--socket", sock,
             "--heap-size", "1G", "--log-level", "warn"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.heap_proc.stdout.readline()
        if not line.startswith("colors-server ready:"):
            raise RuntimeError(f"colors-server did not start: {line!r}")
        os.environ["COLORS_SOCKET"] = sock
        os.environ["COLORS_JNI_LIB"] = str(_JNI)

    def start_server(self) -> None:
        self._start_heap()
        self.server = _ColorsJavaServer("colors", jvm_args=("-Xms256m", "-Xmx1g"))
        if self.spin_ns is not None:  # the Java server's waits for requests
            self.server.env = {"COLORS_SPIN_NS": str(self.spin_ns), "COLORS_RPC_SERVER_SPIN_NS": str(self.spin_ns)}
        self.server.start()

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.heap_proc is not None:
            self.heap_proc.terminate()
            try:
                self.heap_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.heap_proc.kill()
            self.heap_proc.stdout.close()
            self.heap_proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def connect(self) -> None:
        import sys

        if str(_PY) not in sys.path:
            sys.path.insert(0, str(_PY))
        import colors_shm as cs
        from colors_shm import rpc

        self.cs = cs
        cs.register(Node, SHARED_NAME)
        self.client = rpc.connect("bench", spin_ns=self.spin_ns)

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            self.client = None
            self.cs.detach()

    def build_input(self, kind: str, n: int):
        depth = workload.tree_depth(kind)
        private = workload.build_trees(n, depth, Node) if depth else [workload.scalar_value(kind, k) for k in range(n)]
        return self.cs.copy_to(private)  # built once in the heap and reused by every call

    def call(self, kind: str, payload):
        return self.client.call(_METHOD.get(kind, "trees"), payload)

    def read_all(self, kind: str, reply) -> float:
        if workload.tree_depth(kind):
            return workload.read_attr_trees(reply)
        return workload.read_scalars(kind, reply)
