"""The workload of section 6.2: element kinds, list sizes, input values, the server's derivation
rules, and the read-and-checksum walkers shared by every framework.

Every framework builds the same logical input (element k of a scalar list, node c of the trees
in preorder over the whole list) in its own client types; the server answers with a new list of
the same shape whose elements it derives from the input (see java/src/main/java/bench/Derive.java).
A reply is checked by reading every element and field into a checksum and comparing it with the
checksum of the expected reply computed here on private Python objects.
"""

from __future__ import annotations

import math

SCALAR_KINDS = ("bool", "int", "float", "string")
TREE_KINDS = ("tree1", "tree2", "tree3", "tree4")
KINDS = SCALAR_KINDS + TREE_KINDS
SIZES = tuple(2**e for e in range(11))  # 1 .. 1024


def tree_depth(kind: str) -> int:
    """1..4 for tree kinds, 0 for scalar kinds."""
    return int(kind[4:]) if kind.startswith("tree") else 0


def nodes_per_element(kind: str) -> int:
    d = tree_depth(kind)
    return 2**d - 1 if d else 1


# ---- input values -------------------------------------------------------------------------

def scalar_value(kind: str, k: int):
    """Element k of a scalar list of this kind (strings: 12 characters)."""
    if kind == "bool":
        return k % 3 == 0
    if kind == "int":
        return k * 1_000_003 - 7
    if kind == "float":
        return k * 0.37 + 0.5
    if kind == "string":
        return f"str{k:06d}-xyz"
    raise ValueError(kind)


def node_fields(c: int):
    """(i, f, b, s) of tree node number c (preorder over the whole list; s has 11 characters)."""
    return c * 31 - 5, c * 0.25 + 0.125, c % 2 == 0, f"node-{c:06d}"


def build_trees(n: int, depth: int, make):
    """n complete binary trees of `depth` levels; make(i, f, b, s, left, right) builds one node
    in the caller's types (None for absent children). Nodes are numbered in preorder."""
    counter = 0

    def build(level):
        nonlocal counter
        c = counter
        counter += 1
        left = build(level + 1) if level < depth else None
        right = build(level + 1) if level < depth else None
        return make(*node_fields(c), left, right)

    return [build(1) for _ in range(n)]


# ---- the server's derivation (mirrors Derive.java) ----------------------------------------

def derive_scalar(kind: str, v):
    if kind == "bool":
        return not v
    if kind == "int":
        return v + 1
    if kind == "float":
        return v * 0.5 + 1.0
    if kind == "string":
        return v[::-1]
    raise ValueError(kind)


# ---- private Python objects (the reference model and the read floor) ----------------------

class PNode:
    """A tree node as a plain Python object."""

    def __init__(self, i, f, b, s, left=None, right=None):
        self.i = i
        self.f = f
        self.b = b
        self.s = s
        self.left = left
        self.right = right


def private_input(kind: str, n: int) -> list:
    depth = tree_depth(kind)
    if depth:
        return build_trees(n, depth, PNode)
    return [scalar_value(kind, k) for k in range(n)]


def _derive_node(p: PNode) -> PNode:
    return PNode(p.i + 1, p.f * 0.5 + 1.0, not p.b, p.s[::-1],
                 _derive_node(p.left) if p.left is not None else None,
                 _derive_node(p.right) if p.right is not None else None)


def private_reply(kind: str, n: int) -> list:
    """The reply the server must give for the input of (kind, n), as private Python objects."""
    if tree_depth(kind):
        return [_derive_node(p) for p in private_input(kind, n)]
    return [derive_scalar(kind, v) for v in private_input(kind, n)]


# ---- readers: read every element and every field, return a checksum -----------------------
# One formula for everyone: scalars add up (bool as 0/1; a string adds its length and the code of
# its first character); a node adds i + f + b + len(s) and its children.

def read_scalars(kind: str, seq) -> float:
    acc = 0
    if kind == "string":
        for s in seq:
            acc += len(s) + ord(s[0])
    else:
        for v in seq:
            acc += v
    return float(acc)


def read_attr_trees(seq) -> float:
    """Trees whose nodes expose fields as attributes, children None at the leaves (private
    objects, Thrift structs, ...)."""

    def walk(p):
        acc = p.i + p.f + p.b + len(p.s)
        left = p.left
        if left is not None:
            acc += walk(left)
        right = p.right
        if right is not None:
            acc += walk(right)
        return acc

    acc = 0.0
    for p in seq:
        acc += walk(p)
    return acc


def read_dict_trees(seq) -> float:
    """Trees as decoded JSON: dicts with keys i, f, b, s, left, right (None at the leaves)."""

    def walk(p):
        acc = p["i"] + p["f"] + p["b"] + len(p["s"])
        left = p["left"]
        if left is not None:
            acc += walk(left)
        right = p["right"]
        if right is not None:
            acc += walk(right)
        return acc

    acc = 0.0
    for p in seq:
        acc += walk(p)
    return acc


def read_private(kind: str, seq) -> float:
    return read_attr_trees(seq) if tree_depth(kind) else read_scalars(kind, seq)


def expected_checksum(kind: str, n: int) -> float:
    return read_private(kind, private_reply(kind, n))


def same_checksum(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
