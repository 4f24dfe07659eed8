"""Remote procedure calls between processes attached to the same colors heap.

Arguments and results are shared objects: nothing is serialized. A call is a shared request
object handed to the server through the endpoint's queue; the server writes the result into the
same object. Private arguments and results (lists, dicts, user objects) are copied in with
:func:`colors_shm.copy_to` semantics; shared ones are passed as they are, so a server can change
an object the caller passed::

    # server process
    class Calc:
        def add(self, a, b):
            return a + b

    server = colors_shm.rpc.serve("calc", Calc(), threads=2)
    server.join()                      # or keep working; server.stop() ends it

    # client process
    calc = colors_shm.rpc.connect("calc")
    calc.add(2, 3)                     # 5
    f = calc.call_async("add", 4, 5)   # Future; f.result() -> 9
    with calc.batch() as b:            # one request, run in order on the server
        x = b.add(1, 1)
        y = b.add(2, 2)
    x.result(), y.result()             # 2, 4

A handler exception reaches the caller as :class:`RemoteError` (``remote_type``,
``remote_message``); when the remote type is a Python builtin exception (``ValueError``, ...)
the raised class also derives from it, so ``except ValueError`` works across processes. If the
server process dies, pending and later calls raise :class:`UnavailableError` promptly.

Waiting callers spin for ``spin_ns`` nanoseconds (default: ``$COLORS_SPIN_NS`` or 50 µs) before
they block in the kernel; a server thread waiting for requests does the same.
"""

from __future__ import annotations

import atexit
import builtins
import concurrent.futures
import operator
import threading
import weakref
from typing import Any

from . import _colors_shm as _ext
from ._colors_shm import CallTimeoutError, RemoteError, UnavailableError

__all__ = ["serve", "connect", "Server", "Client", "Future", "Batch", "RemoteError", "UnavailableError",
           "CallTimeoutError"]

_remote_classes: dict[str, type] = {}


def _spin_ns(spin_ns: int | None) -> int:
    """The spin budget as the extension takes it: -1 (the default) for None or a negative value,
    else at most 2**62 (the extension caps it further, at one interrupt slice)."""
    if spin_ns is None:
        return -1
    v = operator.index(spin_ns)
    return -1 if v < 0 else min(v, 2**62)
_servers: weakref.WeakSet = weakref.WeakSet()  # running servers, stopped at interpreter exit


@atexit.register
def _stop_servers() -> None:
    # Serving threads must leave their blocking waits while the interpreter is still whole.
    for srv in list(_servers):
        srv.stop()


def _remote_class(remote_type: str) -> type:
    """RemoteError, or for a Python builtin exception type a class deriving from both, so that
    ``except ValueError`` works across processes. A builtin whose constructor does not take one
    message (``UnicodeDecodeError`` takes five arguments, ``ExceptionGroup`` two) gets RemoteError."""
    cls = _remote_classes.get(remote_type)
    if cls is not None:
        return cls
    base = getattr(builtins, remote_type, None)
    if not (isinstance(base, type) and issubclass(base, Exception) and not issubclass(base, RemoteError)):
        return RemoteError  # not cached: the names come from the remote side, unbounded
    cls = RemoteError
    try:
        derived = type(f"Remote{remote_type}", (RemoteError, base), {"__module__": __name__})
        derived("probe")
        cls = derived
    except Exception:  # noqa: BLE001  a layout conflict, or a constructor that wants other arguments
        pass
    _remote_classes[remote_type] = cls
    return cls


def _remote_error(remote_type: str, message: str) -> RemoteError:
    """The exception for a failed remote call (called by the extension)."""
    exc = _remote_class(remote_type)(f"{remote_type}: {message}")
    exc.remote_type = remote_type
    exc.remote_message = message
    return exc


_ext._register_remote_error_factory(_remote_error)


# ---- serving ------------------------------------------------------------------------------------


class Server:
    """Serves one endpoint from this process with background threads (see :func:`serve`)."""

    def __init__(self, name: str, handler: Any, threads: int = 1, queue_capacity: int = 1024,
                 spin_ns: int | None = None):
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self.name = name
        self._handler = handler
        self._methods: dict[str, Any] = {}
        self._spin = _spin_ns(spin_ns)
        self._srv = _ext._RpcServer(name, queue_capacity)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, name=f"colors-rpc-{name}-{i}", daemon=True)
                         for i in range(threads)]
        for t in self._threads:
            t.start()
        _servers.add(self)

    def _dispatch(self, method: str, args: tuple) -> Any:
        fn = self._methods.get(method)
        if fn is None:
            fn = self._lookup(method)
        return fn(*args)

    def _lookup(self, method: str):
        # A handler's method is looked up once per name (the bound method is kept).
        if method.startswith("_"):
            raise AttributeError(f"rpc endpoint {self.name!r} has no method {method!r}")
        fn = getattr(self._handler, method, None)
        if fn is None or not callable(fn):
            raise AttributeError(f"rpc endpoint {self.name!r} has no method {method!r}")
        if len(self._methods) < 1024:  # names come from callers: bounded
            self._methods[method] = fn
        return fn

    def _loop(self) -> None:
        srv, dispatch, stop, spin = self._srv, self._dispatch, self._stop, self._spin
        while not stop.is_set():
            try:
                call = srv.next(0.1, spin)
            except _ext.NotAttachedError:
                return
            except _ext.ServerGoneError:
                return
            if call is not None:
                try:
                    call.run(dispatch)
                except (_ext.NotAttachedError, _ext.ServerGoneError):
                    return
                except Exception:  # noqa: BLE001
                    # run() answers the call with whatever the handler or the copy of its result
                    # raised; this is the answer itself failing (e.g. the heap too full for the
                    # error text). The call is failed when its object goes; the thread serves on.
                    continue

    def stop(self) -> None:
        """Stops the serving threads (after the calls they are running) and unregisters the
        endpoint: later calls raise :class:`UnavailableError`."""
        self._stop.set()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
        self._srv = None  # unregisters (the C++ server's destructor)
        _servers.discard(self)

    def join(self, timeout: float | None = None) -> None:
        """Waits until the server is stopped (by :meth:`stop` from another thread)."""
        for t in self._threads:
            t.join(timeout)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(name: str, handler: Any, threads: int = 1, queue_capacity: int = 1024,
          spin_ns: int | None = None) -> Server:
    """Serves the public methods of ``handler`` (an object) as endpoint ``name`` with ``threads``
    background threads and returns the :class:`Server`. Raises
    :class:`~colors_shm.InvalidArgumentError` if another live process serves ``name``."""
    return Server(name, handler, threads, queue_capacity, spin_ns)


# ---- calling ------------------------------------------------------------------------------------


class Future:
    """The result of an asynchronous call: :meth:`result` waits for it."""

    __slots__ = ("_pending", "_index", "_done", "_value", "_exc")

    def __init__(self, pending, index: int | None = None):
        self._pending = pending  # _RpcPending (or a shared batch pending)
        self._index = index      # position in a batch, None for a single call
        self._done = False
        self._value = None
        self._exc: BaseException | None = None

    def done(self) -> bool:
        if not self._done and self._pending is not None:
            return self._pending.ready()
        return self._done

    def _resolve(self, timeout: float | None) -> None:
        if self._done:
            return
        if self._pending is None:
            raise concurrent.futures.InvalidStateError(
                "this call's batch has not been sent yet: its results exist once its with block ends (or send() returns)")
        if self._index is None:
            try:
                self._value = self._pending.get(timeout)
            except (RemoteError, UnavailableError) as e:
                self._exc = e
        else:
            outcomes = self._pending.outcomes(timeout)
            ok, *rest = outcomes[self._index]
            if ok:
                self._value = rest[0]
            else:
                self._exc = _remote_error(rest[0], rest[1])
        self._done = True
        self._pending = None

    def result(self, timeout: float | None = None) -> Any:
        """The call's result; raises its :class:`RemoteError` (or :class:`UnavailableError`),
        or :class:`CallTimeoutError` if it is not done within ``timeout`` seconds."""
        self._resolve(timeout)
        if self._exc is not None:
            raise self._exc
        return self._value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._resolve(timeout)
        return self._exc


class _BatchPending:
    """The one request of a batch, shared by its futures."""

    __slots__ = ("_pending", "_outcomes")

    def __init__(self, pending):
        self._pending = pending
        self._outcomes = None

    def ready(self) -> bool:
        return self._outcomes is not None or self._pending.ready()

    def outcomes(self, timeout):
        if self._outcomes is None:
            self._outcomes = [tuple(o) for o in self._pending.get(timeout)]
        return self._outcomes


class Batch:
    """Calls deferred and sent as one request when the ``with`` block ends (see
    :meth:`Client.batch`). ``b.method(*args)`` or ``b.call("method", *args)`` returns a
    :class:`Future`. The server runs the calls in order (each sees the effects of the previous
    ones), and objects shared between the arguments of different calls stay shared."""

    def __init__(self, client: Client):
        self._client = client
        self._calls: list[tuple[str, tuple]] = []
        self._futures: list[Future] = []

    def call(self, method: str, *args) -> Future:
        f = Future(None, len(self._calls))
        self._calls.append((method, args))
        self._futures.append(f)
        return f

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        return lambda *args: self.call(method, *args)

    def send(self) -> None:
        """Sends the calls made so far as one request. If sending fails, it raises, and each
        call's future gives the same exception."""
        if not self._calls:
            return
        try:
            shared = _BatchPending(self._client._c.call_batch(self._calls))
        except BaseException as e:
            self._settle(e)
            raise
        for f in self._futures:
            f._pending = shared
        self._calls, self._futures = [], []

    def _settle(self, exc: BaseException) -> None:
        # The calls made so far will never be sent: their futures are done, with `exc`.
        for f in self._futures:
            f._done, f._exc, f._pending = True, exc, None
        self._calls, self._futures = [], []

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.send()
        else:  # the block raised: nothing is sent
            self._settle(concurrent.futures.CancelledError(f"the batch was not sent: its with block raised {exc_type.__name__}"))


class Client:
    """A connection to endpoint ``name`` (see :func:`connect`): ``client.method(*args)`` calls
    the remote method and returns its result."""

    def __init__(self, name: str, spin_ns: int | None = None, timeout: float | None = None):
        c = _ext._RpcClient(name, _spin_ns(spin_ns))
        object.__setattr__(self, "_c", c)
        object.__setattr__(self, "_cp", c._capsule())  # for _rpc_call; valid while _c lives
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_cfg", [timeout])  # shared with the remote-method functions

    @property
    def timeout(self) -> float | None:
        """Default timeout of this client's calls in seconds (None: wait for ever); assignable."""
        return self._cfg[0]

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._cfg[0] = value

    def call(self, method: str, *args, timeout: float | None = None) -> Any:
        """Calls ``method`` with ``args`` and waits for the result (``timeout`` seconds, default
        the client's): :class:`CallTimeoutError` when it passes."""
        return _ext._rpc_call(self._cp, method, args, self.timeout if timeout is None else timeout)

    def call_async(self, method: str, *args) -> Future:
        """Sends the call and returns a :class:`Future` at once."""
        return Future(self._c.call_async(method, args))

    def batch(self) -> Batch:
        """A :class:`Batch` to use as ``with client.batch() as b: ...``."""
        return Batch(self)

    def server_alive(self) -> bool:
        return self._c.server_alive()

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        c, cp, cfg, fast = self._c, self._cp, self._cfg, _ext._rpc_call

        def remote(*args):
            c  # keeps the client (and so the capsule's pointer) alive as long as this function
            return fast(cp, method, args, cfg[0])

        remote.__name__ = method
        # Kept in the instance: the next `client.method` is found without calling __getattr__
        # (a new function per call cost about as much as the rest of the Python side of a call).
        d = self.__dict__
        if len(d) < 256:
            d[method] = remote
        return remote

    def __repr__(self) -> str:
        return f"<colors_shm.rpc.Client {self.name!r}>"


def connect(name: str, spin_ns: int | None = None, timeout: float | None = None) -> Client:
    """A :class:`Client` of endpoint ``name``; raises :class:`UnavailableError` if no live
    process serves it. ``timeout`` (seconds) applies to every call unless a call gives its own."""
    return Client(name, spin_ns, timeout)
