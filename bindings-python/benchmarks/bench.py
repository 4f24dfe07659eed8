"""Benchmarks of the Python binding (`make bench`; `--quick` for a short run).

Every row is a ratio against a baseline measured in the same run:
  * attribute read/write of a scalar field on a shared object vs a private instance of the class;
  * 1024 depth-4 binary trees handed to another process: copy_to + channel + full traversal in the
    receiver, vs pickle.dumps + pipe + pickle.loads + the same traversal (end to end, including a
    one-word reply so both sides time the same round trip);
  * iteration over a list of 1M ints, shared vs private;
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
from bench_types import Point, make_tree, walk  # noqa: E402


def best_ns(stmt: str, obj, number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, globals={"o": obj}, number=number, repeat=repeat)) / number * 1e9


def attributes(cs, quick: bool) -> None:
    n, rep = (100_000, 3) if quick else (500_000, 7)
    private = Point(1, 2.0)
    shared = cs.allocate(Point, 1, 2.0)
    print("attribute access on a dataclass instance (ns per access, best of runs)")
    print(f"  {'operation':<22}{'private':>10}{'shared':>10}{'ratio':>8}   target")
    for label, stmt, target in [
        ("read int field", "o.x", "<= 2"),
        ("write int field", "o.x = 5", "<= 3"),
        ("read float field", "o.y", "<= 2"),
        ("write float field", "o.y = 2.5", "<= 3"),
    ]:
        p = best_ns(stmt, private, n, rep)
        s = best_ns(stmt, shared, n, rep)
        print(f"  {label:<22}{p:>10.1f}{s:>10.1f}{s / p:>8.2f}   {target}")


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
        cs.register(bench_types.TreeNode)
        attributes(cs, args.quick)
        trees(cs, args.quick)
        iteration(cs, args.quick)
        containers(cs, args.quick)
        cs.detach()
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
