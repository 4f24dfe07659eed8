"""Proxies of shared user objects on the field-read fast path (classes.cpp): the identity table,
GC roots taken from the binding's pool, handles reused from a free list, strings and boxed floats
read without a root. Each test states the guarantee it checks: one live proxy per object, a proxy
keeps its object alive (and only while it lives), stale proxies after detach / in a fork child,
several Python threads."""

from __future__ import annotations

import gc
import math
import os
import threading
import time
import weakref

import pytest

import colors_shm as cs
from conftest import collecting, run, spawn, unique
from employees import Employee, Node

TESTS = os.path.dirname(os.path.abspath(__file__))

size = cs._ext._identity_cache_size


@pytest.fixture(autouse=True)
def without_proxy_cache():
    """These tests watch a proxy die, and its root go, as soon as Python drops it: the proxy cache
    (test_proxy_cache.py) would keep it alive, so it is off here."""
    before = cs.proxy_cache()
    cs.proxy_cache(0)
    yield
    cs.proxy_cache(before)


def chain(n: int, prefix: str = "e"):
    """A shared chain head -> e0 -> e1 -> ... -> e(n-1) linked through `manager`, and the head."""
    head = None
    for i in reversed(range(n)):
        head = Employee(f"{prefix}{i}", float(i), head)
    return cs.copy_to(Employee("head", -1.0, head))


def walk(head):
    out = []
    p = head.manager
    while p is not None:
        out.append(p)
        p = p.manager
    return out


# ---- identity ----------------------------------------------------------------------------------


def test_identity_holds_over_many_create_destroy_cycles():
    head = chain(50)
    gc.collect()  # proxies in an earlier test's cyclic garbage would leave the table below
    base = size()
    for _ in range(200):  # every read makes a proxy and drops it: the table, handles and roots cycle
        assert [p.name for p in walk(head)] == [f"e{i}" for i in range(50)]
    gc.collect()
    assert size() == base
    held = walk(head)
    ids = [id(p) for p in held]
    for _ in range(50):
        again = walk(head)
        assert all(a is b for a, b in zip(again, held))
        del again
    assert [id(p) for p in held] == ids
    assert len({id(p) for p in held}) == 50  # distinct objects, distinct proxies


def test_identity_table_grows_and_shrinks_without_losing_entries():
    n = 5000  # far beyond the table's initial 64 entries: many rehashes up, then down
    head = chain(n, "g")
    base = size()
    held = walk(head)
    assert size() == base + n
    for p, q in zip(held, walk(head)):
        assert p is q
    # Drop every other proxy (backward-shift deletion moves the survivors' entries).
    kept = held[1::2]
    del held, p, q
    gc.collect()
    assert size() == base + len(kept)
    by_name = {p.name: p for p in kept}
    for p in walk(head):
        if p.name in by_name:
            assert p is by_name[p.name]
    del p, by_name
    kept.reverse()
    while kept:
        kept.pop()
        if len(kept) % 997 == 0:
            gc.collect()
            assert size() == base + len(kept)
            for q in kept[:20]:
                assert q.manager is None or q.manager.name == f"g{int(q.name[1:]) + 1}"
            q = None
    gc.collect()
    assert size() == base


def test_a_proxy_being_destroyed_is_not_handed_out_again():
    holder = cs.allocate(Employee, "holder", 1.0, cs.allocate(Employee, "boss", 2.0))
    got = []

    def reread(_ref):  # runs while the proxy is being destroyed (refcount 0)
        got.append(holder.manager)

    p = holder.manager
    r = weakref.ref(p, reread)
    del p
    assert r() is None and len(got) == 1
    fresh = got[0]
    assert fresh.name == "boss" and fresh.salary == 2.0
    assert holder.manager is fresh  # the new proxy is the one the table gives
    cs.collect(timeout=30)
    assert fresh.name == "boss"


# ---- GC roots ------------------------------------------------------------------------------------


def test_proxies_from_field_reads_keep_objects_alive_and_release_them():
    n = 1000
    head = chain(n, "k")
    held = walk(head)
    head.manager = None  # from now on only the proxies' roots keep e0.. alive
    for _ in range(2):
        cs.collect(timeout=30)
    assert [p.name for p in held] == [f"k{i}" for i in range(n)]
    assert [p.salary for p in held[:3]] == [0.0, 1.0, 2.0]
    cs.collect(timeout=30)
    del held
    gc.collect()
    freed = sum(cs.collect(timeout=30).objects_freed for _ in range(3))
    assert freed >= 2 * n  # n employees and their names


def test_reads_racing_with_writes_of_another_process_and_the_collector():
    # Another process swaps a field between fresh objects as fast as it can while this one reads
    # the field (rooted loads that may see the slot change under them) and a thread runs collector
    # cycles: every object read must be whole and stay alive while its proxy lives.
    holder = cs.allocate(Employee, "holder", 0.0)
    repo = unique("race")
    cs.repository(repo).set(holder)
    writer = spawn(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import colors_shm as cs
        from employees import Employee
        holder = cs.repository({repo!r}).get()
        i = 0
        while holder.salary == 0.0:
            holder.manager = cs.allocate(Employee, f"w{{i}}", float(i))
            i += 1
        print(i)
    """)
    seen = []
    distinct = set()
    try:
        with collecting():
            reads = 0
            # Read for 1 s once the writer is running, and on (up to 30 s: a loaded machine runs
            # the writer slowly) until the reads have raced with more than 100 of its writes.
            deadline = give_up = None
            while deadline is None or time.monotonic() < deadline or (len(distinct) <= 100 and time.monotonic() < give_up):
                m = holder.manager
                reads += 1
                if m is not None:
                    if deadline is None:
                        deadline = time.monotonic() + 1.0
                        give_up = deadline + 29.0
                    assert m.name == f"w{int(m.salary)}"
                    distinct.add(m.name)
                    if reads % 500 == 0:
                        seen.append(m)
    finally:
        holder.salary = 1.0
        out, err = writer.communicate(timeout=30)
    assert writer.returncode == 0, err
    assert int(out) > 0
    assert len(distinct) > 100  # the reads did race with many writes
    holder.manager = None
    cs.collect(timeout=30)
    cs.collect(timeout=30)
    assert all(m.name == f"w{int(m.salary)}" for m in seen)


# ---- direct reads of strings and boxed floats ---------------------------------------------------


STRINGS = ["", "a", "1234567", "12345678", "123456789", "x" * 1023, "y" * 1024, "z" * 1025, "héllo",
           "日本語のテキスト", "emoji 🎉 mixed ascii", "a" * 7 + "é", "\x7f" * 9, "ÿ" * 600]


@pytest.mark.parametrize("s", STRINGS, ids=range(len(STRINGS)))
def test_string_fields_read_back_exactly(s):
    e = cs.allocate(Employee, s, 1.0)  # a string-typed field
    n = cs.allocate(Node, s)  # an untyped field
    for _ in range(3):
        assert e.name == s and type(e.name) is str
        assert n.value == s
    e.name = s + "!"
    assert e.name == s + "!"


def test_strings_and_boxed_floats_read_while_the_collector_runs():
    specials = [math.inf, -math.inf, 5e-324, 1e300, -1e-310]
    nodes = [cs.allocate(Node, f"text-{i}-é" if i % 2 else specials[i % len(specials)]) for i in range(200)]
    with collecting():
        for _ in range(50):
            for i, n in enumerate(nodes):
                want = f"text-{i}-é" if i % 2 else specials[i % len(specials)]
                assert n.value == want
    nan = cs.allocate(Node, math.nan)
    assert math.isnan(nan.value)


# ---- threads, detach/attach, fork ----------------------------------------------------------------


def test_threads_read_shared_trees_with_stable_identity():
    def tree(d, k):
        return None if d == 0 else Node(k, tree(d - 1, 2 * k), tree(d - 1, 2 * k + 1))

    def total(n):
        return 0 if n is None else n.value + total(n.left) + total(n.right)

    roots = cs.copy_to([tree(6, i) for i in range(8)])
    expected = [total(tree(6, i)) for i in range(8)]
    pinned = [r.left for r in roots]  # held by the main thread throughout
    errors = []

    def work():
        try:
            for _ in range(30):  # each walk makes and drops a proxy per node, in every thread
                for i, r in enumerate(roots):
                    assert r.left is pinned[i]
                    assert total(r) == expected[i]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [r.left for r in roots] == pinned and all(a is b for a, b in zip((r.left for r in roots), pinned))


def test_free_lists_survive_detach_and_attach():
    head = chain(300, "d")
    for _ in range(5):
        walk(head)  # fills the handle free list and the root pool
    stale = walk(head)[:10]
    cs.detach()
    cs.attach()
    with pytest.raises(cs.NotAttachedError):
        stale[0].name
    head = chain(300, "n")  # new proxies reuse free handles; roots come from the new attachment
    held = walk(head)
    del stale  # handles of the closed attachment die now: they must not touch the new one
    gc.collect()
    head.manager = None
    cs.collect(timeout=30)
    cs.collect(timeout=30)
    assert [p.name for p in held] == [f"n{i}" for i in range(300)]
    assert held[5] is held[4].manager
    del held
    gc.collect()
    assert sum(cs.collect(timeout=30).objects_freed for _ in range(3)) >= 600


def _fork_reader(name, inherited):
    try:
        inherited.name
        result = "stale proxy worked"
    except cs.NotAttachedError:
        result = "stale"
    del inherited  # a handle of the parent's attachment dies in the child: nothing is touched
    gc.collect()
    head = chain(100, "c")
    held = walk(head)
    head.manager = None
    cs.collect(timeout=30)
    ok = [p.name for p in held] == [f"c{i}" for i in range(100)] and held[1] is held[0].manager
    cs.channel(name).send(cs.copy_to([result, ok]))


def test_fork_child_makes_its_own_proxies():
    import multiprocessing

    name = unique("fork-proxies")
    head = chain(100, "p")
    held = walk(head)  # the parent's pool and handles are populated when it forks
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_fork_reader, args=(name, held[0]))
    proc.start()
    got = cs.channel(name).receive(timeout=60)
    proc.join(30)
    assert proc.exitcode == 0
    assert list(got) == ["stale", True]
    assert [p.name for p in walk(head)] == [f"p{i}" for i in range(100)]
    assert all(a is b for a, b in zip(walk(head), held))


# ---- container proxies (values.cpp) ----------------------------------------------------------------


def test_container_proxies_identity_and_cache_cleanup():
    d = cs.copy_to({"l": [1, 2], "d": {"k": {3}}, "s": {4}})
    base = size()
    for _ in range(300):  # each read makes a proxy and drops it (its weakref callback runs)
        assert d["l"] == [1, 2] and d["d"]["k"] == {3} and d["s"] == {4}
    gc.collect()
    assert size() == base
    held = d["l"]
    assert d["l"] is held and isinstance(held, cs.SharedList)
    got = []
    inner = d["d"]
    r = weakref.ref(inner, lambda _r: got.append(d["d"]))  # re-read while `inner` is destroyed
    del inner
    assert r() is None and len(got) == 1 and got[0]["k"] == {3}
    assert d["d"] is got[0]
    with pytest.raises(TypeError):
        cs.SharedList()  # proxies are made only by the extension
    lst = cs.copy_to([[i] for i in range(1000)])
    assert [x[0] for x in lst] == list(range(1000))
    kept = [x for x in lst]
    assert all(a is b for a, b in zip(lst, kept))


def test_a_proxy_made_by_python_code_run_during_the_allocation_stays_the_one():
    # Python 3.11 may run a collection inside the GC allocation of a new proxy, and with it any
    # Python code (here a gc callback) that reads the same field: the proxy that code made must
    # stay the object's only live proxy.
    holder = cs.allocate(Employee, "holder", 1.0, cs.allocate(Employee, "boss", 2.0))
    box = cs.copy_to({"l": [1]})
    made = []

    def reread(phase, info):
        if phase == "start" and not made:
            made.append((holder.manager, box["l"]))

    old = gc.get_threshold()
    gc.callbacks.append(reread)
    collected = 0
    try:
        for i in range(50):
            made.clear()
            gc.set_threshold(1)  # the next GC allocation (the new proxy's) collects
            if i % 2:
                m, l = holder.manager, box["l"]
            else:
                l, m = box["l"], holder.manager
            gc.set_threshold(*old)
            if made:
                collected += 1
                assert made[0][0] is m and made[0][1] is l  # one live proxy per object
            assert holder.manager is m and box["l"] is l
            del m, l
    finally:
        gc.callbacks.remove(reread)
        gc.set_threshold(*old)
    assert collected > 0


def test_fork_child_code_before_the_bindings_at_fork_hook_cannot_use_the_parents_roots():
    # An at-fork hook registered before colors_shm runs in the child before the binding's own hook
    # has moved the generation on; a field read there must not take a root slot from the pool (the
    # parent's slots: writing them would corrupt the parent's roots) but raise NotAttachedError.
    out = run(f"""
        import os, sys
        sys.path.insert(0, {TESTS!r})
        state = {{}}

        def hook():
            h = state.get("holder")
            if h is not None:
                state.pop("held")  # a proxy dies here: its table entry goes, its root is left alone
                try:
                    h.manager
                    state["child"] = "read"
                except Exception as e:
                    state["child"] = type(e).__name__

        os.register_at_fork(after_in_child=hook)
        import colors_shm as cs
        from employees import Employee

        cs.proxy_cache(0)  # else the dropped proxy stays live, and the read needs no root at all

        holder = cs.allocate(Employee, "h", 1.0, cs.allocate(Employee, "m", 2.0))
        for _ in range(10):
            holder.manager  # fills the root pool
        state["holder"] = holder
        state["held"] = holder.manager
        kept = [cs.allocate(Employee, f"k{{i}}", float(i)) for i in range(300)]
        pid = os.fork()
        if pid == 0:
            os.write(1, (state.get("child", "none") + "\\n").encode())
            os._exit(0)
        os.waitpid(pid, 0)
        for _ in range(3):
            cs.collect(timeout=30)
        assert [k.name for k in kept] == [f"k{{i}}" for i in range(300)]
        assert holder.manager.name == "m"
        print("parent ok")
    """, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["NotAttachedError", "parent ok"]


# ---- container proxies: _Ref, fast paths, cyclic GC ------------------------------------------


def test_container_proxies_are_not_tracked_by_the_cyclic_gc_and_cannot_join_a_cycle():
    # make_proxy untracks them: that is sound only while a proxy cannot refer to itself, so its
    # `_ref` is read-only and it has no __dict__.
    for private in ([1, 2], {"a": 1}, {1, 2}):
        p = cs.copy_to(private)
        assert not gc.is_tracked(p)
        with pytest.raises(AttributeError):
            p._ref = p
        with pytest.raises(AttributeError):
            p.anything = p
    p = cs.copy_to([1])
    d = {"p": p}  # what refers to a proxy is tracked as usual
    assert gc.is_tracked(d)


def test_a_dropped_list_proxy_frees_its_root_without_the_cyclic_gc():
    gc.disable()
    try:
        lst = cs.copy_to([[i] for i in range(10)])
        inner = lst[3]
        ref = weakref.ref(inner)
        raw = inner._ref.raw
        del inner
        assert ref() is None  # freed by its refcount alone: no cycle kept it
        assert lst[3]._ref.raw == raw
    finally:
        gc.enable()


def test_list_fast_paths_follow_list_semantics():
    lst = cs.copy_to([10, 20, 30, "x", None])
    assert len(lst) == 5 and lst[0] == 10 and lst[-1] is None and lst[-5] == 10
    assert lst[1:3] == [20, 30] and lst[::-2] == [None, 30, 10] and lst[10:] == []
    assert list(lst) == [10, 20, 30, "x", None] and [x for x in lst] == list(lst)
    assert lst[True] == 20  # operator.index, as list
    for bad in (5, -6, 2**70, -(2**70)):
        with pytest.raises(IndexError, match="list index out of range"):
            lst[bad]
    with pytest.raises(TypeError):
        lst["0"]
    with pytest.raises(TypeError):
        lst[1.0]
    it = iter(lst)
    lst.append(40)  # iteration reads a snapshot taken when it started
    assert list(it) == [10, 20, 30, "x", None]
    assert len(lst) == 6 and lst[5] == 40


def test_fast_paths_and_ref_methods_refuse_foreign_receivers():
    lst, dct = cs.copy_to([1]), cs.copy_to({"a": 1})
    SharedList = type(lst)
    for call in (lambda: SharedList.__len__(dct), lambda: SharedList.__getitem__(dct, 0),
                 lambda: SharedList.__iter__(object()), lambda: SharedList.__len__(None)):
        with pytest.raises(TypeError):
            call()
    Ref = type(lst._ref)
    for call in (lambda: Ref.lget(5, 0), lambda: Ref.litems(object()), lambda: Ref.__len__("abc"),
                 lambda: Ref.same(lst._ref, 5), lambda: Ref()):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(cs.TypeMismatchError):
        dct._ref.lget(0)  # a _Ref of another kind
    assert lst._ref.same(lst._ref) and lst._ref.kind == "list"


def test_ref_objects_are_reused_without_mixing_up_their_objects():
    lists = [cs.copy_to([i]) for i in range(600)]  # more than the free list keeps
    raws = [l._ref.raw for l in lists]
    del lists
    again = [cs.copy_to([i, i]) for i in range(600)]
    assert [l[0] for l in again] == list(range(600)) and all(len(l) == 2 for l in again)
    assert len(set(l._ref.raw for l in again)) == 600
    del raws
