"""colors_shm.rpc (rpc.cpp, rpc.py): calls between processes with shared arguments and results,
remote exceptions, async calls and batches, timeouts, concurrent clients, server and client
death."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import colors_shm as cs
from colors_shm import rpc
from conftest import run, spawn, unique

SERVER = """
    import os, sys, time, colors_shm as cs
    from colors_shm import rpc

    class Handler:
        def add(self, a, b):
            return a + b
        def echo(self, x):
            return x
        def build(self, n):
            return [{{"i": i, "s": str(i)}} for i in range(n)]
        def append(self, target, x):
            target.append(x)
            return len(target)
        def same(self, a, b):
            return a is b
        def fail(self, msg):
            raise ValueError(msg)
        def custom(self):
            class Oops(Exception):
                pass
            raise Oops("custom failure")
        def slow(self, seconds):
            time.sleep(seconds)
            return "done"
        def pid(self):
            return os.getpid()

    srv = rpc.serve({name!r}, Handler(), threads={threads})
    print("ready", flush=True)
    sys.stdin.readline()  # runs until stdin closes
    srv.stop()
"""


class ServerChild:
    def __init__(self, name: str, threads: int = 1):
        import subprocess

        self.name = name
        self.proc = spawn(SERVER.format(name=name, threads=threads), stdin=subprocess.PIPE)
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", line + self.proc.stderr.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def rpc_server():
    s = ServerChild(unique("rpc"), threads=2)
    yield s
    s.stop()
    if s.proc.poll() is None:
        s.kill()
    for f in (s.proc.stdout, s.proc.stderr):
        f.close()


def test_calls_with_private_and_shared_arguments(rpc_server):
    c = rpc.connect(rpc_server.name)
    assert c.add(2, 3) == 5
    assert c.call("add", "co", "lors") == "colors"
    assert c.echo([1, {"a": (2, 3)}]) == [1, {"a": [2, 3]}]  # copied in, comes back shared
    built = c.build(3)
    assert cs.is_shared(built) and [d["s"] for d in built] == ["0", "1", "2"]
    target = cs.allocate(list)
    assert c.append(target, "x") == 1 and list(target) == ["x"]  # the server changed our object
    assert c.pid() != os.getpid()


def test_call_arguments_are_checked_before_anything_is_sent(rpc_server):
    c = rpc.connect(rpc_server.name)
    with pytest.raises(TypeError, match="method name must be a str"):
        c.call(42, 1, 2)
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
        c.call("add", 1, 2, timeout="soon")
    with pytest.raises(cs.InvalidArgumentError, match="timeout"):
        c.call("add", 1, 2, timeout=-1.0)
    with pytest.raises(cs.TypeMismatchError, match="cannot store"):
        c.echo(object())  # neither a value nor copyable
    with pytest.raises(TypeError):
        cs._colors_shm._rpc_call(object(), "add", (1, 2), None)  # not a client capsule
    with pytest.raises(TypeError):
        cs._colors_shm._rpc_call(c._cp, "add", [1, 2], None)  # args not a tuple
    # A proxy, a proxy's subclass and a user object go by reference; the client still works.
    shared = cs.copy_to([1, 2])
    assert c.same(shared, shared) is True
    assert c.add(2, 3) == 5
    with pytest.raises(TypeError):

        class NotARef(cs._colors_shm._Ref):  # final: ref_of's exact type check relies on it
            pass


def test_remote_method_functions_are_kept_and_follow_the_client_timeout(rpc_server):
    c = rpc.connect(rpc_server.name)
    assert c.add(1, 2) == 3
    assert c.add is c.add and c.add.__name__ == "add"  # made once, then found in the instance
    c.timeout = 0.2  # applies to the kept function too
    t = time.monotonic()
    with pytest.raises(rpc.CallTimeoutError):
        c.slow(2)
    assert time.monotonic() - t < 1.5
    c.timeout = None
    assert c.timeout is None and c.slow(0) == "done"  # served by the second thread


def test_remote_exceptions_keep_type_and_message(rpc_server):
    c = rpc.connect(rpc_server.name)
    with pytest.raises(ValueError) as ei:  # a builtin remote type is raised as itself too
        c.fail("bad input")
    e = ei.value
    assert isinstance(e, rpc.RemoteError) and isinstance(e, cs.SharedMemoryError)
    assert e.remote_type == "ValueError" and e.remote_message == "bad input"
    with pytest.raises(rpc.RemoteError) as ei:
        c.custom()
    assert ei.value.remote_type.endswith("Oops") and "custom failure" in str(ei.value)
    for _ in range(2):  # a failed lookup is not remembered; a found method is
        with pytest.raises(AttributeError):
            c.no_such_method()
        with pytest.raises(AttributeError):
            c.call("_private")
        assert c.add(1, 2) == 3


def test_async_calls_and_batches(rpc_server):
    c = rpc.connect(rpc_server.name)
    futures = [c.call_async("add", i, 1000) for i in range(50)]
    assert [f.result(timeout=10) for f in futures] == [i + 1000 for i in range(50)]
    shared = cs.allocate(list)
    box = [0]
    with c.batch() as b:
        f1 = b.append(shared, "a")
        f2 = b.append(shared, "b")
        f3 = b.fail("third")
        f4 = b.same(box, box)  # one private object in two arguments: still one object remotely
        f5 = b.append(shared, "c")
    assert [f1.result(), f2.result(), f5.result()] == [1, 2, 3]  # in order
    assert isinstance(f3.exception(), ValueError) and f4.result() is True
    with pytest.raises(ValueError):
        f3.result()
    assert list(shared) == ["a", "b", "c"]


def test_timeouts(rpc_server):
    c = rpc.connect(rpc_server.name)
    t0 = time.monotonic()
    with pytest.raises(rpc.CallTimeoutError):
        c.call("slow", 2.0, timeout=0.1)
    assert time.monotonic() - t0 < 1.5
    assert isinstance(rpc.CallTimeoutError("x"), TimeoutError)
    assert rpc.connect(rpc_server.name, timeout=5).slow(0.05) == "done"


def test_concurrent_clients_threads_and_processes(rpc_server):
    errors = []

    def worker(k):
        try:
            c = rpc.connect(rpc_server.name)
            for i in range(200):
                assert c.add(k * 1000, i) == k * 1000 + i
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    kids = [spawn(f"""
        from colors_shm import rpc
        c = rpc.connect({rpc_server.name!r})
        for i in range(300):
            assert c.add({k}, i) == {k} + i
        print("ok")
    """) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in kids:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and "ok" in out, err
    assert not errors


def test_unknown_endpoint_and_second_server():
    with pytest.raises(rpc.UnavailableError):
        rpc.connect(unique("nobody"))
    name = unique("solo")
    srv = rpc.serve(name, object())
    try:
        with pytest.raises(cs.InvalidArgumentError, match="already served"):
            rpc.serve(name, object())
    finally:
        srv.stop()
    with pytest.raises(rpc.UnavailableError):
        rpc.connect(name)


def test_server_in_this_process_and_stop():
    class H:
        def twice(self, x):
            return 2 * x

    name = unique("local")
    with rpc.serve(name, H()):
        c = rpc.connect(name)
        assert c.twice(21) == 42
    with pytest.raises(rpc.UnavailableError):
        c.twice(1)


def test_server_killed_mid_call_fails_callers_promptly(rpc_server):
    c = rpc.connect(rpc_server.name)
    f = c.call_async("slow", 30)
    time.sleep(0.3)  # the server is inside the handler
    rpc_server.kill()
    t0 = time.monotonic()
    with pytest.raises(rpc.UnavailableError):
        f.result(timeout=20)
    with pytest.raises(rpc.UnavailableError):
        c.add(1, 2)
    assert time.monotonic() - t0 < 5
    replacement = ServerChild(rpc_server.name)  # a new process takes the endpoint over
    try:
        assert c.add(1, 2) == 3
    finally:
        replacement.stop()


def test_client_killed_mid_call_leaves_the_server_serving(rpc_server):
    victim = spawn(f"""
        from colors_shm import rpc
        rpc.connect({rpc_server.name!r}).slow(1.0)
    """)
    time.sleep(0.5)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    c = rpc.connect(rpc_server.name)
    assert c.add(40, 2) == 42
    assert c.slow(0.01) == "done"


def test_handler_exceptions_that_are_hard_to_carry_reach_the_caller_as_remote_errors():
    """A remote UnicodeDecodeError or ExceptionGroup (whose constructors take other arguments than
    one message) reached the caller as TypeError from building its class; an exception whose
    __str__ raised, returned a non-str or held a lone surrogate arrived under pybind11's mangled C++
    type name with a traceback of the binding's internals as its message."""

    class BadStr(Exception):
        def __init__(self, how):
            self.how = how

        def __str__(self):
            if self.how == "raise":
                raise RuntimeError("no text")
            if self.how == "int":
                return 42
            return "lone \udc80 surrogate"

    class H:
        def decode(self):
            return b"\xff".decode()

        def group(self):
            raise ExceptionGroup("two", [ValueError("a"), KeyError("b")])

        def bad_str(self, how):
            raise BadStr(how)

    name = unique("hard-errors")
    with rpc.serve(name, H()):
        c = rpc.connect(name, timeout=30)
        with pytest.raises(rpc.RemoteError) as e:
            c.decode()
        assert e.value.remote_type == "UnicodeDecodeError" and "can't decode byte 0xff" in e.value.remote_message
        with pytest.raises(rpc.RemoteError) as e:
            c.call_async("group").result(30)
        assert e.value.remote_type == "ExceptionGroup"
        with c.batch() as b:
            f = b.decode()
        assert f.exception(30).remote_type == "UnicodeDecodeError"
        for how, text in (("raise", "str() failed"), ("int", "str() failed"), ("surrogate", "lone \\udc80 surrogate")):
            with pytest.raises(rpc.RemoteError) as e:
                c.bad_str(how)
            assert e.value.remote_type.endswith("BadStr"), e.value.remote_type
            assert text in e.value.remote_message and "Traceback" not in e.value.remote_message


def test_a_result_that_cannot_be_shared_fails_the_call_under_its_python_error_name():
    """Such a call failed under the C++ type's name (colors::TypeMismatchError)."""

    class H:
        def unshareable(self):
            return object()

        def ok(self):
            return 7

    name = unique("unshareable")
    with rpc.serve(name, H()):
        c = rpc.connect(name, timeout=30)
        with pytest.raises(rpc.RemoteError) as e:
            c.unshareable()
        assert e.value.remote_type == "colors_shm.TypeMismatchError", e.value.remote_type
        assert "unshareable() cannot be shared" in e.value.remote_message, e.value.remote_message
        assert c.ok() == 7


def test_a_huge_spin_budget_serves_and_calls():
    """serve(spin_ns=2**63) returned a server whose threads all died at their first wait (the value
    does not fit the extension's int64), leaving the endpoint registered: callers waited for ever."""

    class H:
        def ping(self):
            return "pong"

    name = unique("spin")
    with rpc.serve(name, H(), spin_ns=2**63):
        c = rpc.connect(name, spin_ns=10**30, timeout=10)
        assert c.ping() == "pong"
        assert rpc.connect(name, spin_ns=-5, timeout=10).ping() == "pong"


def test_futures_of_a_batch_that_was_not_sent_say_so():
    """A batch's futures had no request behind them when the send failed or the with block raised,
    or before the send: result() raised AttributeError on None."""
    import concurrent.futures

    class H:
        def echo(self, x):
            return x

    name = unique("unsent")
    with rpc.serve(name, H()):
        c = rpc.connect(name, timeout=10)
        b = c.batch()
        early = b.echo(1)
        with pytest.raises(concurrent.futures.InvalidStateError, match="not been sent"):
            early.result()
        assert not early.done()
        b.send()
        assert early.result() == 1
        with pytest.raises(RuntimeError):
            with c.batch() as b2:
                dropped = b2.echo(2)
                raise RuntimeError("the block fails")
        with pytest.raises(concurrent.futures.CancelledError, match="not sent"):
            dropped.result()
        b3 = c.batch()
        refused = b3.echo(object())  # cannot be stored: the send raises
        with pytest.raises(cs.TypeMismatchError) as sent:
            b3.send()
        assert refused.exception() is sent.value
        assert c.echo(3) == 3


def test_endpoint_name_and_queue_errors_name_the_endpoints_limits():
    """An endpoint name of 1,005 to 1,024 bytes was refused as a repository name "must be 1 to 1024
    bytes long, got 1044" (a length the caller never passed); a NUL, as a repository name; a queue
    capacity of 0, as a channel's."""
    with pytest.raises(cs.InvalidArgumentError, match=r"rpc endpoint name must be 1 to 1004 bytes long, got 1010"):
        rpc.serve("e" * 1010, object())
    with pytest.raises(cs.InvalidArgumentError, match=r"rpc endpoint name must be 1 to 1004 bytes long, got 1010"):
        rpc.connect("e" * 1010)
    with pytest.raises(cs.InvalidArgumentError, match="rpc endpoint name contains a NUL byte"):
        rpc.serve("a\0b", object())
    with pytest.raises(cs.InvalidArgumentError, match="rpc queue capacity must be between 1 and"):
        rpc.serve(unique("q"), object(), queue_capacity=0)
    with rpc.serve("e" * 1004, object()):
        pass


def test_the_repr_of_a_generic_shared_object_that_holds_itself():
    """repr() of a generic SharedObject (no Python class mapped) that refers to itself recursed
    until RecursionError."""
    out = run(
        """
        import colors_shm as cs

        class Loop:
            me: object = None

        cs.register(Loop, "rpc_tests.generic_loop")
        o = cs.allocate(Loop)
        o.me = o
        cs.repository("rpc_tests.generic_loop").set(o)
        """
    )
    assert out.returncode == 0, out.stderr
    o = cs.repository("rpc_tests.generic_loop").get()
    assert isinstance(o, cs.SharedObject) and "no Python class mapped" in repr(o)
    assert "<shared object ...>" in repr(o)
