"""The accessors of traversal.py: one per way a client reaches the database.

- :class:`DirectAccess`: the shared objects themselves (oo7py's proxies), counting every access;
  it computes the number of object accesses T1 makes, which the remote rows must match.
- :class:`ColorsAccess`: one colors rpc call per access (``fig61.ColorsEndpoint``), handles as
  references; also the hand-batched ``composite``.
- :class:`AggregatedAccess`: the same calls through :mod:`aggregate` (lazy futures, batches).
- :class:`GrpcAccess`: one gRPC call per access (``oo7.Oo7``), and the hand-batched ``composite``.
"""

from __future__ import annotations

from . import handles
from .traversal import graph_from_flat

_MASK32 = 0xFFFFFFFF
_COMPLEX = handles.COMPLEX


class DirectAccess:
    """The shared database read directly, each access counted in ``accesses``."""

    def __init__(self, complex_cls):
        self.accesses = 0
        self._complex = complex_cls

    def design_root(self, m):
        self.accesses += 1
        return m.designRoot

    def is_complex(self, a):
        return isinstance(a, self._complex)

    def sub_assemblies(self, a):
        self.accesses += 1
        return a.subAssemblies

    def components(self, a):
        self.accesses += 1
        return a.components

    def root_part(self, c):
        self.accesses += 1
        return c.rootPart

    def outgoing(self, p):
        self.accesses += 1
        return p.to

    def target(self, k):
        self.accesses += 1
        return k.to

    @staticmethod
    def part_id(p):
        return p.id


class ColorsAccess:
    """One colors rpc call per access; references are handles (ints)."""

    def __init__(self, client):
        self.design_root = client.designRoot
        self.sub_assemblies = client.subAssemblies
        self.components = client.components
        self.root_part = client.rootPart
        self.outgoing = client.outgoing
        self.target = client.target
        comp = client.composite
        self.composite = lambda c: graph_from_flat(list(comp(c)))

    @staticmethod
    def is_complex(h):
        return h >> 32 == _COMPLEX

    @staticmethod
    def part_id(h):
        return h & _MASK32


class AggregatedAccess:
    """The per-access calls deferred and batched by an :class:`aggregate.Aggregator`; references
    are :class:`aggregate.Lazy` futures of handles."""

    def __init__(self, agg):
        call = agg.call
        self.design_root = lambda m: call("designRoot", m)
        self.sub_assemblies = lambda a: call("subAssemblies", a)
        self.components = lambda a: call("components", a)
        self.root_part = lambda c: call("rootPart", c)
        self.outgoing = lambda p: call("outgoing", p)
        self.target = lambda k: call("target", k)

    @staticmethod
    def is_complex(a):
        return a.value() >> 32 == _COMPLEX

    @staticmethod
    def part_id(p):
        return p.value() & _MASK32


class GrpcAccess:
    """One gRPC call per access (generated stub ``oo7_pb2_grpc.Oo7Stub``); handles as in colors."""

    def __init__(self, stub, pb):
        ref = pb.Ref
        dr, sa, co, rp, og, tg, cg = (stub.DesignRoot, stub.SubAssemblies, stub.Components, stub.RootPart,
                                      stub.Outgoing, stub.Target, stub.Composite)
        self.design_root = lambda h: dr(ref(h=h)).h
        self.sub_assemblies = lambda h: sa(ref(h=h)).h
        self.components = lambda h: co(ref(h=h)).h
        self.root_part = lambda h: rp(ref(h=h)).h
        self.outgoing = lambda h: og(ref(h=h)).h
        self.target = lambda h: tg(ref(h=h)).h

        def composite(h):
            g = cg(ref(h=h))
            starts = [0]
            s = 0
            for d in g.degree:
                s += d
                starts.append(s)
            return g.root, list(g.ids), starts, list(g.targets)

        self.composite = composite

    is_complex = staticmethod(ColorsAccess.is_complex)
    part_id = staticmethod(ColorsAccess.part_id)
