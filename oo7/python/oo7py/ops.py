"""OO7 operations, one code for both models.

A shared object appears as an instance of a proxy subclass of its schema class: the same attribute
names, lists that iterate and index like Python lists, ``isinstance`` that holds. So each operation
below runs unchanged over a private database (``__dict__`` objects, Python lists) and over the
shared one. The only model-dependent argument is ``atomic``: how T2 runs the updates of one
composite part's visit (``models.SHARED.atomic``: one transaction, ``colors_shm.atomically``, which
may run it again after a conflict; the private model's just calls it).

Visited sets hold the part objects themselves (identity hash): a shared proxy stays the same
object while it is held, so membership is identity of the shared object.
"""

from __future__ import annotations

from .models import PRIVATE
from .schema import ComplexAssembly

_no_sync = PRIVATE.atomic


def _dfs(part, visited, visit):
    """Depth-first from ``part`` over ``to`` connections in order; ``visit(part)`` on entry.
    Returns the number of parts visited."""
    visited.add(part)
    if visit is not None:
        visit(part)
    n = 1
    for conn in part.to:
        nxt = conn.to
        if nxt not in visited:
            n += _dfs(nxt, visited, visit)
    return n


def _t1_assembly(a, visit):
    n = 0
    if isinstance(a, ComplexAssembly):
        for sub in a.subAssemblies:
            n += _t1_assembly(sub, visit)
    else:
        for cp in a.components:
            n += _dfs(cp.rootPart, set(), visit)
    return n


def t1(db, visit=None) -> int:
    """T1: depth-first over the assembly tree; at each base assembly, for each component, a
    depth-first search of its atomic parts from ``rootPart`` with a fresh visited set. Returns the
    number of atomic parts visited; ``visit(part)`` (optional) is called for each, in order."""
    return _t1_assembly(db.module.designRoot, visit)


def _t6_assembly(a, visit):
    n = 0
    if isinstance(a, ComplexAssembly):
        for sub in a.subAssemblies:
            n += _t6_assembly(sub, visit)
    else:
        for cp in a.components:
            root = cp.rootPart
            if visit is not None:
                visit(root)
            n += 1
    return n


def t6(db, visit=None) -> int:
    """T6: T1's assembly walk visiting only each component's root part. Returns the visits."""
    return _t6_assembly(db.module.designRoot, visit)


def swap(part) -> None:
    part.x, part.y = part.y, part.x


def swap4(part) -> None:
    for _ in range(4):
        part.x, part.y = part.y, part.x


def _t2_composite(cp, root_swap, each):
    root = cp.rootPart
    if root_swap:
        swap(root)
    return _dfs(root, set(), each)


def _t2_assembly(a, atomic, root_swap, each):
    n = 0
    if isinstance(a, ComplexAssembly):
        for sub in a.subAssemblies:
            n += _t2_assembly(sub, atomic, root_swap, each)
    else:
        for cp in a.components:
            # Every update in it is of cp's own parts; it has no effect but on them (re-runnable).
            n += atomic(_t2_composite, cp, root_swap, each)
    return n


def t2a(db, atomic=_no_sync) -> int:
    """T2a: T1, swapping ``x``/``y`` of the root part once per composite part visit."""
    return _t2_assembly(db.module.designRoot, atomic, True, None)


def t2b(db, atomic=_no_sync) -> int:
    """T2b: T1, swapping ``x``/``y`` of every atomic part visited."""
    return _t2_assembly(db.module.designRoot, atomic, False, swap)


def t2c(db, atomic=_no_sync) -> int:
    """T2c: T1, swapping ``x``/``y`` of every atomic part visited four times."""
    return _t2_assembly(db.module.designRoot, atomic, False, swap4)


def q7(db) -> tuple[int, int]:
    """Q7: scan of every atomic part (``composites[*].parts[*]``): (count, sum of ``x``)."""
    n = total = 0
    for cp in db.composites:
        for part in cp.parts:
            n += 1
            total += part.x
    return n, total


UPDATES = {"t2a": t2a, "t2b": t2b, "t2c": t2c}
READS = {"t1": t1, "t6": t6, "q7": q7}
NAMES = ("t1", "t6", "t2a", "t2b", "t2c", "q7")


def run(name: str, db, atomic=_no_sync):
    """Runs the operation ``name`` (one of NAMES); each composite part's updates run through
    ``atomic``."""
    if name in UPDATES:
        return UPDATES[name](db, atomic)
    if name in READS:
        return READS[name](db)
    raise ValueError(f"unknown OO7 operation {name!r}: use one of {', '.join(NAMES)}")


def swaps_per_visit(name: str) -> tuple[int, int]:
    """(swaps of the root part, swaps of every other part) per composite part visit of the update
    ``name``: what a T2 run must have done to each part, for checking it."""
    return {"t2a": (1, 0), "t2b": (1, 1), "t2c": (4, 4)}[name]
