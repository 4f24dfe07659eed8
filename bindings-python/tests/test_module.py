"""module.cpp: attach / detach / is_attached, implicit attach, collector statistics."""

import os

import pytest

import colors_shm as cs
from conftest import run


def test_implicit_attach_on_first_use():
    r = run("""
        import colors_shm as cs
        assert not cs.is_attached()
        x = cs.copy_to([1, 2])
        assert cs.is_attached()
        print(list(x))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1, 2]"


def test_attach_detach_cycle():
    cs.attach()
    assert cs.is_attached()
    cs.attach()  # idempotent
    lst = cs.copy_to([1, 2, 3])
    cs.detach()
    assert not cs.is_attached()
    with pytest.raises(cs.NotAttachedError, match="detach"):
        len(lst)
    with pytest.raises(cs.NotAttachedError):
        lst.append(4)
    cs.attach()
    assert cs.is_attached()
    with pytest.raises(cs.NotAttachedError):  # stale proxies stay stale after re-attaching
        lst[0]
    assert list(cs.copy_to([4])) == [4]


def test_attach_explicit_socket(server):
    r = run(f"""
        import os, colors_shm as cs
        os.environ.pop("COLORS_SOCKET")
        cs.attach({server.socket!r})
        print(cs.is_attached())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_collect_and_gc_stats():
    s = cs.collect(timeout=30)
    assert isinstance(s, cs.GcStats)
    assert s.cycle >= 1
    s2 = cs.gc_stats()
    assert s2.cycle >= s.cycle
    h = cs.heap_stats()
    assert h["capacity"] == 64 << 20
    assert 0 <= h["free_bytes"] <= h["capacity"]


def test_gc_stats_count_the_objects_taken_from_the_pending_set():
    # Overwriting 100 references to strings puts the 100 strings in the pending set: the next
    # cycle's remark takes them (other clients of the test server may add their own).
    held = cs.copy_to(["pending %d" % i for i in range(100)])
    before = cs.collect(timeout=30).cycle
    for i in range(100):
        held[i] = i
    s = cs.collect(timeout=30)
    # A cycle started by someone else in between would have taken some of them (its figures
    # are not kept): then only the count of cycles says so.
    assert s.pending_objects >= 100 or s.cycle > before + 1
    assert s.marking_passes >= 2


def _forked_worker(name, stale):
    # Runs in a child made by fork(): the parent's proxies are stale, new work attaches anew.
    try:
        stale.append(1)
        result = "stale proxy worked"
    except cs.NotAttachedError:
        result = "stale"
    cs.channel(name).send(cs.copy_to([result, os.getpid()]))


def test_fork_child_attaches_as_its_own_client():
    import multiprocessing

    name = "fork-" + str(os.getpid())
    parent_list = cs.copy_to([1, 2, 3])
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=_forked_worker, args=(name, parent_list))
    p.start()
    got = cs.channel(name).receive(timeout=30)
    p.join(30)
    assert p.exitcode == 0
    assert got[0] == "stale" and got[1] == p.pid
    parent_list.append(4)  # the parent's attachment is untouched
    assert list(parent_list) == [1, 2, 3, 4]
