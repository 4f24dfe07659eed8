"""Read memos (src/ext/read_memo.hpp): a proxy remembers the proxy its last reference read returned,
and a list proxy the elements it last iterated, so reading them again skips the identity-table
lookups. A memo holds nothing alive and must never change what a read returns: each test checks
that a read after a store, a list change, a proxy's death, a transaction or a detach returns what
the slot or the list holds now."""

from __future__ import annotations

import gc
import os
import time
import weakref

import pytest

import colors_shm as cs
from conftest import run, spawn, unique
from employees import Employee

TESTS = os.path.dirname(os.path.abspath(__file__))


# Each test starts from an empty proxy cache of the default capacity, and leaves it so.
pytestmark = pytest.mark.usefixtures("fresh_proxy_cache")


def test_a_field_read_after_a_store_returns_the_new_object():
    a, b = cs.copy_to(Employee("a", 1.0)), cs.copy_to(Employee("b", 2.0))
    head = cs.copy_to(Employee("head", 0.0, a))
    assert head.manager is a and head.manager is a  # the second read through the memo
    head.manager = b
    assert head.manager is b
    head.manager = None
    assert head.manager is None
    head.manager = a
    assert head.manager is a


def test_a_field_read_after_its_proxy_died_returns_a_live_proxy():
    # Without the proxy cache a proxy dies with its last reference; the memo then names a freed
    # object unless the table's removal it counts turns it away. Other proxies are made and freed
    # in between so that the freed memory is reused.
    cs.proxy_cache(0)
    head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
    others = cs.copy_to([Employee(f"o{i}", float(i)) for i in range(50)])
    for i in range(300):
        m = head.manager
        gone = weakref.ref(m)
        ok = m.name == "m" and head.manager is m  # not in an assert: pytest's rewriting keeps operands
        del m
        assert ok
        assert gone() is None
        held = list(others)  # new proxies of other objects, alive: one is likely in m's memory
        again = head.manager
        assert again.name == "m" and again.salary == 1.0
        assert held[i % 50].name == f"o{i % 50}"
        del again, held


def test_a_list_iterated_again_after_a_change_gives_the_new_elements():
    a, b, c = (cs.copy_to(Employee(n, 0.0)) for n in "abc")
    lst = cs.copy_to([])
    lst.extend([a, b])
    assert [e.name for e in lst] == ["a", "b"]
    assert list(lst)[0] is a  # through the memo
    lst.append(c)
    assert [e.name for e in lst] == ["a", "b", "c"]
    lst[0] = 7
    assert same(lst, [7, b, c])
    del lst[1]
    assert same(lst, [7, c])


def test_a_list_whose_element_proxies_died_is_read_again():
    cs.proxy_cache(0)
    lst = cs.copy_to([Employee(f"e{i}", float(i)) for i in range(5)])
    others = cs.copy_to([Employee(f"x{i}", 0.0) for i in range(20)])
    for _ in range(100):
        items = list(lst)
        ok = same(lst, items)  # read through live proxies: this one makes the memo
        refs = [weakref.ref(e) for e in items]
        del items
        assert ok and all(r() is None for r in refs)
        held = list(others)  # new proxies of other objects, alive, in the freed memory
        assert [e.name for e in lst] == [f"e{i}" for i in range(5)]
        assert [e.name for e in held] == [f"x{i}" for i in range(20)]
        del held


def same(xs, ys) -> bool:
    """Whether two sequences hold the same objects (identity, not the dataclass's ==)."""
    xs, ys = list(xs), list(ys)
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


def test_a_rolled_back_transaction_leaves_the_list_and_field_as_before():
    a, b = cs.copy_to(Employee("a", 1.0)), cs.copy_to(Employee("b", 2.0))
    head = cs.copy_to(Employee("head", 0.0, a))
    lst = cs.copy_to([])
    lst.append(a)
    assert same(lst, [a]) and head.manager is a

    class Abort(Exception):
        pass

    with pytest.raises(Abort):
        with cs.transaction():
            head.manager = b
            lst.append(b)
            assert head.manager is b and same(lst, [a, b])
            raise Abort
    assert head.manager is a
    assert same(lst, [a])


def test_reads_follow_another_processs_stores():
    # A writer process moves head.manager and the list's elements between two objects whose names
    # say which is which; every read here must name the object the slot or list holds, which the
    # writer changes back and forth thousands of times.
    a, b = cs.copy_to(Employee("a", 0.0)), cs.copy_to(Employee("b", 0.0))
    head = cs.copy_to(Employee("head", 0.0, a))
    count = cs.copy_to(Employee("count", 0.0))  # the writer's changes so far, in salary
    lst = cs.copy_to([])
    lst.extend([a, a])
    repo = unique("memo")
    cs.repository(repo).set(cs.copy_to([head, lst, a, b, count]))
    writer = spawn(f"""
        import colors_shm as cs
        head, lst, a, b, count = cs.repository({repo!r}).get()
        n = 0
        while head.salary == 0.0:
            x = (a, b)[n % 2]
            head.manager = x
            lst[:] = [x, x]
            n += 1
            count.salary = float(n)
        print(n)
    """)
    seen = set()
    reads = 0
    try:
        deadline = time.monotonic() + 20
        while (len(seen) < 2 or count.salary < 2000) and time.monotonic() < deadline:
            m = head.manager
            assert m is a or m is b
            seen.add(m.name)
            items = list(lst)
            assert len(items) == 2 and items[0] is items[1] and (items[0] is a or items[0] is b), items
            reads += 1
    finally:
        head.salary = 1.0
        out, err = writer.communicate(timeout=30)
    assert writer.returncode == 0, err
    assert int(out) >= 2000 and seen == {"a", "b"} and reads > 100


def test_a_proxy_read_before_a_detach_is_refused_after_it():
    out = run(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import colors_shm as cs
        from employees import Employee
        head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
        lst = cs.copy_to([head])
        assert head.manager.name == "m" and list(lst)[0] is head
        cs.detach()
        for read in (lambda: head.manager, lambda: list(lst)):
            try:
                read()
            except cs.NotAttachedError:
                pass
            else:
                raise AssertionError("a read after detach returned")
        print("ok")
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]


def test_memos_keep_nothing_alive():
    # A memo's proxies are borrowed: dropping everything and the proxy cache frees every proxy.
    head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
    lst = cs.copy_to([Employee("e", 0.0)])
    m, e = head.manager, list(lst)[0]
    assert head.manager is m and list(lst)[0] is e
    refs = [weakref.ref(m), weakref.ref(e)]
    del m, e
    cs.proxy_cache(0)
    gc.collect()
    assert all(r() is None for r in refs)
    assert head.manager.name == "m" and list(lst)[0].name == "e"


def test_a_list_remembered_outside_a_read_scope_is_read_the_same_inside_one():
    cs.proxy_cache(0)
    lst = cs.copy_to([Employee(f"e{i}", float(i)) for i in range(4)])
    items = list(lst)
    assert same(lst, items)  # the second iteration made the memo
    with cs.read_scope():
        assert same(lst, items)  # the live proxies, as a scope's read returns them
        assert [e.name for e in lst] == ["e0", "e1", "e2", "e3"]
    del items  # the proxies die: inside a scope the list's elements are lent again
    with cs.read_scope():
        names = [e.name for e in lst]
    assert names == ["e0", "e1", "e2", "e3"]
