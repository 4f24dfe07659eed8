"""The SPEC's untimed checks: the FNV fold, the fingerprint and the visit order, and the values
the SPEC gives (seed 42, small)."""

from __future__ import annotations

from . import ops
from .params import MASK64
from .schema import ComplexAssembly

FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211

# (size, seed) -> (visits, fingerprint, visit order), from the SPEC.
EXPECTED = {("small", 42): (43740, "e0381c302e05b74a", "2c0f1a48f8151d7d")}


class Fold:
    """The FNV fold over 64-bit values and UTF-8 strings."""

    __slots__ = ("h",)

    def __init__(self):
        self.h = FNV_OFFSET

    def int(self, v: int) -> None:
        self.h = ((self.h ^ (v & MASK64)) * FNV_PRIME) & MASK64

    def str(self, s: str) -> None:
        b = s.encode("utf-8")
        h = ((self.h ^ len(b)) * FNV_PRIME) & MASK64
        for byte in b:
            h = ((h ^ byte) * FNV_PRIME) & MASK64
        self.h = h

    def hex(self) -> str:
        return "%016x" % self.h


def fingerprint(db) -> str:
    f = Fold()
    m = db.module
    f.int(m.id)
    f.str(m.type)
    f.int(m.buildDate)
    f.int(m.designRoot.id)
    for cp in db.composites:
        f.int(cp.id)
        f.str(cp.type)
        f.int(cp.buildDate)
        f.str(cp.document)
        f.int(cp.rootPart.id)
        used = list(cp.usedIn)
        f.int(len(used))
        for a in used:
            f.int(a.id)
        for p in cp.parts:
            to, from_ = list(p.to), list(p.from_)
            f.int(p.id)
            f.int(p.x)
            f.int(p.y)
            f.int(p.buildDate)
            f.str(p.type)
            f.int(p.partOf.id)
            f.int(len(to))
            f.int(len(from_))
            for c in to:
                f.int(c.id)
                f.str(c.type)
                f.int(c.length)
                f.int(c.from_.id)
                f.int(c.to.id)
            for c in from_:
                f.int(c.id)
    for a in db.assemblies:
        f.int(a.id)
        f.str(a.type)
        f.int(a.buildDate)
        sup = a.superAssembly
        f.int(0 if sup is None else sup.id)
        if isinstance(a, ComplexAssembly):
            children, tag = list(a.subAssemblies), 2
        else:
            children, tag = list(a.components), 3
        f.int(tag)
        f.int(len(children))
        for ch in children:
            f.int(ch.id)
    return f.hex()


def visits_and_order(db) -> tuple[int, str]:
    """Runs T1, folding the id of each atomic part it visits: (visits, visit order)."""
    f = Fold()
    fold = f.int

    def visit(part):
        fold(part.id)

    n = ops.t1(db, visit)
    return n, f.hex()


def expected(size: str, seed: int):
    return EXPECTED.get((size, seed))
