"""Classes used by the benchmarks, importable by name in both processes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Record:
    """One field of each scalar kind the attribute benchmark reads and writes."""

    i: int
    f: float
    s: str


@dataclass
class TreeNode:
    """A binary tree node with 4 scalar fields (as in the paper's RPC benchmark, section 6.2)."""

    i: int
    f: float
    b: bool
    s: str
    left: Optional[TreeNode] = None
    right: Optional[TreeNode] = None


def make_tree(depth: int, seed: int) -> TreeNode:
    node = TreeNode(seed, seed * 0.5, seed % 2 == 0, f"n{seed}")
    if depth > 1:
        node.left = make_tree(depth - 1, seed * 2 + 1)
        node.right = make_tree(depth - 1, seed * 2 + 2)
    return node


def walk(trees) -> float:
    """Reads every field of every node; returns a checksum."""
    total = 0.0
    stack = list(trees)
    while stack:
        n = stack.pop()
        total += n.i + n.f + n.b + len(n.s)
        left, right = n.left, n.right
        if left is not None:
            stack.append(left)
        if right is not None:
            stack.append(right)
    return total


@dataclass
class Account:
    """A bank account (bench_transactions.py)."""

    balance: int
