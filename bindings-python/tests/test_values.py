"""values.cpp: scalar mapping, copy_to (sharing, cycles), identity of proxies, GC roots."""

import gc
import math

from hypothesis import given, settings, strategies as st

import colors_shm as cs

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SCALARS = st.one_of(st.none(), st.booleans(), INT64, st.floats(allow_nan=False), st.text(),
                    st.binary())


@settings(max_examples=300, deadline=None)
@given(SCALARS)
def test_scalar_round_trip(x):
    lst = cs.copy_to([x])
    y = lst[0]
    assert type(y) is type(x)
    assert y == x
    if isinstance(x, float):
        assert math.copysign(1.0, y) == math.copysign(1.0, x)


def test_scalars_come_back_as_plain_values():
    lst = cs.copy_to([1, 2**62, -(2**63), 2**63 - 1, 1.5, float("inf"), True, False, None, "héllo ✓",
                      b"\x00\xff", bytearray(b"ba")])
    assert list(lst) == [1, 2**62, -(2**63), 2**63 - 1, 1.5, float("inf"), True, False, None, "héllo ✓",
                         b"\x00\xff", b"ba"]
    assert [type(v) for v in lst] == [int, int, int, int, float, float, bool, bool, type(None), str,
                                      bytes, bytes]
    assert math.isnan(cs.copy_to([float("nan")])[0])
    assert cs.copy_to(5) == 5 and cs.copy_to("s") == "s" and cs.copy_to(None) is None
    assert not cs.is_shared(cs.copy_to("s"))


def test_copy_to_types():
    d = cs.copy_to({"l": [1], "t": (1, 2), "s": {1}, "f": frozenset({2}), "d": {}})
    assert isinstance(d, cs.SharedDict)
    assert isinstance(d["l"], cs.SharedList) and isinstance(d["t"], cs.SharedList)
    assert isinstance(d["s"], cs.SharedSet) and isinstance(d["f"], cs.SharedSet)
    assert isinstance(d["d"], cs.SharedDict)
    assert d == {"l": [1], "t": [1, 2], "s": {1}, "f": {2}, "d": {}}


def test_copy_to_preserves_sharing():
    inner = [1, 2]
    text = "shared string"
    outer = cs.copy_to([inner, inner, {"a": inner}, (inner,), text, text])
    assert outer[0] is outer[1]
    assert outer[2]["a"] is outer[0]
    assert outer[3][0] is outer[0]
    outer[0].append(3)
    assert outer[1] == [1, 2, 3] and outer[2]["a"] == [1, 2, 3]


def test_copy_to_preserves_cycles():
    a = [1]
    a.append(a)
    d = {"name": "root"}
    d["self"] = d
    d["list"] = [d, a]
    sa, sd = cs.copy_to((a, d))
    assert sa[1] is sa
    assert sd["self"] is sd
    assert sd["list"][0] is sd and sd["list"][1] is sa
    assert repr(sa) == "[1, [...]]"
    assert repr(sd["self"]["self"]).startswith("{")


def test_copy_to_deep_graph_no_recursion_limit():
    node = None
    for i in range(20000):
        node = [i, node]
    shared = cs.copy_to(node)
    n = 0
    while shared is not None:
        n += 1
        shared = shared[1]
    assert n == 20000


def test_copy_to_shared_inside_private_is_referenced():
    s = cs.copy_to([1])
    outer = cs.copy_to([s, s])
    assert outer[0] is s and outer[1] is s
    assert cs.copy_to(s) is s


def test_identity_same_proxy_while_alive():
    d = cs.copy_to({"x": [1], "y": {"z": {3}}})
    assert d["x"] is d["x"]
    assert d["y"]["z"] is d["y"]["z"]
    r = cs.repository("values-identity")
    r.set(d)
    assert r.get() is d
    ch = cs.channel("values-identity")
    ch.send(d["x"])
    assert ch.receive(timeout=5) is d["x"]


def test_identity_cache_releases_dead_proxies():
    d = cs.copy_to({"x": [1]})
    before = cs._colors_shm._identity_cache_size()
    for _ in range(100):
        x = d["x"]
        del x
    gc.collect()
    assert cs._colors_shm._identity_cache_size() <= before + 1
    x1 = d["x"]
    assert x1 == [1]


def test_is_shared():
    assert cs.is_shared(cs.copy_to([1]))
    assert cs.is_shared(cs.allocate(dict))
    assert not cs.is_shared([1])
    assert not cs.is_shared(1)
    assert not cs.is_shared("s")


def test_allocate():
    lst = cs.allocate(list, 100)
    assert isinstance(lst, cs.SharedList) and len(lst) == 0
    assert isinstance(cs.allocate(dict), cs.SharedDict)
    assert isinstance(cs.allocate(set, 10), cs.SharedSet)
    assert cs.allocate(bytes, 4) == b"\x00" * 4
    import pytest

    with pytest.raises(cs.TypeMismatchError):
        cs.allocate(int)
    with pytest.raises(ValueError):
        cs.allocate(list, -1)


def test_proxy_keeps_object_alive_across_collect():
    lst = cs.copy_to([[i, str(i) * 10] for i in range(500)])
    probe = lst[7]
    for _ in range(3):
        cs.collect(timeout=30)
    assert len(lst) == 500
    assert lst[499] == [499, "499" * 10]
    assert probe == [7, "7" * 10] and probe is lst[7]


def test_dropping_proxies_frees_objects():
    cs.collect(timeout=30)
    lst = cs.copy_to([str(i) * 20 for i in range(2000)])
    assert len(lst) == 2000
    del lst
    gc.collect()
    freed = 0
    for _ in range(3):
        freed += cs.collect(timeout=30).objects_freed
    assert freed >= 2000


# ---- plain trees (lists and tuples of scalars and strings), built in a read scope ----

class _Sub(list):
    """A list subclass: never a plain tree, so copy_to takes the per-object Copier for it."""


PLAIN_SCALARS = st.one_of(st.none(), st.booleans(), INT64, st.floats(allow_nan=False), st.text())
PLAIN = st.recursive(
    st.one_of(PLAIN_SCALARS, st.binary(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.tuples(inner, inner),
                            st.dictionaries(PLAIN_SCALARS, inner, max_size=5),
                            st.frozensets(PLAIN_SCALARS, max_size=5), st.sets(PLAIN_SCALARS, max_size=5)),
    max_leaves=40)


def _as_private(v):
    if isinstance(v, (cs.SharedList, list, tuple)):
        return [_as_private(x) for x in v]
    if isinstance(v, (cs.SharedDict, dict)):
        return {k: _as_private(x) for k, x in v.items()}
    if isinstance(v, (cs.SharedSet, set, frozenset)):
        return set(v)
    return v


def _same_signs(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_signs(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_signs(a[k], b[k]) for k in a)
    return not isinstance(a, float) or math.copysign(1.0, a) == math.copysign(1.0, b)


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAIN, max_size=8))
def test_plain_trees_copy_as_the_copier_copies_them(x):
    fast = _as_private(cs.copy_to(x))
    slow = _as_private(cs.copy_to(_Sub(x)))
    assert fast == slow == _as_private(x)
    assert _same_signs(fast, slow)
    t = cs.copy_to(tuple(x))
    assert isinstance(t, cs.SharedList) and _as_private(t) == _as_private(x)
    d = {i: v for i, v in enumerate(x)}
    assert _as_private(cs.copy_to(d)) == _as_private(cs.copy_to(_Sub([d]))[0]) == _as_private(d)


def test_plain_trees_in_every_context_and_at_every_edge():
    inner = [1, "two"]
    shared = cs.copy_to([inner, inner])  # sharing: kept (the Copier's memo)
    assert shared[0] is shared[1]
    cyc = [1]
    cyc.append(cyc)
    c = cs.copy_to(cyc)
    assert c[1] is c
    deep = [0]
    for _ in range(5000):  # deeper than a scope builds: the Copier, without recursion
        deep = [deep]
    d = cs.copy_to(deep)
    for _ in range(5000):
        d = d[0]
    assert list(d) == [0]
    many = ["s%d" % i for i in range(70000)]  # more objects than one scope holds: the Copier
    assert list(cs.copy_to(many)) == many
    with cs.transaction():  # no scope inside a transaction
        assert list(cs.copy_to([1, "tx", [2.5]])[2]) == [2.5]
    with cs.read_scope():  # nested in the caller's scope; kept after it
        kept = cs.copy_to([["in", "scope"], 2**62])
    assert _as_private(kept) == [["in", "scope"], 2**62]
    try:
        cs.copy_to(["ok", "\ud800"])  # the Copier's error, not a half-made copy
        raise AssertionError("a lone surrogate was copied")
    except UnicodeEncodeError:
        pass
    try:
        cs.copy_to([1, 2**64])
        raise AssertionError("an int beyond 64 bits was copied")
    except OverflowError:
        pass
    assert cs.copy_to([True, None, -0.0, 1e300])[3] == 1e300
    # JSON-like records, and the Copier's order of puts where shared equality merges keys.
    recs = cs.copy_to([{"id": i, "name": "n%d" % i, "tags": ["a", "b"], "score": i / 3} for i in range(100)])
    assert isinstance(recs[5], cs.SharedDict) and recs[5]["tags"][1] == "b" and recs[99]["score"] == 33.0
    nan1, nan2 = float("nan"), float("nan")
    for x in ({nan1: 1, nan2: 2}, {nan1, nan2}):
        fast, slow = cs.copy_to(x), cs.copy_to(_Sub([x]))[0]
        assert len(fast) == len(slow)
        if isinstance(x, dict):
            assert list(fast.values()) == list(slow.values())
    s = cs.copy_to({None, 1, "one", 2.5, frozenset()} - {frozenset()})
    assert isinstance(s, cs.SharedSet) and s == {None, 1, "one", 2.5}
    assert cs.copy_to({}) == {} and cs.copy_to(set()) == set()
    assert cs.copy_to({1: {2: {3: [4]}}})[1][2][3] == [4]
    assert cs.copy_to({(1, 2): "tuple key"})  # not plain (a tuple key): the Copier's copy


# ---- instances of private classes in plain trees ----

class _Rec:
    """A private class whose instances, every declared field set in the instance dict, copy_to
    builds in a read scope."""

    id: int
    name: str
    score: float
    tags: list
    child: object

    def __init__(self, id, name, score, tags, child=None):
        self.id, self.name, self.score, self.tags, self.child = id, name, score, tags, child


class _Dynamic(_Rec):
    """Its attribute lookup runs Python code: always the Copier's."""

    def __getattr__(self, name):
        raise AttributeError(name)


def _fields(v):
    """A _Rec-shaped instance (private or a proxy) or plain value as plain data."""
    if isinstance(v, _Rec) or (cs.is_shared(v) and hasattr(v, "score") and hasattr(v, "child")):
        return ("rec", v.id, v.name, v.score, _as_private(v.tags), _fields(v.child))
    if isinstance(v, (cs.SharedList, list, tuple)):
        return [_fields(x) for x in v]
    if isinstance(v, (cs.SharedDict, dict)):
        return {k: _fields(x) for k, x in v.items()}
    return _as_private(v)


RECS = st.recursive(
    st.builds(_Rec, INT64, st.text(), st.floats(allow_nan=False), st.lists(PLAIN_SCALARS, max_size=3)),
    lambda inner: st.one_of(
        st.builds(_Rec, INT64, st.text(), st.floats(allow_nan=False), st.lists(PLAIN_SCALARS, max_size=3), inner),
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(RECS, max_size=5))
def test_trees_of_instances_copy_in_a_scope_as_the_copier_copies_them(x):
    before = cs._ext._scoped_copy_count()
    fast = cs.copy_to(x)
    assert cs._ext._scoped_copy_count() == before + 1, "not built in a read scope"
    slow = cs.copy_to(_Sub(x))
    assert _fields(fast) == _fields(slow) == _fields(x)


def test_instances_the_scoped_copy_leaves_to_the_copier():
    def scoped(x):
        before = cs._ext._scoped_copy_count()
        y = cs.copy_to(x)
        return cs._ext._scoped_copy_count() == before + 1, y

    done, r = scoped(_Rec(1, "a", 1.5, ["t"], _Rec(2, "b", 2.5, [])))  # a class met for the first time, nested
    assert done and r.child.name == "b" and isinstance(r, _Rec)
    shared = _Rec(3, "shared", 0.5, [])
    done, r = scoped([shared, shared])  # sharing: the Copier keeps it
    assert not done and r[0] is r[1]
    cyc = _Rec(4, "cycle", 0.5, [])
    cyc.child = cyc
    done, r = scoped(cyc)
    assert not done and r.child is r
    done, r = scoped(_Dynamic(5, "dynamic", 0.5, []))
    assert not done and r.name == "dynamic"
    partial = _Rec(6, "partial", 0.5, [])
    del partial.child  # unset: the Copier's getattr (None)
    done, r = scoped(partial)
    assert not done and r.child is None
    extra = _Rec(7, "extra", 0.5, [])
    extra.note = "not declared"  # an attribute the class does not declare: a field of its own
    done, r = scoped(extra)
    assert not done and r.note == "not declared"
    done, r = scoped(_Rec(8, "int in a float field", 3, []))  # the Copier converts it
    assert not done and r.score == 3.0 and isinstance(r.score, float)
    for bad in (_Rec("not an int", "x", 0.5, []), [_Rec(9, "x", 0.5, "a str in a list field")]):
        try:
            cs.copy_to(bad)
            raise AssertionError("a value its field refuses was copied")
        except cs.TypeMismatchError as e:
            try:
                cs.copy_to(_Sub([bad]))
            except cs.TypeMismatchError as e2:
                assert str(e) == str(e2)
    with cs.transaction():
        done, r = scoped(_Rec(10, "tx", 0.5, []))
    assert not done and r.name == "tx"
    done, r = scoped({"point": _Rec(11, "in a dict", 0.5, [1, 2.5, None])})
    assert done and r["point"].tags[1] == 2.5
    # A container subclass with declared fields is a container to copy_to, in either path.
    tagged = _Tagged([1, "two"])
    tagged.label = "a field the list's copy does not keep"
    for x in (tagged, [tagged]):
        done, r = scoped(x)
        assert not done
        assert _as_private(r) == ([1, "two"] if x is tagged else [[1, "two"]])


class _Tagged(list):
    """A list subclass whose class declares a field."""

    label: str
