"""Durability of a colors heap (colors-server --data-dir): checkpoint, restore and adoption times,
against the disk's own sequential bandwidth measured in the same run.

    durability.py [--heap-gib 1] [--fill-gib 0.75] [--checkpoints 3] [--dd-mib 1024] [--verbose]

One run:
  1. starts a colors-server (--heap-size --heap-gib, --data-dir, --checkpoint-interval 0) and a
     client process that fills about --fill-gib of live data (a repository holding a shared list
     of shared lists of ints, 1 MiB each, made with colors_shm.copy_to);
  2. --checkpoints times: dd writes --dd-mib MiB to the data directory with O_DIRECT and a final
     fsync, dd reads them back with O_DIRECT (the disk's write and read bandwidth), then the client
     calls colors_shm.checkpoint(); the server's "checkpoint N written" line gives the data bytes,
     how long the client was stopped and the write-and-fsync time;
  3. the client exits, the server is killed with SIGKILL and its heap file deleted (a reboot: the
     checkpoint files are also evicted from the page cache), a server started on the same
     --data-dir restores the newest checkpoint and adopts it; a client checks the data;
  4. that server is killed with SIGKILL, its heap file stays, and a successor adopts it directly;
     a client checks the data again;
  5. the log: a small server with --durability full and a client committing --log-records
     transactions one after another (each its own log record), a reboot, and the restore's
     "then R log record(s) ... in T ms": the replay time per 100k records.
Every server is killed at the end and the temporary directories are removed. Baselines measured
in the same run: dd (above), one memcpy of the checkpoint's bytes (the stop copies them), and the
collector cycle that ends the fill (it walks the same data as the adoption's verifier).

Needs the package (PYTHONPATH=<build>/bindings-python) and COLORS_SERVER_BIN (else
$COLORS_BUILD_DIR/colors-server/colors-server, as set by <build>/env.sh, else
<repo>/build/colors-server/colors-server). See README.md next to this file.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

REPO = pathlib.Path(__file__).resolve().parents[2]
SERVER = os.environ.get("COLORS_SERVER_BIN") or str(
    pathlib.Path(os.environ.get("COLORS_BUILD_DIR") or REPO / "build") / "colors-server" / "colors-server")
GIB = 1 << 30
INTS_PER_LIST = 1 << 17  # 1 MiB of 8-byte slots per shared list

CHECKPOINT_RE = re.compile(
    r"checkpoint (\d+) written to (\S+): (\d+) B of data in (\d+) extent\(s\); (\d+) client process\(es\) "
    r"stopped for (\d+) us \((.*?)\); captured in (\d+) us, written and synced in (\d+) ms \((\d+) MB/s\)")
REPLAY_RE = re.compile(r"then (\d+) log record\(s\) \((\d+) pages, (\d+) B\) in (\d+) ms")
RESTORE_RE = re.compile(r"restored checkpoint (\d+) \((\d+) B of data, heap id (\S+)\) into (\S+) in (\d+) ms")
ADOPT_RE = re.compile(
    r"adopted the heap (\S+) \(heap id (\S+), (\d+) objects, (\d+) B\): .*verified \((\w+)\) in (\d+) ms "
    r"\(checks (\d+) ms, recovery (\d+) ms, verifier (\d+) ms\)")
DD_RE = re.compile(r"^(\d+) bytes .* copied, ([0-9.]+) s", re.MULTILINE)

# The client that fills the heap and asks for checkpoints. Protocol on stdin/stdout, one line each:
# "checkpoint K" -> marks the heap with K (repository durability-mark), calls checkpoint(),
# answers "CHECKPOINT <seq>"; "exit" -> leaves.
FILLER = """
    import sys
    import colors_shm as cs
    cs.attach()
    target = int(sys.argv[1])
    per_list = int(sys.argv[2])
    lists = cs.copy_to([])
    cs.repository("durability").set(lists)
    def used():
        s = cs.heap_stats()
        return s["capacity"] - s["free_bytes"]
    k = 0
    while used() < target:
        lists.append(cs.copy_to(list(range(k * per_list, (k + 1) * per_list))))
        k += 1
    st = cs.collect()
    print("FILLED", k, st.bytes_marked, st.objects_marked, used(), st.total_ns, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "checkpoint":
            cs.repository("durability-mark").set(int(words[1]))
            print("CHECKPOINT", cs.checkpoint(), flush=True)
        elif words[0] == "exit":
            break
    cs.detach()
"""

# A client that writes while checkpoints are taken: one int per 4 KiB page of its own 1 MiB list,
# page after page, for ever. Prints "WRITING" once it has started.
WRITER = """
    import colors_shm as cs
    cs.attach()
    n = 1 << 17
    scratch = cs.copy_to([0] * n)
    cs.repository("durability-scratch").set(scratch)
    print("WRITING", flush=True)
    k = 0
    while True:
        for i in range(0, n, 512):
            scratch[i] = k
        k += 1
"""

# Checks what a restored or adopted heap holds: every list's length and ends, a few lists whole,
# and the mark set before the last checkpoint. Prints "OK ..." or "BAD ...".
CHECKER = """
    import random
    import sys
    import colors_shm as cs
    cs.attach()
    n, per_list, mark = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    lists = cs.repository("durability").get()
    got_mark = cs.repository("durability-mark").get()
    bad = []
    if lists is None:
        bad.append("repository durability is empty")
    else:
        if len(lists) != n:
            bad.append(f"{len(lists)} lists, expected {n}")
        for k, l in enumerate(lists):
            if len(l) != per_list or l[0] != k * per_list or l[-1] != (k + 1) * per_list - 1:
                bad.append(f"list {k}: length {len(l)}, ends {l[0] if len(l) else None}, {l[-1] if len(l) else None}")
                break
        for k in random.Random(n).sample(range(len(lists)), min(8, len(lists))):
            if list(lists[k]) != list(range(k * per_list, (k + 1) * per_list)):
                bad.append(f"list {k} differs from range({k * per_list}, {(k + 1) * per_list})")
    if got_mark != mark:
        bad.append(f"mark {got_mark}, expected {mark} (the last checkpoint's)")
    print(("BAD " + "; ".join(bad)) if bad else f"OK {n} lists, mark {got_mark}", flush=True)
    cs.detach()
"""


def read_line(stream, timeout: float, what: str) -> str:
    """One line from a pipe within `timeout` seconds, else RuntimeError naming `what`."""
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise RuntimeError(f"no answer within {timeout:.0f} s while waiting for {what}")
        return stream.readline()
    finally:
        sel.close()


class Server:
    """One colors-server process; its log (stderr) goes to its own file."""

    def __init__(self, args: list[str], log: str, timeout: float = 120):
        self.log = log
        t0 = time.monotonic()
        with open(log, "w") as f:
            self.proc = subprocess.Popen([SERVER, *args], stdout=subprocess.PIPE, stderr=f, text=True)
        line = read_line(self.proc.stdout, timeout, "the server's ready line")
        self.ready_ms = (time.monotonic() - t0) * 1e3
        if not line.startswith("colors-server ready:"):
            self.kill()
            raise RuntimeError(f"colors-server did not start (exit {self.proc.returncode}):\n{self.text()}")

    def text(self) -> str:
        with open(self.log) as f:
            return f.read()

    def find(self, regex: re.Pattern, count: int = 1, timeout: float = 30) -> list[tuple[re.Match, str]]:
        """The first `count` log lines matching `regex` (waits up to `timeout` for them)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [(m, line) for line in self.text().splitlines() if (m := regex.search(line))]
            if len(found) >= count:
                return found[:count]
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"the server's log has {len(found)} line(s) matching {regex.pattern!r}, "
                                   f"expected {count}; the log:\n{self.text()}")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def dd(args: list[str], verbose) -> float:
    """Runs dd; returns its bandwidth in MB/s (10^6 B/s, as the server's log) from its summary line."""
    r = subprocess.run(["dd", *args], capture_output=True, text=True)
    m = DD_RE.search(r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"dd {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    verbose(f"dd {' '.join(args)}: {m.group(0)}")
    return int(m.group(1)) / float(m.group(2)) / 1e6


def memcpy_ms(n: int) -> float:
    """Milliseconds one copy of n bytes between two buffers whose pages are already mapped takes
    here: what a checkpoint's stop is bound by."""
    src = bytearray(b"\x5a") * n
    dst = bytearray(n)
    dst[:] = src  # faults dst's pages in
    t0 = time.perf_counter()
    dst[:] = src
    return (time.perf_counter() - t0) * 1e3


def resident_bytes(files: list[str]) -> int | None:
    """Bytes of `files` in the page cache (util-linux fincore), or None without fincore."""
    if not files or shutil.which("fincore") is None:
        return None
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *files], capture_output=True, text=True)
    return sum(int(x) for x in r.stdout.split()) if r.returncode == 0 else None


def evict_from_page_cache(directory: str) -> None:
    """Drops the (clean, fsync'ed) pages of the checkpoint files from the page cache, as a reboot
    would, without touching the rest of the machine's cache."""
    for name in os.listdir(directory):
        if name.endswith(".ckpt"):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def python_child(script: str, *argv: object, env: dict[str, str], stdin=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *map(str, argv)], env=env,
                            stdin=stdin, stdout=subprocess.PIPE, text=True)


def check_heap(env: dict[str, str], lists: int, mark: int, what: str) -> str:
    checker = python_child(CHECKER, lists, INTS_PER_LIST, mark, env=env)
    out, _ = checker.communicate(timeout=120)
    if checker.returncode != 0 or not out.startswith("OK"):
        raise RuntimeError(f"the {what} heap does not hold what was checkpointed: {out.strip()} "
                           f"(checker exit {checker.returncode})")
    return out.strip()


COMMITTER = """
import sys, colors_shm as cs
n = int(sys.argv[1])
box = cs.copy_to([0])
cs.repository("durability.box").set(box)
def bump():
    box[0] = box[0] + 1
for _ in range(n):
    cs.atomically(bump)
print("COMMITTED", box[0], flush=True)
cs.detach()
"""


def measure_replay(records: int, heap_parent: str, data_parent: str, verbose) -> dict:
    """Step 5: the replay of `records` log records after a reboot (a small heap, --durability full)."""
    base = tempfile.mkdtemp(prefix="colors-durability-log-", dir="/tmp")
    heap_dir = tempfile.mkdtemp(prefix="colors-durability-heap-", dir=heap_parent)
    data_dir = tempfile.mkdtemp(prefix="colors-durability-data-", dir=data_parent)
    name = f"durability-log-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    sock = os.path.join(base, "colors.sock")
    flags = ["--name", name, "--socket", sock, "--heap-dir", heap_dir, "--data-dir", data_dir,
             "--checkpoint-interval", "0", "--heap-size", "64M", "--durability", "full"]
    env = dict(os.environ, COLORS_SOCKET=sock)
    servers = []
    try:
        first = Server(flags, os.path.join(base, "first.log"))
        servers.append(first)
        t0 = time.monotonic()
        c = python_child(COMMITTER, records, env=env)
        out, _ = c.communicate(timeout=600)
        commit_s = time.monotonic() - t0
        if c.returncode != 0 or not out.startswith("COMMITTED"):
            raise RuntimeError(f"the committing client failed (exit {c.returncode}): {out}")
        first.kill()
        os.unlink(os.path.join(heap_dir, f"{name}.heap"))
        evict_from_page_cache(data_dir)
        restored = Server(flags, os.path.join(base, "restored.log"))
        servers.append(restored)
        (m, line), = restored.find(REPLAY_RE)
        verbose(line)
        check = python_child("import colors_shm as cs; print(cs.repository('durability.box').get()[0])", env=env)
        got, _ = check.communicate(timeout=60)
        if int(got) != records:
            raise RuntimeError(f"the restored counter is {got.strip()}, {records} commits were acknowledged")
        return {"records": int(m.group(1)), "pages": int(m.group(2)), "bytes": int(m.group(3)), "ms": int(m.group(4)),
                "commit_s": commit_s}
    finally:
        for s in servers:
            s.kill()
        for d in (base, heap_dir, data_dir):
            shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heap-gib", type=float, default=1.0, help="objects space of the server (default 1)")
    ap.add_argument("--fill-gib", type=float, default=0.75, help="live data to fill in (default 0.75)")
    ap.add_argument("--checkpoints", type=int, default=3, help="checkpoints (and dd rounds) to take (default 3)")
    ap.add_argument("--dd-mib", type=int, default=1024, help="MiB dd writes and reads per round (default 1024)")
    ap.add_argument("--data-parent", default="/tmp",
                    help="where the data directory is made: the disk measured (default /tmp)")
    ap.add_argument("--heap-parent", default="/dev/shm",
                    help="where the heap directory is made: tmpfs, as the server's default (default /dev/shm)")
    ap.add_argument("--log-records", type=int, default=3000,
                    help="transactions committed under --durability full for the replay measure (default 3000)")
    ap.add_argument("--verbose", action="store_true", help="print the log lines and dd output parsed")
    a = ap.parse_args()
    if a.fill_gib <= 0 or a.fill_gib > 0.85 * a.heap_gib:
        ap.error("--fill-gib must be above 0 and at most 85% of --heap-gib")
    if a.checkpoints < 1:
        ap.error("--checkpoints must be at least 1")

    base = tempfile.mkdtemp(prefix="colors-durability-", dir="/tmp")
    heap_dir = tempfile.mkdtemp(prefix="colors-durability-heap-", dir=a.heap_parent)
    data_dir = tempfile.mkdtemp(prefix="colors-durability-data-", dir=a.data_parent)
    name = f"durability-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    sock = os.path.join(base, "colors.sock")
    heap_file = os.path.join(heap_dir, f"{name}.heap")
    flags = ["--name", name, "--socket", sock, "--heap-dir", heap_dir, "--data-dir", data_dir,
             "--checkpoint-interval", "0", "--heap-size", f"{int(a.heap_gib * 1024)}M",
             # Above the fill, so the collector does not run back to back once the live data
             # passes the default 70 %.
             "--gc-threshold", "90"]
    env = dict(os.environ, COLORS_SOCKET=sock)
    servers: list[Server] = []
    children: list[subprocess.Popen] = []
    verbose = (lambda *s: print("   ", *s, flush=True)) if a.verbose else (lambda *s: None)

    def start(label: str) -> Server:
        s = Server(flags, os.path.join(base, f"{label}.log"))
        servers.append(s)
        return s

    try:
        print(f"colors-server {SERVER}\nheap dir {heap_dir}, data dir {data_dir} "
              f"({subprocess.run(['df', '--output=fstype', data_dir], capture_output=True, text=True).stdout.split()[-1]}), "
              f"heap {a.heap_gib:g} GiB, fill {a.fill_gib:g} GiB", flush=True)
        first = start("first")
        t0 = time.monotonic()
        filler = python_child(FILLER, int(a.fill_gib * GIB), INTS_PER_LIST, env=env, stdin=subprocess.PIPE)
        children.append(filler)
        filled = read_line(filler.stdout, 150, "the client's fill").split()
        if not filled or filled[0] != "FILLED":
            raise RuntimeError(f"the filling client failed (exit {filler.wait()}); server log:\n{first.text()}")
        lists, live_bytes, live_objects, used, cycle_ns = (int(x) for x in filled[1:])
        print(f"filled {lists} lists of {INTS_PER_LIST} ints in {time.monotonic() - t0:.1f} s: "
              f"{live_bytes / GIB:.3f} GiB live in {live_objects} objects, heap used {used / GIB:.3f} GiB; "
              f"a collector cycle over it took {cycle_ns / 1e6:.0f} ms", flush=True)

        dd_file = os.path.join(data_dir, "dd.tmp")
        count = max(1, a.dd_mib // 4)
        dd_write, dd_read, ckpts = [], [], []
        writer = None
        # The first --checkpoints rounds with the filling client idle (waiting for its checkpoint),
        # as many more with a second client writing throughout.
        for k in range(1, 2 * a.checkpoints + 1):
            if k == a.checkpoints + 1:
                writer = python_child(WRITER, env=env)
                children.append(writer)
                if read_line(writer.stdout, 60, "the writing client").split() != ["WRITING"]:
                    raise RuntimeError(f"the writing client failed (exit {writer.wait()})")
            try:
                dd_write.append(dd(["if=/dev/zero", f"of={dd_file}", "bs=4M", f"count={count}", "oflag=direct",
                                    "conv=fsync"], verbose))
                dd_read.append(dd([f"if={dd_file}", "of=/dev/null", "bs=4M", "iflag=direct"], verbose))
            finally:
                if os.path.exists(dd_file):
                    os.unlink(dd_file)
            filler.stdin.write(f"checkpoint {k}\n")
            filler.stdin.flush()
            answer = read_line(filler.stdout, 120, f"checkpoint {k}").split()
            if not answer or answer[0] != "CHECKPOINT":
                raise RuntimeError(f"checkpoint {k} failed in the client; server log:\n{first.text()}")
            m, line = first.find(CHECKPOINT_RE, count=k)[-1]
            if int(m.group(1)) != int(answer[1]):
                raise RuntimeError(f"the client got checkpoint {answer[1]}, the log says {line}")
            verbose(line)
            ckpts.append({"bytes": int(m.group(3)), "processes": int(m.group(5)), "stop_us": int(m.group(6)),
                          "how": m.group(7), "capture_us": int(m.group(8)), "write_ms": int(m.group(9)),
                          "mbs": int(m.group(10)), "writing": writer is not None})
        last_seq = int(answer[1])
        if writer is not None:
            writer.kill()
            writer.wait()
        filler.stdin.write("exit\n")
        filler.stdin.flush()
        if filler.wait(timeout=60) != 0:
            raise RuntimeError(f"the filling client exited with {filler.returncode}")

        # A reboot: no process, no heap in tmpfs, a cold page cache for the checkpoint files.
        first.kill()
        os.unlink(heap_file)
        evict_from_page_cache(data_dir)
        ckpt_files = sorted(os.path.join(data_dir, f) for f in os.listdir(data_dir) if f.endswith(".ckpt"))
        cached = resident_bytes(ckpt_files)
        verbose(f"checkpoint files {[os.path.basename(f) for f in ckpt_files]}: "
                f"{'unknown (no fincore)' if cached is None else cached} B in the page cache before the restart")
        restored = start("restored")
        (rm, rline), = restored.find(RESTORE_RE)
        (am, aline), = restored.find(ADOPT_RE)
        verbose(rline)
        verbose(aline)
        if int(rm.group(1)) != last_seq:
            raise RuntimeError(f"restored checkpoint {rm.group(1)}, the newest written was {last_seq}: {rline}")
        print(f"restored heap: {check_heap(env, lists, 2 * a.checkpoints, 'restored')}", flush=True)
        restore = {"seq": int(rm.group(1)), "bytes": int(rm.group(2)), "ms": int(rm.group(5)),
                   "adopt_ms": int(am.group(6)), "mode": am.group(5), "checks": am.group(7),
                   "recovery": am.group(8), "verifier": am.group(9), "ready_ms": restored.ready_ms}

        # A crash without a reboot: the heap file stays and the successor adopts it as it is.
        restored.kill()
        successor = start("successor")
        (sm, sline), = successor.find(ADOPT_RE)
        verbose(sline)
        if "restored checkpoint" in successor.text():
            raise RuntimeError(f"the successor restored a checkpoint instead of adopting the heap:\n{successor.text()}")
        print(f"adopted heap: {check_heap(env, lists, 2 * a.checkpoints, 'adopted')}", flush=True)
        adopt = {"ms": int(sm.group(6)), "mode": sm.group(5), "checks": sm.group(7), "recovery": sm.group(8),
                 "verifier": sm.group(9), "bytes": int(sm.group(4)), "objects": int(sm.group(3)),
                 "ready_ms": successor.ready_ms}
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
        for s in servers:
            s.kill()
        for d in (base, heap_dir, data_dir):
            shutil.rmtree(d, ignore_errors=True)

    replay = measure_replay(a.log_records, a.heap_parent, a.data_parent, verbose)
    copy_ms = memcpy_ms(ckpts[-1]["bytes"])
    med = statistics.median
    dd_w, dd_r = med(dd_write), med(dd_read)
    ck_mbs = med(c["mbs"] for c in ckpts)
    data = med(c["bytes"] for c in ckpts)
    idle = [c for c in ckpts if not c["writing"]]
    busy = [c for c in ckpts if c["writing"]]
    stop_ms_per_gib = med(c["stop_us"] / 1e3 / (c["bytes"] / GIB) for c in busy)
    restore_ms_per_gib = restore["ms"] / (restore["bytes"] / GIB)
    dd_read_ms_per_gib = GIB / (dd_r * 1e6) * 1e3
    rows = [
        ("disk write, dd O_DIRECT + fsync (median)", f"{dd_w:.0f} MB/s",
         "rounds: " + ", ".join(f"{x:.0f}" for x in dd_write)),
        ("disk read, dd O_DIRECT (median)", f"{dd_r:.0f} MB/s", "rounds: " + ", ".join(f"{x:.0f}" for x in dd_read)),
        ("checkpoint data (median)", f"{data / GIB:.3f} GiB",
         f"{live_bytes / GIB:.3f} GiB live; {ckpts[0]['processes']} client process(es)"),
        ("checkpoint write + fsync (median)", f"{ck_mbs:.0f} MB/s",
         "checkpoints: " + ", ".join(f"{c['mbs']} MB/s in {c['write_ms']} ms" for c in ckpts)),
        ("  / dd write", f"{ck_mbs / dd_w:.2f}", "target >= 0.50: " + ("met" if ck_mbs / dd_w >= 0.5 else "NOT met")),
        ("clients stopped, idle clients (median)", f"{med(c['stop_us'] / 1e3 for c in idle):.2f} ms",
         "stops: " + "; ".join(f"{c['stop_us'] / 1e3:.2f} ms ({c['how']})" for c in idle)
         + "; captures: " + ", ".join(f"{c['capture_us'] / 1e3:.0f} ms" for c in idle)),
        ("clients stopped per GiB, a client writing (median)", f"{stop_ms_per_gib:.2f} ms",
         "stops: " + "; ".join(f"{c['stop_us'] / 1e3:.2f} ms ({c['how']})" for c in busy)
         + "; captures: " + ", ".join(f"{c['capture_us'] / 1e3:.0f} ms" for c in busy)),
        ("  / one memcpy of the same bytes", f"{med(c['stop_us'] / 1e3 for c in busy) / copy_ms:.3f}",
         f"memcpy of {ckpts[-1]['bytes'] / GIB:.3f} GiB between mapped buffers: {copy_ms:.1f} ms"),
        ("restore per GiB of checkpoint data", f"{restore_ms_per_gib:.0f} ms",
         f"checkpoint {restore['seq']}: {restore['bytes'] / GIB:.3f} GiB in {restore['ms']} ms, cold page cache"),
        ("  / dd read per GiB", f"{restore_ms_per_gib / dd_read_ms_per_gib:.2f}", f"dd read: {dd_read_ms_per_gib:.0f} ms per GiB"),
        ("adopt + verify the restored heap", f"{restore['adopt_ms']} ms",
         f"{restore['mode']}: checks {restore['checks']}, recovery {restore['recovery']}, verifier {restore['verifier']} ms;"
         f" ready {restore['ready_ms']:.0f} ms after exec"),
        ("successor adopt + verify (no checkpoint)", f"{adopt['ms']} ms",
         f"{adopt['mode']}: checks {adopt['checks']}, recovery {adopt['recovery']}, verifier {adopt['verifier']} ms;"
         f" {adopt['objects']} objects, {adopt['bytes'] / GIB:.3f} GiB; ready {adopt['ready_ms']:.0f} ms after exec"),
        ("  / one collector cycle over the same data", f"{adopt['ms'] / (cycle_ns / 1e6):.1f}",
         f"the cycle after the fill: {cycle_ns / 1e6:.0f} ms"),
        ("log replay per 100k records", f"{replay['ms'] * 100000 / max(replay['records'], 1):.0f} ms",
         f"{replay['records']} records ({replay['pages']} pages, {replay['bytes'] / 1e6:.1f} MB) replayed in {replay['ms']} ms, "
         f"cold page cache; written by {a.log_records} commits under --durability full in {replay['commit_s']:.1f} s"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print()
    for label, value, note in rows:
        print(f"{label:<{w0}}  {value:>{w1}}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
