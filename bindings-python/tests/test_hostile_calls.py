"""Call sequences that crashed the Python process (a fuzzer's findings): each runs in a child
process, which must end normally with the error the binding gives instead."""

from __future__ import annotations

import pathlib
import textwrap

import pytest

from conftest import Server, run

TESTS = str(pathlib.Path(__file__).resolve().parent)
PRELUDE = f"import sys; sys.path.insert(0, {TESTS!r})\nimport colors_shm as cs\n"


def child(code: str, timeout: float = 60) -> str:
    r = run(PRELUDE + textwrap.dedent(code), timeout=timeout)
    assert r.returncode == 0, f"child failed ({r.returncode})\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r.stdout


def test_binding_objects_refuse_pickling_copies_and_class_changes():
    """pybind11's instance base type, called by copyreg for a pickle or copy (or directly as
    type(x).__base__), threw a C++ exception through CPython and aborted the process; and
    `x.__class__ = Other` between two of the binding's classes was accepted, after which Other's
    destructor freed what x never held (SIGSEGV)."""
    out = child(
        """
        import copy, pickle
        rep = cs.repository("hostile.pickle")
        made = [rep, cs.read_scope(), cs.transaction()]
        for x in made:
            for op in (lambda: pickle.dumps(x, 0), lambda: pickle.dumps(x), lambda: copy.copy(x),
                       lambda: x.__reduce_ex__(1), lambda: type(x).__base__()):
                try:
                    op()
                    print("no error")
                except TypeError:
                    pass
            for other in (cs.Repository, cs.ReadScope, cs.Transaction, cs.Channel):
                if type(x) is other:
                    continue
                try:
                    x.__class__ = other
                    print("class changed")
                except TypeError:
                    pass
            assert type(x).__name__ in ("Repository", "ReadScope", "Transaction")
        rep.set(5)
        assert rep.get() == 5
        del made, rep
        print("ok")
        """
    )
    assert out.split() == ["ok"]


def test_a_batch_whose_calls_list_changes_while_it_is_read():
    """Making an argument list of a batch runs Python code (here a generator), which emptied the
    list of calls being iterated: the native read freed memory (SIGBUS)."""
    out = child(
        """
        from colors_shm import _colors_shm as ext
        srv = ext._RpcServer("hostile-batch", 16)
        c = ext._RpcClient("hostile-batch", -1)
        calls = []
        def args():
            calls.clear()
            junk = [("x" * 50, object()) for _ in range(1000)]
            yield 1
        calls.extend([("m", args())] + [("m", ())] * 100)
        c.call_batch(calls)
        try:
            c.call_batch([("m", ()), "not a pair"])
        except TypeError:
            pass
        print("ok")
        """
    )
    assert out.split() == ["ok"]


SCOPE_PRELUDE = """
    import gc, threading
    from dataclasses import dataclass

    @dataclass
    class HNode:
        v: int
        nxt: "HNode | None" = None

    def reuse_and_check(x, rounds):
        keep = []
        for r in range(rounds):  # reuses what the collector freed
            keep.append(cs.copy_to([b"A" * 4000 for i in range(50)]))
            del keep[:-10]
            assert x.v == 2500, x.v

    cs.proxy_cache(0)
"""


def test_a_scope_ended_by_code_run_while_a_proxy_is_made_gives_no_unkept_proxy():
    """A gc callback that ran inside the allocation of a borrowed proxy ended the read scope: the
    proxy was listed in the closed scope with no root, its object was freed while it lived, and
    a field read then followed a dangling word (SIGSEGV). The read now raises."""
    out = child(
        SCOPE_PRELUDE
        + """
    nodes = cs.copy_to([HNode(i) for i in range(5000)])
    holder = cs.copy_to(HNode(-1))
    holder.nxt = nodes[2500]
    scope = cs.read_scope()
    scope.__enter__()

    def cb(phase, info):
        if phase == "start":
            gc.callbacks.remove(cb)
            scope.__exit__(None, None, None)

    gc.collect()
    gc.callbacks.append(cb)
    gc.set_threshold(1)
    try:
        x = holder.nxt
        print("no error")
    except cs.InvalidArgumentError:
        x = None
    gc.set_threshold(700)
    assert not cs.in_read_scope()
    x = holder.nxt  # outside the scope: rooted
    holder.nxt = None
    del nodes
    cs.collect(); cs.collect()
    reuse_and_check(x, 200)
    print("ok")
    """
    )
    assert out.split() == ["ok"]


def test_a_scope_open_across_detach_and_attach_keeps_nothing_borrowed():
    """detach() and attach() inside an open read scope: the binding kept treating it as open, so
    proxies read afterwards took no root while no native scope kept their objects, which were
    freed while the proxies lived (SIGSEGV). Such a scope no longer counts as open."""
    out = child(
        SCOPE_PRELUDE
        + """
    scope = cs.read_scope()
    scope.__enter__()
    cs.detach()
    cs.attach()
    assert not cs.in_read_scope()
    nodes = cs.copy_to([HNode(i) for i in range(5000)])
    holder = cs.copy_to(HNode(-1))
    holder.nxt = nodes[2500]
    x = holder.nxt
    holder.nxt = None
    del nodes
    t = threading.Thread(target=lambda: (cs.collect(), cs.collect()))
    t.start(); t.join()
    reuse_and_check(x, 200)
    scope.__exit__(None, None, None)
    assert x.v == 2500
    print("ok")
    """
    )
    assert out.split() == ["ok"]


def test_a_rollback_after_cycles_freed_what_the_transaction_wrote_and_dropped():
    """The lists a copy made inside a transaction, written (logged) and dropped, were freed by
    cycles before the rollback, which then wrote into their reused memory: the client crashed,
    and the server crashed too, rolling back the dead client's transaction. The undo log now keeps
    what it names until the transaction ends."""
    out = child(
        """
        import threading
        cs.proxy_cache(0)
        kept = cs.copy_to([1, 2, 3])
        tx = cs.transaction(); tx.__enter__()
        kept.append(4)
        for i in range(20):
            cs.copy_to([[1, 2, 3, "s" * 50] for _ in range(1000)])
        th = threading.Thread(target=lambda: (cs.collect(5), cs.collect(5))); th.start(); th.join()
        junk = [cs.copy_to([b"A" * 4000 for i in range(100)]) for _ in range(50)]
        tx.rollback()
        assert list(kept) == [1, 2, 3]
        del junk
        cs.collect(); cs.collect()
        assert list(kept) == [1, 2, 3]
        print("ok")
        """
    )
    assert out.split() == ["ok"]


def test_a_thread_that_ends_inside_its_read_scope_keeps_the_proxies_it_handed_on():
    """A thread entered a read scope, never left it, handed a borrowed proxy to the main thread
    and ended: libshared ended its native scope at thread exit, nothing rooted the proxy, and its
    object was freed and reused while the main thread still read it (SIGSEGV). The scope now ends
    with its thread, which roots what escaped."""
    out = child(
        SCOPE_PRELUDE
        + """
    nodes = cs.copy_to([HNode(i) for i in range(5000)])
    holder = cs.copy_to(HNode(-1))
    holder.nxt = nodes[2500]
    box = []

    def reader():
        cs.read_scope().__enter__()  # never exited
        box.append(holder.nxt)       # a borrowed proxy escapes to the main thread

    def suspended():
        with cs.read_scope():
            box.append(holder.nxt)
            yield

    def reader_in_generator():
        g = suspended()
        next(g)
        box.append(g)  # the generator, suspended inside its scope, outlives the thread

    for target in (reader, reader_in_generator):
        t = threading.Thread(target=target)
        t.start(); t.join()
    assert not cs.in_read_scope()
    holder.nxt = None
    del nodes
    cs.collect(); cs.collect()
    reuse_and_check(box[0], 100)
    reuse_and_check(box[1], 100)
    with cs.read_scope():
        try:
            box[2].close()  # the generator's `with` exits here, on another thread than its scope's
            print("no error")
        except cs.InvalidArgumentError:
            pass
        assert cs.in_read_scope()  # this thread's own scope is still open
    print("ok")
    """
    )
    assert out.split() == ["ok"]


def test_daemon_threads_in_blocking_calls_at_interpreter_exit():
    """Daemon threads inside blocking calls when the interpreter exits: CPython ended each one
    that took the GIL back during finalization with pthread_exit, whose unwind through the
    binding's GIL guard aborted the process (SIGABRT). They now park until the process ends."""
    for _ in range(3):
        out = child(
            """
            import threading, time
            ch = cs.channel("hostile.daemon-exit")
            def poll():
                while True:
                    try:
                        ch.receive(timeout=0.001)
                    except TimeoutError:
                        pass
            for i in range(4):
                threading.Thread(target=poll, daemon=True).start()
            threading.Thread(target=ch.receive, daemon=True).start()  # blocks until the end
            time.sleep(0.3)
            print("ok")
            """
        )
        assert out.split() == ["ok"]


def test_a_signal_handler_that_raises_as_synchronized_acquires_leaves_no_monitor_held():
    """A signal arriving while `with synchronized(obj):` waited for the monitor: its handler ran
    right after the acquire returned inside a Python __enter__, so the with block never began,
    __exit__ never ran and the thread kept the monitor (20 of 20 entries). __enter__ is now a C
    method, after which CPython runs no handler before the block."""
    out = child(
        """
        import os, signal, threading, time
        from colors_shm import _colors_shm as ext
        box = cs.copy_to({"x": 1})
        class Boom(Exception):
            pass
        def handler(signum, frame):
            raise Boom()
        signal.signal(signal.SIGUSR1, handler)
        leaks = raised = 0
        for i in range(20):
            held = threading.Event()
            def holder():
                with cs.synchronized(box):
                    held.set()
                    time.sleep(0.05)
                    os.kill(os.getpid(), signal.SIGUSR1)  # pending while the main thread waits
            t = threading.Thread(target=holder)
            t.start()
            held.wait()
            try:
                with cs.synchronized(box):
                    pass
            except Boom:
                raised += 1
            t.join()
            while ext._monitor_held(box):
                leaks += 1
                ext._monitor_exit(box)
        assert raised == 20, raised
        print("leaks", leaks)
        """
    )
    assert out.split() == ["leaks", "0"]


def test_detach_never_leaves_a_monitor_held_for_other_processes():
    """detach() while a thread held a shared monitor: the segment became a private copy, the
    holder's exit no longer reached the shared heap, and every process then blocked on that
    monitor for good (a waiter also deadlocked the detach). A detach now refuses while this
    thread holds one, and waits for other threads to exit theirs."""
    out = child(
        """
        import threading, time
        from colors_shm import _colors_shm as ext
        rep = cs.repository("hostile.detach-monitor")
        # This thread holds it, another waits in wait(): refused at once, nothing dropped.
        got = []
        def waiter():
            with cs.synchronized(rep):
                got.append(cs.wait(rep, 10))
        with cs.synchronized(rep):
            w = threading.Thread(target=waiter)
            w.start()
        time.sleep(0.2)
        with cs.synchronized(rep):
            try:
                cs.detach()
                print("detached")
            except cs.InvalidArgumentError as e:
                assert "this thread holds 1" in str(e), e
            assert cs.is_attached()
            cs.notify_all(rep)
        w.join()
        assert got == [True], got
        # Another thread holds it and exits within the wait: the detach goes through after it.
        held = threading.Event()
        def holder():
            with cs.synchronized(rep):
                held.set()
                time.sleep(0.3)
        h = threading.Thread(target=holder)
        h.start(); held.wait()
        cs.detach()
        h.join()
        cs.attach()
        rep = cs.repository("hostile.detach-monitor")
        assert ext._monitor_enter(rep, 0), "the monitor stayed held"
        ext._monitor_exit(rep)
        print("ok")
        """
    )
    assert out.split() == ["ok"]


def test_fork_while_another_thread_attaches_or_detaches():
    """os.fork() while another thread was inside attach() or detach(): the child inherited
    libshared's attach mutex locked (the fork handler reset it only when a segment was current)
    and its first call that attaches blocked for good (1-5 of 40 children per run)."""
    out = child(
        """
        import os, threading
        stop = False
        def churn():
            while not stop:
                try:
                    cs.detach()
                    cs.attach()
                except cs.SharedMemoryError:
                    pass
        t = threading.Thread(target=churn)
        t.start()
        stuck = 0
        for k in range(40):
            pid = os.fork()
            if pid == 0:
                import faulthandler
                faulthandler.dump_traceback_later(10, exit=True)  # a stuck child exits with status 1
                cs.copy_to([1])
                os._exit(0)
            _, st = os.waitpid(pid, 0)
            stuck += st != 0
        stop = True
        t.join()
        print("stuck", stuck)
        """,
        timeout=300,
    )
    assert out.split() == ["stuck", "0"]


def test_a_child_forked_inside_a_read_scope_may_collect_and_begin_transactions():
    """A child forked while the parent's thread was inside a read scope: the binding no longer
    counted the scope (in_read_scope() False), but libshared still did, and refused the child's
    transactions and collections as if inside one."""
    out = child(
        """
        import os
        lst = cs.copy_to([1, 2, 3])
        scope = cs.read_scope()
        scope.__enter__()
        pid = os.fork()
        if pid == 0:
            kept = cs.copy_to([1])
            assert not cs.in_read_scope()
            with cs.transaction():
                kept.append(2)
            cs.collect(10)
            assert list(kept) == [1, 2]
            os._exit(0)
        _, st = os.waitpid(pid, 0)
        scope.__exit__(None, None, None)
        print("child", st)
        """
    )
    assert out.split() == ["child", "0"]


def test_a_detach_and_attach_inside_a_list_iteration_leaves_the_heap_intact(tmp_path):
    """A gc callback that detached and attached again while a list iteration held a root per
    element (its snapshot): the iteration raised, and the unwinding released those roots into the
    old attachment's root table, which the server had freed and which the new mapping (same fixed
    address) had reused: the writes corrupted live blocks, and the slots were handed out as roots
    of the new attachment (heap verifier: "bad size", "not a live object"; SIGSEGV without the
    attach). A root of an older attachment is now forgotten, never released."""
    log = tmp_path / "colors-server.log"
    srv = Server(heap="64M", extra=("--gc-debug",), log=str(log))
    try:
        r = run(PRELUDE + textwrap.dedent("""
            import gc
            from dataclasses import dataclass

            @dataclass
            class Node:
                v: int = 0

            cs.proxy_cache(0)  # no cached proxies: the iteration roots every element
            lst = cs.copy_to([Node(i) for i in range(200)])
            armed = [3]  # the third collection's start: inside the iteration
            def cb(phase, info):
                if phase == "start" and armed[0] > 0:
                    armed[0] -= 1
                    if armed[0] == 0:
                        cs.detach()
                        cs.attach()
            gc.callbacks.append(cb)
            gc.set_threshold(1)
            try:
                print(sum(x.v for x in lst))
            except cs.NotAttachedError:
                pass
            gc.callbacks.clear()
            gc.set_threshold(700)
            assert armed[0] == 0
            keep = []
            for i in range(30):  # takes roots, and gives the collector room to find the damage
                keep.append(cs.copy_to([Node(j) for j in range(50)]))
                cs.collect()
            assert [n.v for n in keep[-1]] == list(range(50))
            print("ok")
            """), timeout=120, socket=srv.socket)
        assert r.returncode == 0, f"child failed ({r.returncode})\nstdout: {r.stdout}\nstderr: {r.stderr}"
        assert r.stdout.split()[-1] == "ok"
    finally:
        srv.stop()
    verifier = [line for line in log.read_text().splitlines() if "heap verifier" in line]
    assert verifier == [], "\n".join(verifier[:5])


def _child_on_checked_server(tmp_path, code: str) -> str:
    """Runs `code` in a child against a server of its own that verifies the heap after every
    cycle (--gc-debug); the child must end normally, the server must still run, and the verifier
    must have found nothing."""
    log = tmp_path / "colors-server.log"
    srv = Server(heap="128M", extra=("--gc-debug",), log=str(log))
    try:
        r = run(PRELUDE + textwrap.dedent(code), timeout=120, socket=srv.socket)
        assert r.returncode == 0, f"child failed ({r.returncode})\nstdout: {r.stdout}\nstderr: {r.stderr}"
        assert srv.proc.poll() is None, "the server died"
    finally:
        srv.stop()
    verifier = [line for line in log.read_text().splitlines() if "heap verifier" in line]
    assert verifier == [], "\n".join(verifier[:5])
    return r.stdout


def test_a_capacity_hint_too_large_for_any_heap_is_refused(tmp_path):
    """allocate(dict, 2**61), or copy_to of a dict whose __len__ says 2**61, made a hash table
    whose byte size wrapped to nothing: a table claiming 2**62 entries in a 48-byte block. Its
    first put wrote far outside it (SIGSEGV, the heap corrupted, and the server died of it)."""
    out = _child_on_checked_server(tmp_path, """
        class D(dict):
            def __len__(self):
                return 2**61
        for make in (lambda: cs.allocate(dict, 2**61), lambda: cs.allocate(set, 2**61),
                     lambda: cs.allocate(dict, 2**63 - 1), lambda: cs.copy_to(D(a=1))):
            try:
                d = make()
                print("made", type(d).__name__)
            except cs.OutOfMemoryError:
                pass
        d = cs.allocate(dict, 1000)
        d[1] = 2
        cs.collect()
        assert dict(d) == {1: 2}
        print("ok")
        """)
    assert out.split() == ["ok"]


_DETACH_IN_GC_CALLBACK = """
    import gc
    cs.proxy_cache(0)  # no cached proxies: every element read makes one (and may run gc)
    armed = [0]
    def cb(phase, info):
        if phase == "start" and armed[0] > 0:
            armed[0] -= 1
            if armed[0] == 0:
                gc.set_threshold(700)
                cs.detach()
                cs.attach()
                for i in range(3):  # reuse the memory the old attachment's words named
                    globals()["junk"] = [cs.copy_to([b"\\xff" * 3000 for i in range(50)]) for _ in range(20)]
                    cs.collect()
    gc.callbacks.append(cb)
    def detaching_during(read, after=3):
        gc.collect()
        armed[0] = after
        gc.set_threshold(1)
        try:
            read()
            print("read")
        except cs.NotAttachedError:
            pass
        finally:
            gc.set_threshold(700)
        assert armed[0] == 0, "no detach happened inside the read"
"""


def test_a_detach_while_a_sorted_map_or_set_is_read_raises(tmp_path):
    """A sorted map's ranges (items, values, iteration) and a set's read for `&=` turned each
    rooted element into a proxy in turn; a gc callback run by one proxy's allocation that
    detached and attached again left the rest naming the closed attachment, and the next element
    was read from reused memory (SIGSEGV in from_rooted)."""
    out = _child_on_checked_server(tmp_path, _DETACH_IN_GC_CALLBACK + """
    class N:
        v: int
    d = cs.allocate(cs.SharedSortedDict)
    for i in range(200):
        d["key-%05d-" % i + "k" * 100] = "value-" + "v" * 200
    detaching_during(lambda: list(d.irange_items()))
    s = cs.copy_to(set())
    for o in cs.copy_to([N() for i in range(200)]):
        s.add(o)
    def intersect():
        global s
        s &= set()
    detaching_during(intersect, after=8)
    l = cs.copy_to(list(range(100)))
    cs.collect()
    assert sum(l) == 4950
    print("ok")
    """)
    assert out.split() == ["ok"]


def test_a_detach_while_rpc_arguments_are_shared_or_read_raises(tmp_path):
    """A call's arguments were appended to a shared list while Python code ran between them (the
    arguments' iterator), and a served batch's results and arguments were read and written around
    each handler: a detach there (and an attach) left both working on the closed attachment's
    lists (SIGSEGV in list_append)."""
    out = _child_on_checked_server(tmp_path, """
    from colors_shm import _colors_shm as ext
    cs.proxy_cache(0)
    def reuse():
        for i in range(3):
            globals()["junk"] = [cs.copy_to([b"A" * 4000 for i in range(50)]) for _ in range(20)]
            cs.collect()
    srv = ext._RpcServer("hostile-args", 16)
    c = ext._RpcClient("hostile-args", -1)
    def gen():
        yield 1
        cs.detach()
        cs.attach()
        reuse()
        yield from range(100)
    class Args:
        def __len__(self):
            return 2
        def __iter__(self):
            return gen()
    try:
        c.call("m", Args(), 0.1)
        print("called")
    except cs.NotAttachedError:
        pass
    srv = ext._RpcServer("hostile-batch-run", 16)
    c = ext._RpcClient("hostile-batch-run", -1)
    pending = c.call_batch([("m", [1]), ("m", [2]), ("m", [3])])
    call = srv.next(1.0)
    def handler(method, args):
        global pending
        pending = None
        cs.detach()
        cs.attach()
        reuse()
        return args[0]
    try:
        call.run(handler)
        print("ran")
    except cs.NotAttachedError:
        pass
    l = cs.copy_to(list(range(100)))
    cs.collect()
    assert sum(l) == 4950
    print("ok")
    """)
    assert out.split() == ["ok"]


def test_gc_objects_never_show_a_result_list_before_it_is_filled():
    """A container read's result list was made with all its items empty (NULL) and filled one
    proxy at a time; a gc callback run by a proxy's allocation found it in gc.get_objects() and
    read an empty item (SIGSEGV). The list is now out of the collector's sight until full."""
    out = child(
        """
        import gc
        cs.proxy_cache(0)
        class N:
            v: int
        d = cs.allocate(cs.SharedSortedDict)
        m = cs.allocate(dict)
        for i in range(100):
            n = cs.copy_to(N())
            n.v = i
            d[i] = n
            m[i] = n
        del n
        seen = [0]
        def cb(phase, info):
            if phase == "start":
                for o in gc.get_objects():
                    if type(o) is list and len(o) == 100:
                        [type(x) for x in o]
                        seen[0] += 1
        gc.callbacks.append(cb)
        gc.set_threshold(1)
        try:
            values = list(d.values())
            values2 = list(m.values())
            items = list(cs.copy_to([N() for _ in range(100)]))
        finally:
            gc.callbacks.clear()
            gc.set_threshold(700)
        assert [v.v for v in values] == list(range(100))
        assert sorted(v.v for v in values2) == list(range(100))
        print("ok")
        """
    )
    assert out.split() == ["ok"]


def test_a_timeout_whose_conversion_detaches_is_converted_before_the_heap_is_touched():
    """Monitor enter and wait, channel send and receive, and rpc calls took the monitor's address,
    the segment or the channel first, then converted the timeout, whose __float__ may run any
    Python code: after a detach there, the monitor was entered in the closed attachment's
    memory (it returned True)."""
    out = child(
        """
        from colors_shm import _colors_shm as ext
        class DetachingTimeout(int):
            def __float__(self):
                cs.detach()
                return 0.0
        ch = cs.channel("hostile-timeout", 4)
        ops = {"enter": lambda l: ext._monitor_enter(l, DetachingTimeout(0)),
               "wait": lambda l: ext.wait(l, DetachingTimeout(0)),
               "send": lambda l: ch.send(1, DetachingTimeout(0)),
               "receive": lambda l: ch.receive(DetachingTimeout(0))}
        for name, op in ops.items():
            if not cs.is_attached():
                cs.attach()
            l = cs.copy_to([1, 2, 3])  # of this attachment
            try:
                op(l)
                print(name)  # a channel may attach again by itself and work; a monitor may not
            except cs.NotAttachedError:
                pass
        if not cs.is_attached():
            cs.attach()
        assert cs.copy_to([1, 2])[1] == 2
        print("ok")
        """
    )
    assert out.split()[-1] == "ok", out
    assert "enter" not in out.split() and "wait" not in out.split(), out


def test_a_class_subclassed_while_its_proxy_class_is_made_is_refused():
    """A user proxy's handle lives inside the proxy, in room added to its class's size when the
    binding installs the class. A subclass made before that (here by __init_subclass__) with
    slots of the handle's size then had the proxy class's grown size, and `p.__class__ = S` was
    accepted: S's slot descriptors read the handle's raw words as objects (SIGSEGV), and a read
    through the handle's word incremented a count inside the shared object's header (heap
    corruption the verifier reported after every cycle). Such a class is now refused."""
    out = child(
        """
        subs = []

        class Priv:
            x: int = 0

            def __init_subclass__(cls, **kw):
                super().__init_subclass__(**kw)
                if "__colors_private_class__" in cls.__dict__ and not subs:
                    class S(cls):
                        __slots__ = tuple("abcdefgh")  # the handle's size
                    subs.append(S)

        cs.register(Priv, "hostile.subclassed_while_made")
        try:
            cs.copy_to(Priv())
            print("made")
        except cs.InvalidArgumentError as e:
            assert "was subclassed while its proxy class was being made" in str(e), e
            print("refused")
        """
    )
    assert out.split() == ["refused"]


@pytest.mark.parametrize("kind", ["object", "list"])
def test_a_detach_and_attach_inside_a_proxys_allocation_hands_out_no_proxy_of_the_closed_attachment(kind):
    """A collection inside a new proxy's allocation ran a gc callback that detached, attached and
    read another object (which moved the identity tables to the new attachment): the proxy of the
    closed attachment's object then entered the new attachment's table. Every later read of that
    object gave it back (NotAttachedError); for a user object's proxy, once it died its entry
    stayed behind, dangling: the next read returned freed memory (SIGSEGV). The read now raises
    NotAttachedError."""
    out = child(
        f"""
        import gc, os, sys
        sock = os.environ["COLORS_SOCKET"]
        cs.proxy_cache(0)

        class Priv:
            x: int = 0

        class Other:
            y: int = 0

        cs.register(Priv, "hostile.alloc_reattach.Priv")
        cs.register(Other, "hostile.alloc_reattach.Other")
        o = cs.copy_to(Priv()) if {kind!r} == "object" else cs.copy_to([5])
        if {kind!r} == "object":
            o.x = 5
        cs.repository("hostile_alloc_reattach_a").set(o)
        cs.repository("hostile_alloc_reattach_b").set(cs.copy_to(Other()))
        del o
        state = {{"armed": False, "n": 0, "J": 0}}
        keep = []

        def target():
            return repo.get()

        def cb(phase, info):
            f = sys._getframe().f_back
            if not (state["armed"] and f is not None and f.f_code is target.__code__):
                return
            if phase == "start":
                state["n"] += 1
                if state["n"] == 2:  # the collection the proxy's allocation runs
                    state["armed"] = False
                    cs.detach()
                    cs.attach(sock)
                    other = cs.repository("hostile_alloc_reattach_b").get()
                    del other
            elif phase == "stop" and state["n"] == 1:
                keep.extend([[] for _ in range(state["J"])])  # the allocation collects again

        gc.callbacks.append(cb)
        hit = False
        for J in range(8):
            repo = cs.repository("hostile_alloc_reattach_a")
            tmp = repo.get()
            del tmp
            state.update(armed=True, n=0, J=J)
            gc.collect()
            gc.set_threshold(1)
            try:
                p = target()
            except cs.NotAttachedError:
                hit = True
            finally:
                gc.set_threshold(700)
                state["armed"] = False
            if hit:
                break
            assert (p.x if {kind!r} == "object" else p[0]) == 5, "a proxy handed out reads its object"
            del p
        gc.callbacks.remove(cb)
        assert hit, "the collection inside the proxy's allocation was never reached"
        junk = [object() for _ in range(10)]
        q = cs.repository("hostile_alloc_reattach_a").get()
        print("x", q.x if {kind!r} == "object" else q[0])
        """
    )
    assert out.split() == ["x", "5"]


def test_a_class_resolver_that_detaches_and_attaches_hands_out_no_proxy_of_a_freed_object():
    """Making a class's proxy class runs Python code (here __init_subclass__), which detached,
    attached, dropped the object being read and collected it: the read went on with the closed
    attachment's word and handed out a proxy of the freed object (SIGSEGV on its first field
    read). It now raises NotAttachedError."""
    out = child(
        """
        import os
        sock = os.environ["COLORS_SOCKET"]
        cs.proxy_cache(0)
        armed = [False]

        class Victim:
            x: int = 0

            def __init_subclass__(cls, **kw):
                super().__init_subclass__(**kw)
                if armed[0]:
                    armed[0] = False
                    cs.detach()
                    cs.attach(sock)
                    hh = cs.repository("hostile_resolver_reattach").get()
                    hh.child = None
                    del hh
                    cs.collect()
                    cs.collect()

        class Holder:
            child: object = None

        cs.register(Victim, "hostile.resolver_reattach.Victim")
        cs.register(Holder, "hostile.resolver_reattach.Holder")
        v = Victim()
        v.x = 1234
        hp = Holder()
        hp.child = v
        h = cs.copy_to(hp)  # makes Holder's proxy class only
        cs.repository("hostile_resolver_reattach").set(h)
        armed[0] = True
        try:
            c = h.child  # the first Victim proxy: the resolver runs
            print("read", c.x)
        except cs.NotAttachedError as e:
            print("refused")
        """
    )
    assert out.split() == ["refused"]


def test_an_object_whose_class_refuses_its_proxy_subclass_reads_as_a_generic_shared_object():
    """The proxy class of a user object derives from the object's Python class. A class whose
    `__init_subclass__` raises (a plugin registry refusing a second `Job`) or whose metaclass
    refuses new subclasses (an `Enum`) raised ValueError / AttributeError out of every read of the
    object, and of every iteration of a list holding it. Such an object now reads as a generic
    SharedObject, as one whose class cannot be subclassed at all does."""
    child(
        """
        class Fake:
            name: str = ""

        class FakeEnum:
            v: int = 0

        cs.register(Fake, "hostile.plugin_job")
        cs.register(FakeEnum, "hostile.enum_job")
        j = cs.allocate(Fake)
        j.name = "backup"
        e = cs.allocate(FakeEnum)
        e.v = 3
        cs.repository("hostile.plugin_jobs").set(cs.copy_to(["first", j, e, "last"]))
        """
    )
    out = child(
        """
        import enum

        class Registered:
            registry = set()

            def __init_subclass__(cls, **kw):
                super().__init_subclass__(**kw)
                if cls.__name__ in Registered.registry:
                    raise ValueError(f"duplicate plugin name {cls.__name__}")
                Registered.registry.add(cls.__name__)

        class Job(Registered):
            name: str = ""

        class Color(enum.Enum):
            RED = 1

        cs.register(Job, "hostile.plugin_job")
        cs.register(Color, "hostile.enum_job")
        lst = cs.repository("hostile.plugin_jobs").get()
        items = list(lst)
        assert items[0] == "first" and items[3] == "last", items
        for x, field, value in ((items[1], "name", "backup"), (lst[2], "v", 3)):
            assert isinstance(x, cs.SharedObject) and not isinstance(x, (Job, Color)), type(x)
            assert getattr(x, field) == value
        print("generic")
        """
    )
    assert out.split() == ["generic"]


def test_no_binding_class_can_be_made_by_new_alone():
    """`T.__new__(T)` made an instance of the binding's class T without its constructor: the C++
    object was never built, and the first method call read uninitialised memory (SIGSEGV for
    synchronized.__enter__, _RpcCall.args, _RpcClient.server_alive; a garbage timeout for a
    Transaction, which then began and committed with it). Every such class now refuses."""
    out = child(
        """
        ext = cs._colors_shm
        made = []
        for name in sorted(dir(ext)):
            t = getattr(ext, name)
            if not isinstance(t, type) or issubclass(t, BaseException) or "pybind11" not in type(t).__name__:
                continue
            try:
                t.__new__(t)
                made.append(name)
            except TypeError:
                pass
        assert not made, made
        # The classes still construct as before.
        with cs.transaction():
            pass
        lst = cs.copy_to([1])
        with cs.synchronized(lst):
            pass
        print("refused")
        """
    )
    assert out.split() == ["refused"]
