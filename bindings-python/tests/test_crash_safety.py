"""Crash safety: sequences of Python calls that used to kill the process (a signal, a C++ abort)
or corrupt memory. Each runs in a child process and checks that the child exits normally, having
seen the expected Python exception (never SystemError, never a corrupted value).

The random version of the same check is test_fuzz_safety.py."""

import signal

import pathlib

from conftest import run, unique

TESTS = str(pathlib.Path(__file__).resolve().parent)


def assert_clean(r, expect: str):
    """The child exited 0 (not by a signal) and printed `expect` as its last line."""
    assert r.returncode >= 0, f"child killed by {signal.Signals(-r.returncode).name}\nstderr: {r.stderr}"
    assert r.returncode == 0, f"child exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "SystemError" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == expect, r.stdout


def test_hidden_handle_not_reachable_through_gc():
    # The identity table's handle of a proxy used to be visible to gc.get_referents; kept alive
    # past its proxy, it left the table pointing at the freed proxy, which repository.get()
    # then handed out (SIGSEGV / abort).
    name = unique("gc-handle")
    r = run(f"""
        import gc, colors_shm as cs
        from colors_shm import _colors_shm as ext
        import sys; sys.path.insert(0, {TESTS!r})
        from employees import Employee
        repo = cs.repository({name!r})
        kept = []
        for make in (lambda: cs.copy_to([1, 2]), lambda: cs.copy_to({{"a": 1}}),
                     lambda: cs.copy_to({{1, 2}}), lambda: cs.copy_to(Employee("x", 1.0))):
            p = make()
            refs = gc.get_referents(p)
            assert not any(type(o).__name__ == "_Handle" for o in refs), refs
            kept.append(refs)
            repo.set(p)
            del p
            gc.collect()
            q = repo.get()   # a live proxy, not the freed one
            assert cs.is_shared(q), q
            repr(q)
        print("ok")
    """)
    assert_clean(r, "ok")


def test_gc_referents_of_proxies_still_visit_their_references():
    # Hiding the handle must not hide the rest: gc still sees the _Ref, the class and the
    # instance dict of a user proxy subclass, so cycles through them are collected.
    r = run(f"""
        import gc, weakref, colors_shm as cs
        import sys; sys.path.insert(0, {TESTS!r})
        from employees import Employee
        lst = cs.copy_to([1])
        assert lst._ref in gc.get_referents(lst)
        assert type(lst) in gc.get_referents(lst)
        e = cs.copy_to(Employee("x", 1.0))
        Sub = type("Sub", (type(e),), {{}})
        assert type(e) in gc.get_referents(e)

        class Cyc:
            pass
        c = Cyc()
        c.lst = cs.copy_to([2])
        c.lst2 = c
        w = weakref.ref(c)
        del c
        gc.collect()
        assert w() is None
        print("ok")
    """)
    assert_clean(r, "ok")


def test_rpc_capsule_outliving_its_client():
    # _RpcClient._capsule() used after its client was freed: use after free.
    name = unique("capsule")
    r = run(f"""
        import gc, colors_shm as cs
        from colors_shm import _colors_shm as ext
        srv = ext._RpcServer({name!r}, 16)
        c = ext._RpcClient({name!r}, -1)
        cap = c._capsule()
        del c
        gc.collect()
        # The capsule keeps its client alive: the call is made (nobody serves: timeout).
        try:
            ext._rpc_call(cap, "m", (), 0.05)
        except ext.CallTimeoutError:
            print("timeout")
        except cs.SharedMemoryError as e:
            print(type(e).__name__)
        cs.detach()
        try:
            ext._rpc_call(cap, "m", (), 0.05)
        except cs.NotAttachedError:
            print("not attached")
    """)
    assert_clean(r, "not attached")
    assert r.stdout.split()[0] == "timeout", r.stdout


def test_register_proxies_validates_and_is_one_shot():
    # _register_proxies(B, 1, 2, 3, 4) made copy_to return a corrupted int.
    r = run("""
        import colors_shm as cs
        from colors_shm import _colors_shm as ext
        from colors_shm._proxies import SharedProxy
        class B(SharedProxy):
            __slots__ = ("_ref", "_colors_handle")
        for args in [(B, 1, 2, 3, 4), (1, 2, 3, 4, 5), (SharedProxy, list, dict, set, object)]:
            try:
                ext._register_proxies(*args)
                print("accepted", args)
            except (TypeError, ValueError) as e:
                pass
        x = cs.copy_to([1, 2, 3])
        assert type(x) is cs.SharedList, type(x)
        assert list(x) == [1, 2, 3]
        d = cs.copy_to({"a": [1]})
        assert d["a"][0] == 1
        print("ok")
    """)
    assert_clean(r, "ok")


def test_internal_entry_points_validate_arguments():
    # _new_object('x.Y', ['a']) raised SystemError; other internal calls read their arguments as
    # the types they expected without checking.
    r = run(f"""
        import colors_shm as cs
        from colors_shm import _colors_shm as ext
        bad_calls = [
            lambda: ext._new_object("x.Y", ["a"]),
            lambda: ext._new_object("x.Y", [("a",)]),
            lambda: ext._new_object("x.Y", [("a", 99, "")]),
            lambda: ext._new_object("x.Y", [("a", -1, "")]),
            lambda: ext._new_object("x.Y", [(1, 1, "")]),
            lambda: ext._install_user_class(1, [], False),
            lambda: ext._install_user_class(int, [], False),
            lambda: ext._install_user_class(type("Z", (), {{"__slots__": ("_colors_ref",)}}), [1], False),
            lambda: ext._shared_setattr(1, "a", 1),
            lambda: ext._shared_setattr(cs.copy_to([1]), "a", 1),
            lambda: ext._shared_delattr(object(), "a"),
            lambda: ext._shared_delattr(cs.copy_to({{1: 2}}), 5),
            # a container's read-for-update methods called on another kind of container
            lambda: cs.copy_to({{1: 2}})._ref.litems_for_update(),
            lambda: cs.copy_to({{1}})._ref.lreplace_if(0, []),
            lambda: cs.copy_to([1])._ref.sremove_all([1]),
            lambda: cs.copy_to([1])._ref.sitems_for_update(),
            lambda: cs.copy_to({{1: 2}})._ref.sitems_for_update(),
            lambda: ext._register_classes(1, 2, 3),
            lambda: ext._register_remote_error_factory(1),
            lambda: ext._FieldDescriptor(),
            lambda: ext._rpc_call(1, "m", (), None),
            # fast paths of one proxy class put on another (they were, and broke its instances)
            lambda: ext._install_sorted_fast_paths(cs.SharedList),
            lambda: ext._install_list_fast_paths(cs.SharedDict),
            lambda: ext._install_list_fast_paths(cs.SharedSortedDict),
        ]
        for i, call in enumerate(bad_calls):
            try:
                call()
                print("accepted", i)
            except SystemError as e:
                print("SystemError", i, e)
            except (TypeError, ValueError):
                pass
        # still working afterwards
        import sys; sys.path.insert(0, {TESTS!r})
        from employees import Employee
        e = cs.allocate(Employee, "a", 2.0)
        assert e.name == "a" and e.salary == 2.0
        lst, d = cs.copy_to([1, 2]), cs.copy_to({{"k": 1}})
        assert lst[1] == 2 and len(lst) == 2 and list(lst) == [1, 2] and d["k"] == 1
        sd = cs.allocate(cs.SharedSortedDict)
        sd[2], sd[1] = "b", "a"
        assert sd[1] == "a" and list(sd) == [1, 2]
        print("ok")
    """)
    assert_clean(r, "ok")
    assert "accepted" not in r.stdout, r.stdout


def test_detach_wakes_a_thread_blocked_in_receive():
    # detach() while another thread was blocked in channel.receive(): SIGSEGV in that thread.
    name = unique("detach-recv")
    r = run(f"""
        import threading, time, colors_shm as cs
        ch = cs.channel({name!r}, 4)
        lst = cs.copy_to([1])
        res = []
        def receiver():
            try:
                ch.receive()
                res.append("received")
            except cs.NotAttachedError:
                res.append("not attached")
        def waiter():
            try:
                with cs.synchronized(lst):
                    cs.wait(lst)
                res.append("woken")
            except cs.NotAttachedError:
                res.append("not attached")
        from colors_shm import _colors_shm as ext
        srv = ext._RpcServer({name!r} + "-rpc", 16)  # never serves: the call below waits
        client = ext._RpcClient({name!r} + "-rpc", -1)
        def caller():
            try:
                client.call("m", [1], None)
                res.append("answered")
            except cs.NotAttachedError:
                res.append("not attached")
        ts = [threading.Thread(target=receiver), threading.Thread(target=waiter), threading.Thread(target=caller)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        cs.detach()
        for t in ts:
            t.join(10)
            assert not t.is_alive()
        assert res == ["not attached"] * 3, res
        for call in (lambda: ch.receive(timeout=0), lambda: len(lst)):
            try:
                call()
            except cs.NotAttachedError:
                pass
            except TimeoutError:
                pass  # the channel attaches again on use
        try:
            len(lst)
        except cs.NotAttachedError:
            print("ok")
    """)
    assert_clean(r, "ok")


def test_old_rpc_objects_raise_after_detach():
    name = unique("rpc-detach")
    r = run(f"""
        import colors_shm as cs
        from colors_shm import _colors_shm as ext
        srv = ext._RpcServer({name!r}, 16)
        c = ext._RpcClient({name!r}, -1)
        p = c.call_async("m", [1])
        cs.detach()
        cs.attach()
        calls = [lambda: srv.next(0.01), lambda: c.call("m", [], 0.01), lambda: c.call_async("m", []),
                 lambda: c.server_alive(), lambda: p.get(0.01), lambda: p.ready(),
                 lambda: c.call_batch([("m", [])])]
        for i, call in enumerate(calls):
            try:
                call()
                print("accepted", i)
            except cs.NotAttachedError:
                pass
        print("ok")
    """)
    assert_clean(r, "ok")
    assert "accepted" not in r.stdout, r.stdout


def test_class_assignment_cannot_expose_the_handle():
    # A class with a plain slot at the offset of the hidden one read the handle through
    # `proxy.__class__ = V`; kept past its proxy, as above.
    r = run(f"""
        import gc, colors_shm as cs
        import sys; sys.path.insert(0, {TESTS!r})
        from employees import Employee
        e = cs.copy_to(Employee("a", 1.0))
        class V(Employee):
            __slots__ = ("_colors_ref",)
        try:
            e.__class__ = V
            print("assigned", e._colors_ref)
        except TypeError:
            pass
        lst = cs.copy_to([1])
        lst.__class__ = cs.SharedDict  # between proxy classes: allowed, and checked on use
        try:
            lst["a"]
        except cs.TypeMismatchError:
            pass
        print(e.name)
    """)
    assert_clean(r, "a")


def test_extension_types_are_not_user_classes():
    # allocate()/copy_to() of a pybind11 class (or a subclass of one) made a proxy class over it,
    # whose instances pybind11 then deallocated uninitialised (SIGSEGV at the next collection).
    r = run("""
        import gc, colors_shm as cs
        from colors_shm import _colors_shm as ext
        class Sub(ext.Repository):
            pass
        for cls in (ext.Repository, ext._RpcClient, Sub, ext.SharedClass):
            try:
                x = cs.allocate(cls, 0)
                print("allocated", cls, type(x))
            except (TypeError, ValueError):
                pass
            gc.collect()
        print("ok")
    """)
    assert_clean(r, "ok")
    assert "allocated" not in r.stdout, r.stdout


def test_detach_inside_python_code_called_mid_operation():
    # Python code run in the middle of an operation (a property getter copy_to reads, the iterator
    # extend() consumes) that detaches and attaches again: the operation went on writing words of
    # the closed attachment (objects no longer rooted, maybe another server's segment).
    r = run("""
        import colors_shm as cs

        class Evil:
            a: int
            b: int
            def __init__(self):
                self.a = 1
            @property
            def b(self):
                cs.detach()
                cs.attach()
                return 5

        try:
            cs.copy_to([[1, 2, 3], Evil(), "s" * 40])
            print("copied")
        except cs.NotAttachedError:
            pass

        lst = cs.copy_to([1])
        def items():
            yield 1
            cs.detach()
            cs.attach()
            yield 2
        try:
            lst.extend(items())
            print("extended")
        except cs.NotAttachedError:
            pass
        print("ok")
    """)
    assert_clean(r, "ok")
    assert "copied" not in r.stdout and "extended" not in r.stdout, r.stdout


def test_detach_in_a_signal_handler_during_a_blocking_call():
    # A Python signal handler runs inside the blocking call's interrupt hook: a detach() there
    # would unmap the segment under the very wait that called it (or wait for it forever).
    name = unique("detach-handler")
    r = run(f"""
        import os, signal, threading, colors_shm as cs
        ch = cs.channel({name!r}, 4)
        def handler(signum, frame):
            try:
                cs.detach()
                print("detached in the handler")
            except cs.InvalidArgumentError:
                print("refused")
            raise KeyboardInterrupt
        signal.signal(signal.SIGUSR1, handler)
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
        try:
            ch.receive(timeout=5)
        except KeyboardInterrupt:
            print("interrupted")
        cs.detach()
        print("ok")
    """, timeout=20)
    assert_clean(r, "ok")
    assert r.stdout.split()[:2] == ["refused", "interrupted"], r.stdout
