"""The proxy cache (colors_shm.proxy_cache(), src/ext/proxy_cache.hpp): the last proxies made stay
alive, so reading an object again finds its proxy. Each test states the guarantee it checks: what
the cache keeps and for how long, that collect() and detach() empty it, that heap pressure in this
process makes it let go of what only it keeps, and that list reads served from cached proxies
(containers.cpp's snapshot_live) still see every list at one instant."""

from __future__ import annotations

import os
import time
import weakref

import pytest

import colors_shm as cs
from conftest import Server, collecting, run, spawn, unique
from employees import Employee

TESTS = os.path.dirname(os.path.abspath(__file__))


# Each test starts from an empty proxy cache of the default capacity, and leaves it so.
pytestmark = pytest.mark.usefixtures("fresh_proxy_cache")


def test_a_dropped_proxy_is_kept_and_found_again():
    head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
    r = weakref.ref(head.manager)
    assert r() is not None  # only the cache holds it now
    assert head.manager is r()  # the same proxy, not a new one
    cs.proxy_cache(0)  # off: it dies with the last reference, as without a cache
    assert r() is None
    r = weakref.ref(head.manager)
    assert r() is None


def test_the_capacity_bounds_what_the_cache_keeps():
    cs.proxy_cache(4)
    staff = cs.copy_to([Employee(f"e{i}", float(i)) for i in range(10)])
    refs = [weakref.ref(e) for e in staff]  # the iteration made the ten proxies in order
    alive = [r() is not None for r in refs]
    # The list's own proxy is older than its elements': the last four made are the elements 6..9.
    assert alive == [False] * 6 + [True] * 4
    assert [e.name for e in staff] == [f"e{i}" for i in range(10)]


def test_collect_empties_the_cache():
    staff = cs.copy_to([Employee(f"c{i}", float(i)) for i in range(5)])
    refs = [weakref.ref(e) for e in staff]
    assert all(r() is not None for r in refs)
    del staff
    cs.collect(timeout=30)
    assert all(r() is None for r in refs)
    assert cs.proxy_cache() > 0  # emptied, not switched off


def test_proxies_read_in_a_read_scope_are_not_cached():
    head = cs.copy_to(Employee("head", 0.0, Employee("s", 1.0)))
    with cs.read_scope():
        inside = weakref.ref(head.manager)  # borrowed, dropped at once
        assert inside() is None
    outside = weakref.ref(head.manager)
    assert outside() is not None


def test_capacity_arguments_are_checked():
    before = cs.proxy_cache()
    for bad in (-1, 2**22 + 1, 2**80):
        with pytest.raises(cs.InvalidArgumentError, match="capacity"):
            cs.proxy_cache(bad)
    for bad in (True, "5", 1.5):
        with pytest.raises(TypeError):
            cs.proxy_cache(bad)
    assert cs.proxy_cache() == before
    assert cs.proxy_cache(2**22) == 2**22
    assert cs.proxy_cache(7) == 7


def test_cached_proxies_go_stale_at_detach_and_nothing_breaks():
    out = run(f"""
        import sys, weakref
        sys.path.insert(0, {TESTS!r})
        import colors_shm as cs
        from employees import Employee

        head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
        cs.repository("{unique('cache-detach')}").set(head)
        kept = weakref.ref(head.manager)
        cs.detach()
        assert kept() is None  # the cache let go of it at the detach
        try:
            head.manager
        except cs.NotAttachedError:
            print("stale")
        cs.attach()
        print(cs.copy_to(Employee("again", 2.0, Employee("n", 3.0))).manager.name)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stale", "n"]


def test_heap_pressure_makes_the_cache_let_go_of_what_only_it_keeps():
    # A 16 MiB heap and 1 MiB objects: without the relief the cached proxies of the dropped ones
    # would keep them all, and the twentieth allocation would raise OutOfMemoryError.
    srv = Server(heap="16M")
    try:
        out = run(f"""
            import gc, sys
            sys.path.insert(0, {TESTS!r})
            import colors_shm as cs
            from employees import Employee

            assert cs.proxy_cache() >= 1024
            big = "x" * (1 << 20)
            held = cs.copy_to([b"y" * (1 << 20)])     # a proxy the program keeps
            boss = cs.copy_to(Employee(big, 1.0))      # likewise, a user object
            for i in range(60):
                cs.copy_to([b"z" * (1 << 20)])          # a list proxy only the cache keeps
                cs.copy_to(Employee(big, float(i)))     # a user proxy only the cache keeps
            assert held[0] == b"y" * (1 << 20)
            assert boss.name == big and boss.salary == 1.0
            # Proxies the relief made stale are unreachable, save through the cyclic GC's list of
            # every object: even then a use raises, it never reads freed memory.
            stale = 0
            for o in gc.get_objects():
                if isinstance(o, Employee) and o is not boss:
                    try:
                        o.salary
                    except cs.NotAttachedError:
                        stale += 1
            assert stale > 0
            print("ok", stale)
        """, timeout=120, socket=srv.socket)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("ok")
    finally:
        srv.stop()


def test_list_reads_from_cached_proxies_see_the_list_at_one_instant():
    # Another process keeps replacing the list's contents with a rotation of the same ten objects
    # (one atomic replacement each, lst[:] = ...), and sometimes empties it; this process, whose
    # cache holds all ten proxies, iterates and indexes the list meanwhile: every snapshot must be
    # one of the states the writer made, never a mix.
    objs = [cs.allocate(Employee, f"r{i}", float(i)) for i in range(10)]
    lst = cs.copy_to([])
    lst.extend(objs)
    repo = unique("rotations")
    cs.repository(repo).set(lst)
    writer = spawn(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import colors_shm as cs
        lst = cs.repository({repo!r}).get()
        objs = list(lst)
        n = 0
        while objs[0].salary == 0.0:
            k = n % 10
            lst[:] = [] if n % 7 == 6 else objs[k:] + objs[:k]
            n += 1
        print(n)
    """)
    def refill():  # collect() emptied the cache: fill it again
        for o in objs:
            o.name

    snapshots = 0
    try:
        with collecting(after_each=refill):
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                got = list(lst)
                snapshots += 1
                if not got:
                    continue
                assert len(got) == 10, [e.name for e in got]
                k = next(i for i, o in enumerate(objs) if o is got[0])
                assert all(g is o for g, o in zip(got, objs[k:] + objs[:k])), [e.name for e in got]
    finally:
        objs[0].salary = 0.5
        out, err = writer.communicate(timeout=30)
    assert writer.returncode == 0, err
    assert int(out) > 100 and snapshots > 100


def test_another_processs_heap_pressure_makes_an_idle_cache_let_go():
    # A reader caches the proxies of twelve 1 MiB lists of a 16 MiB heap, drops them and idles; the
    # writer unpublishes them and needs six more MiB at once. Only the reader's watcher thread can
    # free the twelve: without it the writer's allocations raise OutOfMemoryError.
    srv = Server(heap="16M")
    repo = unique("pressure")
    try:
        out = run(f"""
            import colors_shm as cs, subprocess, sys, textwrap, time
            cs.repository({repo!r}).set(cs.copy_to([[b"a" * (1 << 20)] for _ in range(12)]))
            reader = subprocess.Popen([sys.executable, "-c", textwrap.dedent('''
                import colors_shm as cs, sys, time
                top = cs.repository({repo!r}).get()
                lists = list(top)
                assert sum(len(l[0]) for l in lists) == 12 << 20
                del lists, top
                print("cached", flush=True)
                time.sleep(60)
            ''')], stdout=subprocess.PIPE, text=True)
            try:
                assert reader.stdout.readline().strip() == "cached"
                cs.repository({repo!r}).set(None)
                kept = [cs.copy_to([b"b" * (1 << 20)]) for _ in range(6)]
                assert all(k[0] == b"b" * (1 << 20) for k in kept)
            finally:
                reader.kill()
            print("ok")
        """, timeout=120, socket=srv.socket)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["ok"]
    finally:
        srv.stop()


def test_a_process_whose_watcher_waits_exits_cleanly():
    # The watcher thread is waiting (GIL released) when the interpreter exits: it must end before
    # finalization, or, waking during it, CPython ends it inside the extension's GIL guard and the
    # process aborts ("terminate called without an active exception").
    for _ in range(2):
        out = run(f"""
            import sys, threading, time
            sys.path.insert(0, {TESTS!r})
            import colors_shm as cs
            from employees import Employee
            head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
            head.manager
            deadline = time.monotonic() + 10
            while not any(t.name == "colors_shm heap-pressure watcher" for t in threading.enumerate()):
                assert time.monotonic() < deadline
                time.sleep(0.01)

            class Slow:  # finalization takes longer than the watcher's 1 s wait
                def __del__(self):
                    time.sleep(1.5)

            slow = Slow()
            print("bye")
        """)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["bye"] and "terminate" not in out.stderr


def test_a_watcher_that_starts_after_its_detach_does_not_attach_again():
    # The watcher is started with its attachment's generation; one whose thread only gets to run
    # after that attachment's detach (delayed here on purpose) ends without touching the heap,
    # never attaching the process again.
    out = run(f"""
        import sys, threading, time
        sys.path.insert(0, {TESTS!r})
        import colors_shm as cs
        from employees import Employee

        def delayed(gen):
            def later():
                time.sleep(0.2)
                cs._watch_heap_pressure(gen)
            threading.Thread(target=later, name="colors_shm heap-pressure watcher", daemon=True).start()

        cs._ext._set_pressure_watcher_starter(delayed)
        for _ in range(3):
            head = cs.copy_to(Employee("head", 0.0, Employee("m", 1.0)))
            head.manager  # the first proxy cached in this attachment starts its watcher
            cs.detach()
            time.sleep(0.5)
            assert not cs.is_attached()
            assert not any(t.name == "colors_shm heap-pressure watcher" for t in threading.enumerate())
        print("ok")
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]
