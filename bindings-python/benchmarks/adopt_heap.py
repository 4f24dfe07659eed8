"""Time for a successor colors-server to adopt a heap (checks, recovery and the heap verifier
included), against one collector cycle over the same heap in the same run.

    python3 adopt_heap.py [--heap 1G] [--live-mib 600] [--rounds 3]

Fills a heap of --heap with about --live-mib MiB of live objects (strings of 400 bytes and small
lists, reachable from one repository), runs a collection (its total time is the baseline: it walks
and marks the same heap), kills the server with SIGKILL and starts a successor on the same name,
which logs how long adopting took ("verified (...) in N ms"). The client process stays alive, so
the successor keeps its slot and verifies in concurrent mode, as in production.

Needs the package (PYTHONPATH=<build>/bindings-python) and COLORS_SERVER_BIN (else
<repo>/build/colors-server/colors-server).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

REPO = pathlib.Path(__file__).resolve().parents[2]
SERVER = os.environ.get("COLORS_SERVER_BIN") or str(REPO / "build" / "colors-server" / "colors-server")

FILLER = """
    import sys
    import colors_shm as cs
    cs.attach()
    live = int(sys.argv[1]) << 20
    chunks = cs.copy_to([])
    cs.repository("adopt").set(chunks)
    made = 0
    while made < live:
        chunks.append(cs.copy_to(["x" * 400 for _ in range(1000)] + [[i, i + 1] for i in range(1000)]))
        made += 1000 * (400 + 48) + 1000 * 120
    st = cs.collect()
    print("CYCLE", st.total_ns, st.objects_marked, flush=True)
    sys.stdin.readline()  # keep the client alive through the restart
    print("ALIVE", len(chunks), flush=True)
"""


def start(name: str, sock: str, heap: str, log: str) -> subprocess.Popen:
    p = subprocess.Popen([SERVER, "--name", name, "--socket", sock, "--heap-size", heap, "--gc-pacing", "0"],
                         stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    line = p.stdout.readline()
    if not line.startswith("colors-server ready:"):
        raise RuntimeError(f"server did not start: {open(log).read()}")
    return p


def one_round(heap: str, live_mib: int) -> tuple[float, float, int]:
    d = tempfile.mkdtemp(prefix="colors-adopt-")
    name = f"adopt-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    sock = os.path.join(d, "s.sock")
    first = start(name, sock, heap, os.path.join(d, "first.log"))
    env = dict(os.environ, COLORS_SOCKET=sock)
    filler = subprocess.Popen([sys.executable, "-c", textwrap.dedent(FILLER), str(live_mib)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    cycle_line = filler.stdout.readline().split()
    cycle_ms = int(cycle_line[1]) / 1e6
    objects = int(cycle_line[2])
    first.send_signal(signal.SIGKILL)
    first.wait()
    log2 = os.path.join(d, "second.log")
    t0 = time.monotonic()
    second = start(name, sock, heap, log2)
    start_ms = (time.monotonic() - t0) * 1e3
    m = re.search(r"verified \((\w+)\) in (\d+) ms \(checks (\d+) ms, recovery (\d+) ms, verifier (\d+) ms\)",
                  open(log2).read())
    if not m:
        raise RuntimeError(open(log2).read())
    adopt_ms = float(m.group(2))
    filler.stdin.write("go\n")
    filler.stdin.flush()
    filler.communicate(timeout=120)
    second.send_signal(signal.SIGTERM)
    second.wait()
    shutil.rmtree(d, ignore_errors=True)
    print(f"  adoption {adopt_ms:.0f} ms (checks {m.group(3)}, recovery {m.group(4)}, {m.group(1)} verifier "
          f"{m.group(5)}; successor ready after {start_ms:.0f} ms), "
          f"one collector cycle {cycle_ms:.0f} ms, {objects} live objects", flush=True)
    return adopt_ms, cycle_ms, objects


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heap", default="1G")
    ap.add_argument("--live-mib", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ratios = []
    for _ in range(a.rounds):
        adopt_ms, cycle_ms, _ = one_round(a.heap, a.live_mib)
        ratios.append(adopt_ms / cycle_ms)
    ratios.sort()
    print(f"adoption / one collector cycle, median of {a.rounds}: {ratios[len(ratios) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
