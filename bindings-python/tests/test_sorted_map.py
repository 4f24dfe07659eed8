"""sorted_map.cpp + _proxies.SharedSortedDict: a shared sorted map behaves like
``sortedcontainers.SortedDict``.

Property-based: random operation sequences run on a shared sorted map and on a model (a ``dict``
whose keys are sorted when an order is needed); every result (value or exception kind) and the
contents after every operation must agree.
"""

import math

import pytest
import sortedcontainers
from hypothesis import given, settings, strategies as st

import colors_shm as cs
from conftest import run, unique

SETTINGS = settings(max_examples=200, deadline=None)
# Numeric keys: small ints (collisions), 64-bit ints (boxed beyond 2^59), floats (integral ones
# equal ints, as in Python).
# Mostly a few small keys, so that lookups, bounds and removals often hit keys present.
SMALL = st.integers(-12, 12)
NUM = st.one_of(SMALL, SMALL, SMALL, st.integers(-(2**63), 2**63 - 1),
                st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.5, 1e19, -1e19, 2.0**62]),
                st.floats(allow_nan=False, width=64))
BOUND = st.none() | SMALL | NUM
VAL = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3))
IDX = st.integers(-6, 6)

OPS = st.one_of(
    st.tuples(st.just("set"), NUM, VAL),
    st.tuples(st.just("set"), SMALL, VAL),
    st.tuples(st.just("set"), st.integers(0, 200), VAL),  # many keys: splits, several levels
    st.tuples(st.just("del"), NUM),
    st.tuples(st.just("get"), NUM),
    st.tuples(st.just("pop"), NUM),
    st.tuples(st.just("setdefault"), NUM, VAL),
    st.tuples(st.just("contains"), NUM),
    st.tuples(st.just("popitem"), IDX),
    st.tuples(st.just("peekitem"), IDX),
    st.tuples(st.just("bisect_left"), NUM),
    st.tuples(st.just("bisect_right"), NUM),
    st.tuples(st.just("index"), NUM),
    st.tuples(st.just("irange"), BOUND, BOUND, st.tuples(st.booleans(), st.booleans()), st.booleans()),
    st.tuples(st.just("bulk"), st.integers(0, 600), st.integers(1, 400)),  # a run of sets or dels
)


def outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        for k in (KeyError, IndexError, ValueError, TypeError):
            if isinstance(e, k):
                return ("error", k.__name__)
        return ("error", type(e).__name__)
    if not isinstance(r, (str, bytes, tuple, int, float, type(None))):
        r = list(r)
    return ("ok", typed(r))


def typed(x):
    """Comparable form that tells 1 / 1.0 apart and -0.0 from 0.0."""
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [typed(y) for y in x])
    if isinstance(x, float):
        return ("float", math.copysign(1.0, x), x)
    return (type(x).__name__, x)


class Model:
    """What SortedDict does, on a plain dict."""

    def __init__(self):
        self.d = {}

    def keys(self):
        return sorted(self.d)

    def apply(self, op):
        d = self.d
        name = op[0]
        if name == "set":
            d[op[1]] = op[2]
        elif name == "del":
            del d[op[1]]
        elif name == "get":
            return d.get(op[1], "missing")
        elif name == "pop":
            return d.pop(op[1])
        elif name == "setdefault":
            return d.setdefault(op[1], op[2])
        elif name == "contains":
            return op[1] in d
        elif name == "popitem":
            if not d:
                raise KeyError("empty")
            k = self.keys()[op[1]]
            return (k, d.pop(k))
        elif name == "peekitem":
            k = self.keys()[op[1]]
            return (k, d[k])
        elif name == "bisect_left":
            return sum(1 for k in d if k < op[1])
        elif name == "bisect_right":
            return sum(1 for k in d if k <= op[1])
        elif name == "index":
            if op[1] not in d:
                raise ValueError(op[1])
            return sum(1 for k in d if k < op[1])
        elif name == "irange":
            lo, hi, (li, hiinc), rev = op[1:]
            ks = [k for k in self.keys()
                  if (lo is None or k > lo or (li and k == lo)) and (hi is None or k < hi or (hiinc and k == hi))]
            return ks[::-1] if rev else ks
        elif name == "bulk":
            start, n = op[1], op[2]
            for k in range(start, start + n):
                if start % 2 == 0:
                    d[k] = k
                else:
                    d.pop(k, None)
        return None


def apply_shared(sd, op):
    name = op[0]
    if name == "set":
        sd[op[1]] = op[2]
    elif name == "del":
        del sd[op[1]]
    elif name == "get":
        return sd.get(op[1], "missing")
    elif name == "pop":
        return sd.pop(op[1])
    elif name == "setdefault":
        return sd.setdefault(op[1], op[2])
    elif name == "contains":
        return op[1] in sd
    elif name == "popitem":
        return sd.popitem(op[1])
    elif name == "peekitem":
        return sd.peekitem(op[1])
    elif name == "bisect_left":
        return sd.bisect_left(op[1])
    elif name == "bisect_right":
        return sd.bisect_right(op[1])
    elif name == "index":
        return sd.index(op[1])
    elif name == "irange":
        lo, hi, inc, rev = op[1:]
        return sd.irange(lo, hi, inc, rev)
    elif name == "bulk":
        start, n = op[1], op[2]
        for k in range(start, start + n):
            if start % 2 == 0:
                sd[k] = k
            else:
                sd.pop(k, None)
    return None


@SETTINGS
@given(st.lists(OPS, max_size=30))
def test_sorted_dict_matches_a_model(ops):
    sd = cs.allocate(cs.SharedSortedDict)
    model = Model()
    for op in ops:
        assert outcome(lambda: apply_shared(sd, op)) == outcome(lambda: model.apply(op)), op
        assert len(sd) == len(model.d)
    assert typed(list(sd.items())) == typed([(k, model.d[k]) for k in model.keys()])
    assert typed(list(reversed(sd))) == typed(model.keys()[::-1])
    assert typed(list(sd.values())) == typed([model.d[k] for k in model.keys()])


def test_long_iterations_read_in_batches_and_see_changes_ahead():
    sd = cs.allocate(cs.SharedSortedDict)
    for k in range(0, 3000, 2):
        sd[k] = k
    assert list(sd.irange(10, 2000, (False, True))) == list(range(12, 2001, 2))
    assert list(sd.irange(None, 999, (True, False), reverse=True)) == list(range(998, -1, -2))
    assert list(sd.irange_items(100, 106)) == [(100, 100), (102, 102), (104, 104), (106, 106)]
    seen = []
    for k in sd:  # no "changed size during iteration": batches continue after the last key
        seen.append(k)
        if k == 10:
            del sd[2800]
            sd[2801] = 1
            sd[5] = 1  # behind: not seen
    # The first batch (256 keys) was read before the change; everything after it sees it.
    assert seen == sorted([k for k in range(0, 3000, 2) if k != 2800] + [2801])
    assert sd.keys()[0] == 0 and sd.keys()[-1] == 2998


def test_strings_in_code_point_order_and_bytes_in_byte_order():
    words = ["b", "a", "", "Z", "é", "€", "😀", "ab", "a\x00", "zz"]
    sd = cs.copy_to(sortedcontainers.SortedDict({w: i for i, w in enumerate(words)}))
    assert isinstance(sd, cs.SharedSortedDict)
    assert list(sd) == sorted(words)  # Python orders str by code point
    assert list(sd.irange("a", "b", (True, False))) == [w for w in sorted(words) if "a" <= w < "b"]
    bs = cs.allocate(cs.SharedSortedDict)
    blobs = [b"\xff", b"", b"\x00", b"\x00\x00", b"ab", b"a"]
    for i, b in enumerate(blobs):
        bs[b] = i
    assert list(bs) == sorted(blobs)
    assert bs.bisect_left(b"a") == 3


def test_keys_it_cannot_order_raise_type_mismatch_and_change_nothing():
    sd = cs.allocate(cs.SharedSortedDict)
    for bad in (None, True, float("nan")):
        with pytest.raises(cs.TypeMismatchError):
            sd[bad] = 1
    with pytest.raises(TypeError):  # TypeMismatchError is a TypeError
        sd[cs.copy_to([1])] = 1
    assert len(sd) == 0
    sd[1] = "one"
    sd[2.5] = "two and a half"
    with pytest.raises(cs.TypeMismatchError, match='string "x"'):
        sd["x"] = 1
    with pytest.raises(cs.TypeMismatchError):
        sd[b"x"] = 1
    with pytest.raises(cs.TypeMismatchError):
        "x" in sd
    with pytest.raises(cs.TypeMismatchError):
        list(sd.irange("a"))
    assert dict(sd.items()) == {1: "one", 2.5: "two and a half"}
    sd.clear()
    sd["x"] = 1  # an emptied map takes another kind of key
    assert sd["x"] == 1


def test_allocate_copy_to_and_reading_back_from_shared_containers():
    sd = cs.allocate(sortedcontainers.SortedDict)
    assert isinstance(sd, cs.SharedSortedDict) and len(sd) == 0
    src = sortedcontainers.SortedDict({3: [1, 2], 1: {"a": 1}, 2: "two"})
    shared = cs.copy_to({"index": src})
    idx = shared["index"]
    assert isinstance(idx, cs.SharedSortedDict)
    assert shared["index"] is idx  # one proxy per shared object
    assert list(idx) == [1, 2, 3]
    assert idx[3] == [1, 2] and isinstance(idx[3], cs.SharedList)
    private = idx.copy()
    assert isinstance(private, sortedcontainers.SortedDict) and list(private) == [1, 2, 3]
    assert idx == {1: {"a": 1}, 2: "two", 3: [1, 2]}
    assert repr(cs.copy_to(sortedcontainers.SortedDict({1: 2}))) == "SharedSortedDict({1: 2})"
    with pytest.raises(KeyError):
        cs.allocate(cs.SharedSortedDict).popitem()
    with pytest.raises(IndexError):
        cs.allocate(cs.SharedSortedDict).peekitem()


def test_another_process_sees_and_changes_the_same_sorted_map():
    name = unique("sorted")
    sd = cs.allocate(cs.SharedSortedDict)
    for k in range(1000):
        sd[k * 10] = k
    cs.repository(name).set(sd)
    r = run(f"""
        import colors_shm as cs
        sd = cs.repository({name!r}).get()
        assert isinstance(sd, cs.SharedSortedDict), type(sd)
        print(list(sd.irange(100, 150)))
        for k in range(5, 10000, 10):
            sd[k] = -1
        del sd[0]
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[100, 110, 120, 130, 140, 150]"
    assert len(sd) == 1999
    assert sd.peekitem(0) == (5, -1)
    assert list(sd.irange(0, 30)) == [5, 10, 15, 20, 25, 30]
