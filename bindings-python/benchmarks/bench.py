"""Benchmarks of the Python binding (`make bench`; `--quick` for a short run).

Every row is a ratio against a baseline measured in the same run:
  * attribute read/write of an int, a float and a str field on a shared object vs a private
    instance of the class, each net of the timing loop;
  * 1024 depth-4 binary trees handed to another process: copy_to + channel + full traversal in the
    receiver, vs pickle.dumps + pipe + pickle.loads + the same traversal (end to end, including a
    one-word reply so both sides time the same round trip);
  * iteration over a list of 1M ints, shared vs private;
  * copy_to of plain data (lists of ints, strings, lists of floats, dicts): built in a read scope vs the
    per-object copy of the same data (a list subclass at the root makes copy_to take it), and a
    pickle.dumps + loads round trip of the same data (`--copies`: this section only);
  * uncontended single operations on a shared list and dict (append, get, set, pop, d[k], d[k] = v)
    vs the same on a private list and dict (`--containers`: this section only, and `--json` to
    print its ns per operation, which ab_containers.py uses to compare two builds).
Starts its own colors-server (as the tests do: $COLORS_SERVER_BIN or build/colors-server).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import pickle
import statistics
import struct
import subprocess
import sys
import textwrap
import time
import timeit

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import Server, child_env  # noqa: E402  (the tests' server launcher)

import bench_types  # noqa: E402
from bench_types import make_tree, walk  # noqa: E402


def best_ns(stmt: str, obj, number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, globals={"o": obj}, number=number, repeat=repeat)) / number * 1e9


def access_ns(stmt: str, obj, number: int) -> float:
    """ns per execution of `stmt` net of the loop: the statement unrolled UNROLL times per pass,
    minus the same loop passing, best of three."""
    body = "; ".join([stmt] * UNROLL)
    t = min(timeit.repeat(body, globals={"o": obj}, number=number, repeat=3))
    loop = min(timeit.repeat("pass", globals={"o": obj}, number=number, repeat=3))
    return max(t - loop, 0.0) / (number * UNROLL) * 1e9


UNROLL = 20


def attributes(cs, quick: bool) -> None:
    """Field reads and writes of a dataclass instance, shared vs private, net of the loop, in
    interleaved rounds: medians of the per-round ns and of the per-round ratios."""
    number, rounds = (5_000, 3) if quick else (20_000, 9)
    private = bench_types.Record(1, 2.0, "seven")
    shared = cs.allocate(bench_types.Record, 1, 2.0, "seven")
    print(f"attribute access on a dataclass instance (ns per access net of the loop; medians of {rounds} rounds)")
    print(f"  {'operation':<22}{'private':>10}{'shared':>10}{'ratio':>8}   target")
    rows = [
        ("read int field", "o.i", "<= 1.3"),
        ("read float field", "o.f", "<= 1.5"),
        ("read str field", "o.s", "<= 2"),
        ("write int field", "o.i = 5", "<= 1.5"),
        ("write float field", "o.f = 2.5", "<= 1.5"),
        ("write str field", "o.s = 'eight'", "<= 2.5"),
    ]
    for label, stmt, target in rows:
        ps, ss, rs = [], [], []
        for _ in range(rounds):
            p = access_ns(stmt, private, number)
            s = access_ns(stmt, shared, number)
            ps.append(p)
            ss.append(s)
            rs.append(s / max(p, 0.01))
        p, s, r = statistics.median(ps), statistics.median(ss), statistics.median(rs)
        print(f"  {label:<22}{p:>10.1f}{s:>10.1f}{r:>8.2f}   {target}")
    # The floor of any attribute computed in C: CPython specialises LOAD_ATTR/STORE_ATTR for
    # instance dicts and __slots__, not for other descriptors, which take the generic path (a
    # shared field's descriptor is one). A builtin getset that allocates nothing shows its cost.
    def func():
        pass

    floors = [("C getset read (int.numerator)", "o.i", "o.numerator", 12345),
              ("C getset write (function.__doc__)", "o.i = 5", "o.__doc__ = 'x'", func)]
    for label, mine, stmt, obj in floors:
        rs = [access_ns(stmt, obj, number) / max(access_ns(mine, private, number), 0.01) for _ in range(rounds)]
        print(f"  floor: {label} vs private {mine!r}: {statistics.median(rs):.2f}x")


RECEIVER = textwrap.dedent(
    """
    import os, pickle, struct, sys
    sys.path.insert(0, {here!r})
    from bench_types import walk
    mode, rounds = sys.argv[1], int(sys.argv[2])
    if mode == "colors":
        import colors_shm as cs
        inbox, outbox = cs.channel({inbox!r}), cs.channel({outbox!r})
        outbox.send(0)  # ready
        for _ in range(rounds):
            trees = inbox.receive()
            outbox.send(walk(trees))
            del trees
    else:
        rd, wr = sys.stdin.buffer, sys.stdout.buffer
        for _ in range(rounds):
            (n,) = struct.unpack("<Q", rd.read(8))
            trees = pickle.loads(rd.read(n))
            wr.write(struct.pack("<d", walk(trees)))
            wr.flush()
    """
)


def trees(cs, quick: bool) -> None:
    count, depth = 1024, 4
    rounds = 5 if quick else 15
    private = [make_tree(depth, k) for k in range(count)]
    expected = walk(private)
    nodes = count * (2**depth - 1)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    inbox, outbox = f"bench-in-{tag}", f"bench-out-{tag}"
    code = RECEIVER.format(here=str(HERE), inbox=inbox, outbox=outbox)

    # colors: copy_to + channel + traversal in the receiver
    send, reply = cs.channel(inbox, 4), cs.channel(outbox, 4)
    rx = subprocess.Popen([sys.executable, "-c", code, "colors", str(rounds)], env=child_env())
    reply.receive(timeout=30)
    times_c = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        send.send(cs.copy_to(private))
        got = reply.receive(timeout=60)
        times_c.append(time.perf_counter() - t0)
        assert abs(got - expected) < 1e-6 * abs(expected), (got, expected)
    rx.wait(timeout=30)

    # pickle: dumps + pipe + loads + traversal in the receiver
    rx = subprocess.Popen([sys.executable, "-c", code, "pickle", str(rounds)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=child_env())
    times_p = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        data = pickle.dumps(private, protocol=pickle.HIGHEST_PROTOCOL)
        rx.stdin.write(struct.pack("<Q", len(data)) + data)
        rx.stdin.flush()
        (got,) = struct.unpack("<d", rx.stdout.read(8))
        times_p.append(time.perf_counter() - t0)
        assert abs(got - expected) < 1e-6 * abs(expected), (got, expected)
    rx.stdin.close()
    rx.wait(timeout=30)

    c, p = statistics.median(times_c) * 1e3, statistics.median(times_p) * 1e3
    t0 = time.perf_counter()
    shared = cs.copy_to(private)
    copy_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    walk(shared)
    walk_shared_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    walk(private)
    walk_private_ms = (time.perf_counter() - t0) * 1e3
    print(f"\n{count} depth-{depth} trees ({nodes} nodes, 4 scalar fields each) to another process and traversed there"
          f" (median of {rounds} ms)")
    print(f"  pickle + pipe + loads + walk   {p:8.2f} ms")
    print(f"  copy_to + channel + walk       {c:8.2f} ms   speed-up {p / c:.2f}x   target >= 2")
    print(f"  (in this process: copy_to {copy_ms:.2f} ms, walk shared {walk_shared_ms:.2f} ms,"
          f" walk private {walk_private_ms:.2f} ms)")


def iteration(cs, quick: bool) -> None:
    n = 200_000 if quick else 1_000_000
    private = list(range(n))
    shared = cs.copy_to(private)

    def loop(xs):
        for _ in xs:
            pass

    def best(f, xs):
        return min(timeit.repeat(lambda: f(xs), number=1, repeat=3 if quick else 5)) * 1e3

    print(f"\niteration over a list of {n} ints (ms, best of runs)")
    for label, f in [("for x in l: pass", loop), ("sum(l)", sum)]:
        p, s = best(f, private), best(f, shared)
        print(f"  {label:<18} private {p:8.2f}  shared {s:8.2f}  ratio {s / p:6.2f}")


CONTAINER_OPS = [
    # label, setup statement, timed statement (o: the list or dict)
    ("list append", "", "o.append(7)"),
    ("list get", "", "o[5]"),
    ("list get [-1]", "", "o[-1]"),
    ("list set", "", "o[5] = 9"),
    ("list append+pop", "", "o.append(1); o.pop()"),
    ("dict get", "", "o[5]"),
    ("dict set", "", "o[5] = 9"),
]


class _SubList(list):
    """Not a plain tree: copy_to copies it (and what it holds) object by object."""


class _Record:
    """A private class: its instances, every field set, are plain data to copy_to."""

    id: int
    name: str
    tags: list
    score: float

    def __init__(self, i: int):
        self.id, self.name, self.tags, self.score = i, "n-%06d" % i, ["a", "b"], i / 3


def copies(cs, quick: bool) -> None:
    print("\ncopy_to of plain data (ns per element (a record or instance: its 4 values and 2 tags), median of runs;"
          " per-object: the same data under a list subclass; pickle: dumps + loads)")
    print(f"  {'data':<28}{'copy_to':>10}{'per-object':>12}{'pickle':>10}{'per-object/copy_to':>21}")
    data = [("1000 ints", list(range(1000)), 1000),
            ("1000 strings (11 chars)", ["node-%06d" % i for i in range(1000)], 1000),
            ("100 x 10 floats", [[i + 0.25 * j for j in range(10)] for i in range(100)], 1000),
            ("200 records (dicts of 4)", [{"id": i, "name": "n-%06d" % i, "tags": ["a", "b"], "score": i / 3}
                                          for i in range(200)], 1200),
            ("200 instances (4 fields)", [_Record(i) for i in range(200)], 1200)]
    number, runs = (50, 5) if quick else (300, 9)
    for label, x, elements in data:
        sub = _SubList(x)
        fast, slow, pick, ratio = [], [], [], []
        for _ in range(runs):  # interleaved: a burst of load hits all three alike
            f = timeit.timeit(lambda: cs.copy_to(x), number=number) / number / elements * 1e9
            s = timeit.timeit(lambda: cs.copy_to(sub), number=number) / number / elements * 1e9
            p = timeit.timeit(lambda: pickle.loads(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)),
                              number=number) / number / elements * 1e9
            fast.append(f)
            slow.append(s)
            pick.append(p)
            ratio.append(s / f)
        print(f"  {label:<28}{statistics.median(fast):>10.1f}{statistics.median(slow):>12.1f}"
              f"{statistics.median(pick):>10.1f}{statistics.median(ratio):>20.2f}x")


def container_ns(cs, quick: bool) -> dict[str, tuple[float, float]]:
    """ns per operation, (private, shared), best of runs, for CONTAINER_OPS."""
    n, rep = (20_000, 3) if quick else (100_000, 7)
    out = {}
    for label, _, stmt in CONTAINER_OPS:
        times = []
        for shared in (False, True):
            base = dict.fromkeys(range(10), 1) if label.startswith("dict") else list(range(10))
            o = cs.copy_to(base) if shared else base
            t = best_ns(stmt, o, n, rep)
            if label == "list append":  # the list grew by n * (rep + 1): keep the next rows comparable
                o.clear()
            times.append(t)
        out[label] = (times[0], times[1])
    return out


def containers(cs, quick: bool) -> None:
    print("\nuncontended container operations (ns per operation, best of runs)")
    print(f"  {'operation':<16}{'private':>10}{'shared':>10}{'ratio':>8}")
    for label, (p, s) in container_ns(cs, quick).items():
        print(f"  {label:<16}{p:>10.1f}{s:>10.1f}{s / p:>8.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    ap.add_argument("--containers", action="store_true", help="only the container operations section")
    ap.add_argument("--copies", action="store_true", help="only the copy_to section")
    ap.add_argument("--json", action="store_true", help="with --containers: print {label: [private, shared]} as JSON")
    args = ap.parse_args()
    srv = Server(heap="256M")
    os.environ["COLORS_SOCKET"] = srv.socket
    try:
        import colors_shm as cs

        if args.containers:
            if args.json:
                import json

                print(json.dumps(container_ns(cs, args.quick)))
            else:
                containers(cs, args.quick)
            cs.detach()
            return 0
        if args.copies:
            copies(cs, args.quick)
            cs.detach()
            return 0
        cs.register(bench_types.TreeNode)
        attributes(cs, args.quick)
        trees(cs, args.quick)
        iteration(cs, args.quick)
        copies(cs, args.quick)
        containers(cs, args.quick)
        cs.detach()
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
