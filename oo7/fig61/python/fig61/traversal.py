"""T1 written once over an *accessor*: the seven reads T1 makes of the database (the SPEC's
object accesses: designRoot, subAssemblies, components, rootPart, AtomicPart.to, Connection.to)
plus the class test of an assembly and the id of a part for the visit fold. Each way of reaching
the database (access.py) is an accessor; the hand-batched T1 (one call per composite part) is
:func:`t1_batched`.

Order: a part's search issues the part's ``outgoing`` read before it marks the part visited, and
reads the targets of all its connections before it follows the first one. Neither changes what is
read or the order parts are visited in (T1 only reads); both leave independent reads next to each
other, which only the aggregated accessor exploits (it defers them into one request).
"""

from __future__ import annotations


def assembly_walk(acc, a, visit) -> int:
    """T1 below assembly ``a``: returns the parts visited, calling ``visit(part id)`` on each."""
    is_complex, subs, comps = acc.is_complex, acc.sub_assemblies, acc.components
    root_part, outgoing, target, part_id = acc.root_part, acc.outgoing, acc.target, acc.part_id

    def dfs(p, visited):
        conns = outgoing(p)
        visited.add(p)
        visit(part_id(p))
        n = 1
        for t in [target(k) for k in conns]:
            if t not in visited:
                n += dfs(t, visited)
        return n

    def walk(a):
        n = 0
        if is_complex(a):
            for s in subs(a):
                n += walk(s)
        else:
            for c in comps(a):
                n += dfs(root_part(c), set())
        return n

    return walk(a)


def t1(acc, module, visit) -> int:
    """T1 from the module: the parts visited; ``visit(part id)`` on each, in order."""
    return assembly_walk(acc, acc.design_root(module), visit)


def search_graph(graph, visit) -> int:
    """T1's depth-first search of one composite part, over its graph as the hand-batched call
    returns it: ``(root index, part ids, start offsets (n + 1), target indexes)``."""
    root, ids, starts, targets = graph
    visited = set()

    def dfs(i):
        visited.add(i)
        visit(ids[i])
        n = 1
        for j in targets[starts[i]:starts[i + 1]]:
            if j not in visited:
                n += dfs(j)
        return n

    return dfs(root)


def t1_batched(acc, module, visit) -> int:
    """T1 with one call per composite part visit (``acc.composite(c)`` returns its graph); the
    assembly tree is walked with one call per access, as in :func:`t1`."""
    is_complex, subs, comps, composite = acc.is_complex, acc.sub_assemblies, acc.components, acc.composite

    def walk(a):
        n = 0
        if is_complex(a):
            for s in subs(a):
                n += walk(s)
        else:
            for c in comps(a):
                n += search_graph(composite(c), visit)
        return n

    return walk(acc.design_root(module))


def graph_from_flat(v) -> tuple:
    """The hand-batched colors reply (``[root, n, ids.., degrees.., targets..]``) as a graph."""
    root, n = v[0], v[1]
    starts = [0] * (n + 1)
    s = 0
    for i in range(n):
        s += v[2 + n + i]
        starts[i + 1] = s
    return root, v[2:2 + n], starts, v[2 + 2 * n:]
