"""The tree node of the colors rows, shared as "bench.Node": the name of the Java side's
`@Shared(name = "bench.Node")` class (java/colors/bench/ColorsServer.java), so both languages read
the same nodes as their own class. Used by the colors adapter (frameworks/colors.py: the client's
inputs) and the Python server of the Java client -> Python server row (colors_py_server.py)."""

from __future__ import annotations

from typing import Optional

SHARED_NAME = "bench.Node"


class Node:
    """A tree node: int64 i, double f, bool b, str s and two children (None at the leaves)."""

    i: int
    f: float
    b: bool
    s: str
    left: Optional["Node"]
    right: Optional["Node"]

    def __init__(self, i, f, b, s, left=None, right=None):
        self.i, self.f, self.b, self.s, self.left, self.right = i, f, b, s, left, right
