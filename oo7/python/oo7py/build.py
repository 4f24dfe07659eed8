"""The SPEC's draw order, run once over either model (models.PRIVATE or models.SHARED).

Every object is made by ``model.new(cls)`` and every list by ``model.new_list()``; fields are set
and lists appended the same way in both models, so the shared database is built in the heap
object by object, as a loader of a real database would, not copied from a private one.
"""

from __future__ import annotations

from .params import Params, SplitMix64
from .schema import (
    AtomicPart,
    BaseAssembly,
    ComplexAssembly,
    CompositePart,
    Connection,
    Database,
    Module,
)


def document_text(c: int, size: int) -> str:
    unit = f"I am the documentation for composite part #{c}. "
    return (unit * (size // len(unit) + 1))[:size]


def build(model, p: Params, seed: int) -> Database:
    """Builds the OO7 database of parameters ``p`` from ``seed`` with ``model``'s objects."""
    new, new_list = model.new, model.new_list
    g = SplitMix64(seed)

    # 1. The module (its designRoot is the root assembly, made in step 3).
    module = new(Module)
    module.id = 1
    module.type = g.type()
    module.buildDate = g.date()

    # 2. Composite parts with their atomic parts and connections.
    composites = new_list()
    n = p.num_atomic_per_comp
    conn_id = 0
    for c in range(1, p.num_comp_per_module + 1):
        cp = new(CompositePart)
        cp.id = c
        cp.type = g.type()
        cp.buildDate = g.date()
        cp.document = document_text(c, p.document_size)
        cp.usedIn = new_list()
        parts = new_list()
        cp.parts = parts
        local = []  # this composite's parts, for indexing by j (reading back a shared list is slower)
        for j in range(n):
            a = new(AtomicPart)
            a.id = (c - 1) * n + j + 1
            a.type = g.type()
            a.buildDate = g.date()
            a.x = g.rand(100000)
            a.y = g.rand(100000)
            a.to = new_list()
            a.from_ = new_list()
            a.partOf = cp
            parts.append(a)
            local.append(a)
        cp.rootPart = local[0]
        for j in range(n):
            src = local[j]
            for k in range(p.num_conn_per_atomic):
                dst = local[(j + 1) % n] if k == 0 else local[g.rand(n)]
                conn = new(Connection)
                conn_id += 1
                conn.id = conn_id
                conn.type = g.type()
                conn.length = 1 + g.rand(100000)
                conn.from_ = src
                conn.to = dst
                src.to.append(conn)
                dst.from_.append(conn)
        composites.append(cp)

    # 3. The assembly tree in preorder from the root.
    assemblies = new_list()
    # Components are drawn by index: a Python list of the composite parts (for the shared model,
    # their proxies) instead of an indexed read of the shared list per draw.
    by_index = list(composites)
    next_id = 0

    def assembly(level: int, parent):
        nonlocal next_id
        a = new(ComplexAssembly if level > 1 else BaseAssembly)
        next_id += 1
        a.id = next_id
        a.type = g.type()
        a.buildDate = g.date()
        a.superAssembly = parent
        assemblies.append(a)
        if level > 1:
            subs = new_list()
            a.subAssemblies = subs
            for _ in range(p.num_assm_per_assm):
                subs.append(assembly(level - 1, a))
        else:
            comps = new_list()
            a.components = comps
            for _ in range(p.num_comp_per_assm):
                cp = by_index[g.rand(p.num_comp_per_module)]
                comps.append(cp)
                cp.usedIn.append(a)
        return a

    module.designRoot = assembly(p.num_assm_levels, None)

    db = new(Database)
    db.module = module
    db.composites = composites
    db.assemblies = assemblies
    return db
