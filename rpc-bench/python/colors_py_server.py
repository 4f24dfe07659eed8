"""The Python colors server of the "Java client -> Python server" row (colors floors).

    COLORS_SOCKET=<heap socket> python3 colors_py_server.py <endpoint>

Serves `endpoint` with colors_shm.rpc (one serving thread) with the methods of the Java servers
(bools, ints, floats, strings, trees): each takes the caller's shared list and returns a new list
derived by the rules of java/src/main/java/bench/Derive.java (workload.derive_scalar; nodes
derive every field alike and mirror the children). The reply is built as private Python objects
(a list of values, or of `Node`s) that colors_shm.rpc copies into the heap in one `copy_to`;
`Node` is registered as the shared class "bench.Node", the name of the Java client's
`@Shared(name = "bench.Node")` class, so the client reads the nodes as Java objects.
Prints READY once serving and exits when stdin closes, like the Java servers.
"""

from __future__ import annotations

import sys

import colors_shm as cs
from colors_shm import rpc
from shared_node import SHARED_NAME, Node


def _derive(p) -> Node:
    left, right = p.left, p.right
    return Node(p.i + 1, p.f * 0.5 + 1.0, not p.b, p.s[::-1],
                _derive(left) if left is not None else None,
                _derive(right) if right is not None else None)


class Handler:
    """Derive.java's rules, one method per kind (the names the Java servers use)."""

    def bools(self, xs):
        return [not v for v in xs]

    def ints(self, xs):
        return [v + 1 for v in xs]

    def floats(self, xs):
        return [v * 0.5 + 1.0 for v in xs]

    def strings(self, xs):
        return [v[::-1] for v in xs]

    def trees(self, xs):
        return [_derive(p) for p in xs]


def main() -> int:
    endpoint = sys.argv[1]
    cs.register(Node, SHARED_NAME)
    srv = rpc.serve(endpoint, Handler())
    print("READY", flush=True)
    sys.stdin.read()  # until the harness closes our stdin (or dies)
    srv.stop()
    cs.detach()
    return 0


if __name__ == "__main__":
    sys.exit(main())
