"""The processes of a Figure 6-1 run: a private colors-server (its own name, socket and heap
directory in a temporary directory, like the tests' servers) and the Java server
(fig61.Fig61Server with the colors agent, built by oo7/fig61/setup.sh)."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

FIG61 = pathlib.Path(__file__).resolve().parents[2]   # oo7/fig61
REPO = FIG61.parents[1]


def build_dir() -> pathlib.Path:
    p = pathlib.Path(os.environ.get("BUILD_DIR") or REPO / "build")
    return p if p.is_absolute() else REPO / p


def _wait_line(proc, prefix: str, timeout: float, what: str) -> list[str]:
    """Reads proc's stdout until a line starting with ``prefix`` and returns the lines read; a
    thread goes on draining the pipe (keeping its last lines) so the process never blocks on it."""
    lines: list[str] = []
    seen = threading.Event()

    def reader():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            del lines[:-200]
            if line.startswith(prefix):
                seen.set()
        seen.set()

    threading.Thread(target=reader, daemon=True).start()
    if not seen.wait(timeout) or not any(l.startswith(prefix) for l in lines):
        proc.kill()
        proc.wait()
        err = proc.stderr.read() if proc.stderr is not None else ""
        raise RuntimeError(f"{what} did not start within {timeout:.0f} s (exit {proc.poll()}): "
                           f"{' | '.join(lines[-5:])} {err.strip()}")
    return list(lines)


class ColorsServer:
    """A colors-server of the build with a unique name, in a temporary directory."""

    def __init__(self, heap: str = "512M"):
        binary = os.environ.get("COLORS_SERVER_BIN") or str(build_dir() / "colors-server" / "colors-server")
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"colors-server not found at {binary}: build it (make build) or set COLORS_SERVER_BIN")
        self.dir = tempfile.mkdtemp(prefix="colors-fig61-")
        self.socket = os.path.join(self.dir, "colors.sock")
        name = f"fig61-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.proc = subprocess.Popen(
            [binary, "--name", name, "--socket", self.socket, "--heap-dir", os.path.join(self.dir, "heap"),
             "--heap-size", heap, "--log-level", "warn"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wait_line(self.proc, "colors-server ready:", 20, "colors-server")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class JavaServer:
    """fig61.Fig61Server attached to ``socket``: builds (or with ``adopt`` serves the published)
    OO7 database and serves it over colors rpc (``endpoint``) and gRPC (``self.port``)."""

    def __init__(self, socket: str, endpoint: str, size: str = "small", seed: int = 42, adopt: bool = False,
                 repository: str | None = None):
        out = FIG61 / "build"
        try:
            cp = (out / "server-classpath.txt").read_text().strip()
            agent = (out / "agent-jar.txt").read_text().strip()
        except FileNotFoundError:
            raise RuntimeError("the Java server is not built: run oo7/fig61/setup.sh (oo7/run does)") from None
        env = dict(os.environ, COLORS_SOCKET=socket,
                   COLORS_JNI_LIB=str(build_dir() / "bindings-java" / "libcolors_jni.so"))
        cmd = ["java", "--enable-native-access=ALL-UNNAMED", f"-javaagent:{agent}", "-cp", cp,
               "fig61.Fig61Server", "--size", size, "--seed", str(seed), "--endpoint", endpoint]
        if adopt:
            cmd.append("--adopt")
        if repository is not None:
            cmd += ["--repository", repository]
        self._err = tempfile.TemporaryFile(mode="w+")  # read if it fails to start; never fills a pipe
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True)
        try:
            self.lines = _wait_line(self.proc, "READY ", 120, "the Java server")
        except RuntimeError as e:
            self._err.seek(0)
            raise RuntimeError(f"{e} {self._err.read().strip()[-2000:]}") from None
        self.port = int(self.lines[-1].split()[1])
        self.checks = dict(l.split(" ", 1) for l in self.lines if l.split(" ", 1)[0] in ("visits", "visit-order", "fingerprint"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(15)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.proc.kill()
                self.proc.wait()
