"""colors_shm: live Python objects shared between processes through one shared-memory heap.

A ``colors-server`` owns the heap; every process that imports this module attaches to it (on the
first call that needs it, or explicitly with :func:`attach`) and then reads and writes shared
objects directly, without serialization::

    import colors_shm as cs

    jobs = cs.copy_to({"todo": [1, 2, 3], "done": []})   # deep copy into the heap -> SharedDict
    cs.repository("jobs").set(jobs)                      # a named root other processes can get()

    # in another process
    jobs = cs.repository("jobs").get()
    with cs.synchronized(jobs):
        jobs["done"].append(jobs["todo"].pop())
        cs.notify_all(jobs)

Mapping: ``int`` (64-bit signed), ``float``, ``bool``, ``str`` and ``None`` are stored by value
and read back as plain Python values; ``bytes``/``bytearray`` become shared binaries and read back
as ``bytes``; ``list``/``tuple``, ``dict`` and ``set``/``frozenset`` are copied by :func:`copy_to`
and appear as :class:`SharedList`, :class:`SharedDict` and :class:`SharedSet` proxies. While a proxy
is alive its shared object stays alive (it is a GC root of this process), and the same shared
object always gives the same proxy.

Several objects change together, or not at all, in a transaction (see :func:`transaction` and
:func:`atomically`)::

    with cs.transaction():
        a.balance -= 10
        b.balance += 10

Every error is a :class:`SharedMemoryError` (subclasses per kind). Blocking calls release the GIL
and stay interruptible by Ctrl-C.
"""

from __future__ import annotations

import atexit as _atexit
import builtins as _builtins
import os as _os
import threading as _threading
from dataclasses import dataclass as _dataclass

from . import _colors_shm as _ext

# Registered first, so it runs last of the binding's atexit handlers (after the rpc servers and
# the heap-pressure watcher stopped): other threads' blocking calls end and their threads park
# instead of taking the GIL back during finalization, which would abort the process (GilRelease,
# ext/common.hpp).
_atexit.register(_ext._begin_interpreter_exit, 500)
from ._colors_shm import (
    AddressInUseError,
    Channel,
    CorruptHeapError,
    InvalidArgumentError,
    NotAttachedError,
    NotOwnerError,
    OutOfMemoryError,
    OwnerDiedError,
    RefusedError,
    Repository,
    ServerGoneError,
    SharedIndexError,
    SharedInterruptedError,
    SharedKeyError,
    SharedMemoryError,
    SharedOverflowError,
    ReadScope,
    Transaction,
    TransactionAbortedError,
    DurabilityError,
    TransactionConflictError,
    TypeMismatchError,
    VersionMismatchError,
)
from ._colors_shm import SharedClass, SharedField
from ._proxies import SharedDict, SharedList, SharedObject, SharedProxy, SharedSet, SharedSortedDict
from ._classes import SharedInstance, register, shared_name

# A forked child (multiprocessing's default on Linux) must not use its parent's attachment: it
# starts detached and attaches as a new client on first use; inherited proxies are stale.
_os.register_at_fork(after_in_child=_ext._after_fork_in_child)

# Short aliases named like the C++ errors (not in __all__: they would shadow builtins on `import *`).
OverflowError = SharedOverflowError  # noqa: A001
IndexError = SharedIndexError  # noqa: A001
KeyError = SharedKeyError  # noqa: A001

__version__ = "0.1.0"

__all__ = [
    "attach",
    "detach",
    "is_attached",
    "copy_to",
    "allocate",
    "is_shared",
    "shared_type",
    "register",
    "shared_name",
    "SharedClass",
    "SharedField",
    "SharedInstance",
    "repository",
    "channel",
    "delete_repository",
    "delete_channel",
    "CHANNEL_MAX_CAPACITY",
    "Repository",
    "Channel",
    "synchronized",
    "wait",
    "notify_all",
    "collect",
    "checkpoint",
    "gc_stats",
    "heap_stats",
    "GcStats",
    "transaction",
    "atomically",
    "in_transaction",
    "ReadScope",
    "Transaction",
    "read_scope",
    "in_read_scope",
    "proxy_cache",
    "SharedProxy",
    "SharedList",
    "SharedDict",
    "SharedSet",
    "SharedSortedDict",
    "SharedObject",
    "SharedMemoryError",
    "NotAttachedError",
    "ServerGoneError",
    "VersionMismatchError",
    "AddressInUseError",
    "RefusedError",
    "OutOfMemoryError",
    "TypeMismatchError",
    "SharedOverflowError",
    "OwnerDiedError",
    "NotOwnerError",
    "SharedIndexError",
    "SharedKeyError",
    "InvalidArgumentError",
    "SharedInterruptedError",
    "CorruptHeapError",
    "TransactionConflictError",
    "TransactionAbortedError",
    "DurabilityError",
]


# ---- attachment -------------------------------------------------------------------------------


def attach(socket: str | None = None) -> None:
    """Attaches this process to a colors server.

    ``socket`` is the server's Unix socket path; ``None`` uses ``$COLORS_SOCKET`` or else the
    server's default path. Does nothing if already attached. Calls that need the heap attach
    implicitly, so calling this is only needed to choose the socket or to fail early.
    Raises :class:`ServerGoneError` when no server listens there, and :class:`RefusedError` when
    the process behind the socket runs as a user this client does not trust (its own user, root,
    or a uid listed in ``$COLORS_TRUSTED_UIDS``), or stays busy for ``$COLORS_ATTACH_TIMEOUT_MS``
    (default 5000). After the server died, ``attach()`` waits as long for a successor that
    adopted the heap and takes this client back with its proxies intact; only a server with
    another heap (started with ``--fresh-heap``) makes it replace the old attachment (proxies of
    the old one then raise :class:`NotAttachedError`).
    """
    _ext.attach(socket)


def detach() -> None:
    """Detaches from the server. Proxies obtained before become unusable
    (:class:`NotAttachedError`); the server drops this process's roots."""
    _ext.detach()


def is_attached() -> bool:
    """Whether this process is attached to a colors server that is alive. Turns False within
    microseconds of the server's death; shared objects held stay readable and writable and
    allocation goes on while the heap has room, while what needs the server (repositories,
    channels, rpc, collections, blocking waits) waits up to ``$COLORS_ATTACH_TIMEOUT_MS`` for a
    successor, reattaches (True again) or raises :class:`ServerGoneError`."""
    return _ext.is_attached()


# ---- objects ----------------------------------------------------------------------------------


def copy_to(obj):
    """Deep-copies a private object graph into the shared heap and returns the shared copy.

    ``list`` and ``tuple`` become :class:`SharedList`, ``dict`` :class:`SharedDict`, ``set`` and
    ``frozenset`` :class:`SharedSet`, a ``sortedcontainers.SortedDict`` a :class:`SharedSortedDict`;
    scalars, ``str`` and ``bytes`` are copied by value (and come back as plain Python values).
    Sharing and cycles of the private graph are preserved: an object reachable twice is copied once. Shared objects inside the graph are referenced, not copied.
    Raises :class:`TypeMismatchError` for objects with no shared mapping and
    :class:`SharedOverflowError` for ints beyond 64 bits.

    Plain data (lists, tuples and dicts of ``None``, ``bool``, ``int``, ``float``, ``str`` and such
    containers, sets of those scalars, no container met twice) is built without a GC root per
    object, several times faster than the general copy; the result is the same.
    """
    return _ext.copy_to(obj)


def _is_sorted_dict_class(cls) -> bool:
    """Whether cls is sortedcontainers.SortedDict (without importing sortedcontainers)."""
    return (
        isinstance(cls, type)
        and cls.__name__ == "SortedDict"
        and getattr(cls, "__module__", "").startswith("sortedcontainers")
    )


def allocate(cls, *args, **kwargs):
    """Allocates a new shared object.

    * ``allocate(list)``, ``allocate(dict)``, ``allocate(set)``: an empty shared container
      (``allocate(list, n)``: ``n`` is a capacity hint); ``allocate(bytes, n)``: ``n`` zero bytes.
    * ``allocate(SharedSortedDict)`` (or ``allocate(sortedcontainers.SortedDict)``): an empty
      shared sorted map.
    * ``allocate(UserClass)``: a shared instance of a user class, with the class's declared fields
      (dataclass fields, else annotations, plus ``__slots__``) all ``None``. With arguments,
      ``allocate(UserClass, *args, **kwargs)`` then runs ``UserClass.__init__`` on the shared
      instance. The result is an instance of (a proxy subclass of) ``UserClass``.

    Raises :class:`TypeMismatchError` for classes that cannot be shared (builtins, extension
    types, subclasses of builtin types).
    """
    if cls in (list, tuple, dict, set, frozenset, bytes, bytearray):
        n = args[0] if args else kwargs.pop("n", 0)
        if len(args) > 1 or kwargs:
            raise TypeError(f"allocate({cls.__name__}, n=0) takes at most one size argument")
        return _ext.allocate(cls, n)
    if cls is SharedSortedDict or _is_sorted_dict_class(cls):
        if args or kwargs:
            raise TypeError("allocate(SharedSortedDict) takes no other argument")
        return _ext._new_sorted_map()
    if not isinstance(cls, type):
        raise _ext.TypeMismatchError(f"allocate() takes a class, not {cls!r}")
    from . import _classes

    name, fields = _classes.spec(cls)
    obj = _ext._new_object(name, fields)
    if args or kwargs:
        cls.__init__(obj, *args, **kwargs)
    return obj


def shared_type(obj) -> SharedClass:
    """The shared class of ``obj`` (a shared object, or a scalar/str/bytes value): its ``name``,
    ``version``, ``kind``, ``fields`` (each with ``name``, ``type``, ``class_name`` and
    ``shared_class``), ``versions`` (every version of the name, oldest first) and ``latest``.
    Classes are immutable: adding or deleting a field of an object switches it to another
    version."""
    return _ext.shared_type(obj)


def is_shared(obj) -> bool:
    """True for proxies of shared objects (:class:`SharedProxy`); False for everything else,
    including scalars read from the heap (they are plain Python values)."""
    return _ext.is_shared(obj)


def repository(name: str) -> Repository:
    """The named repository ``name`` (created empty on first use): a root of the shared heap that
    any process can read with ``.get()`` and replace with ``.set(obj)``. A repository can also be
    used with :func:`synchronized`, :func:`wait` and :func:`notify_all`."""
    return _ext.repository(name)


def channel(name: str, capacity: int = 64) -> Channel:
    """The named bounded channel ``name`` (created with ``capacity`` slots on first use; 1 to
    ``CHANNEL_MAX_CAPACITY``, else :class:`InvalidArgumentError`).

    ``send(obj, timeout=None)`` blocks while the channel is full (``TimeoutError`` after
    ``timeout`` seconds); ``receive(timeout=None)`` blocks until a value arrives (``TimeoutError``);
    ``try_send(obj)`` returns False when full; ``try_receive(default=None)`` returns ``default``
    when empty. Values are shared objects or scalars; private containers need :func:`copy_to`.
    """
    return _ext.channel(name, capacity)


def delete_repository(name: str) -> bool:
    """Deletes the repository ``name``: its value is no longer a root of the shared heap and its
    memory is reused. Returns False if there is no such repository. Every existing
    :class:`Repository` handle to it raises :class:`SharedKeyError` from then on, also once the
    name is created again (call :func:`repository` again to use the new one)."""
    return _ext.delete_repository(name)


def delete_channel(name: str) -> bool:
    """Deletes the channel ``name`` and drops the values queued in it; its memory is reused.
    Returns False if there is no such channel. Threads of any process blocked in ``send`` or
    ``receive`` on it, and every later use of an existing :class:`Channel` handle to it, raise
    :class:`SharedKeyError` (call :func:`channel` again to use a channel created since).
    ``capacity`` of :func:`channel` is at most ``CHANNEL_MAX_CAPACITY``."""
    return _ext.delete_channel(name)


CHANNEL_MAX_CAPACITY: int = _ext.CHANNEL_MAX_CAPACITY


# ---- monitors ---------------------------------------------------------------------------------


synchronized = _ext.synchronized
synchronized.__module__ = __name__


def wait(obj, timeout: float | None = None) -> bool:
    """Waits on the monitor of ``obj``, which this thread must hold (:class:`NotOwnerError`).

    Releases the monitor completely, waits for :func:`notify_all` (spurious wakeups are allowed:
    wait in a loop on a condition), re-acquires it. Returns False on timeout (seconds).
    """
    return _ext.wait(obj, timeout)


def notify_all(obj) -> None:
    """Wakes every thread of every process waiting on the monitor of ``obj`` (held by this
    thread, else :class:`NotOwnerError`)."""
    _ext.notify_all(obj)


# ---- collector --------------------------------------------------------------------------------


@_dataclass(frozen=True)
class GcStats:
    """Statistics of one collector cycle (times in nanoseconds, sizes in bytes)."""

    cycle: int = 0
    walk_ns: int = 0
    mark_ns: int = 0
    remark_ns: int = 0
    sweep_ns: int = 0
    total_ns: int = 0
    marking_passes: int = 0
    objects_marked: int = 0
    bytes_marked: int = 0
    objects_freed: int = 0
    bytes_freed: int = 0
    heap_used_before: int = 0
    heap_used_after: int = 0
    largest_free: int = 0
    threads: int = 0
    pending_objects: int = 0


def collect(timeout: float | None = None) -> GcStats:
    """Asks the server's collector for a full cycle starting after this call and waits for it.
    Garbage dropped before the call is freed by the second ``collect()`` at the latest. Empties
    this process's proxy cache first (:func:`proxy_cache`), so objects only the cache kept alive
    are garbage too."""
    return GcStats(**_ext.collect(timeout))


def checkpoint() -> int:
    """Asks the server for a checkpoint of the heap in its data directory (``colors-server
    --data-dir``) and waits until one that began after this call is on disk; returns its sequence
    number. Client processes that write while the heap is copied are stopped for the copy's last
    pages (colors-server/README.md, "Durability").

    Raises :class:`SharedMemoryError` when the server has no data directory or the checkpoint
    failed (the message says why, e.g. a full disk; the heap in memory is intact),
    :class:`ServerGoneError` when the server is gone, :class:`InvalidArgumentError` inside a
    transaction."""
    return _ext.checkpoint()


def gc_stats() -> GcStats:
    """Statistics of the collector's last finished cycle."""
    return GcStats(**_ext.gc_stats())


def heap_stats() -> dict:
    """Current heap occupancy: capacity, free_bytes, free_chunks, largest_free,
    allocated_bytes_total."""
    return _ext.heap_stats()


# ---- transactions -----------------------------------------------------------------------------


def transaction(timeout: float | None = None) -> Transaction:
    """A transaction, as a context manager::

        with colors_shm.transaction():
            a.balance -= amount
            b.balance += amount

    Entering the ``with`` block begins the transaction; leaving it normally commits it, and
    leaving it by an exception rolls it back (the exception then propagates). Everything the
    block changes in the shared heap -- fields of shared objects, list/dict/set/sorted-dict
    contents, ``Repository.set`` -- becomes visible to other transactions all at once at the
    commit, or not at all; reads see one consistent state. Other threads and processes that do not
    use transactions are not isolated from it (they may see its writes before the commit).

    Inside, channel ``send``/``receive``, rpc calls, adding or deleting fields of a shared object
    and ``delete_repository`` raise :class:`InvalidArgumentError`: they cannot be rolled back.
    A conflict with another transaction raises :class:`TransactionConflictError` (the transaction
    is then rolled back when the block ends; :func:`atomically` retries it).

    ``timeout`` (seconds, or None): a transaction that runs longer fails with
    :class:`TransactionAbortedError` at its next wait or at its commit, and is rolled back.

    The object returned by ``__enter__`` is the transaction itself: ``tx.commit()`` and
    ``tx.rollback()`` end it early (the rest of the block then runs outside it). A transaction
    object is used once, by the thread that entered it. Transactions nest flat: a transaction begun
    inside another joins it, its commit just ends its level, and its rollback dooms the whole
    (whose commit then raises :class:`TransactionAbortedError`). If this process dies inside a
    transaction, the server rolls it back.
    """
    return _ext.transaction(timeout)


def atomically(fn, /, *args, retries: int = 100, **kwargs):
    """Runs ``fn(*args, **kwargs)`` in a transaction, commits it and returns what ``fn`` returned.

    On :class:`TransactionConflictError` (raised inside ``fn`` or by the commit) the transaction is
    rolled back, the thread sleeps a short randomised, exponentially growing time (the GIL
    released) and ``fn`` runs again, up to ``retries`` more times; from the third retry on, the
    transaction also locks what it reads, so a long reader cannot starve behind writers. Any other
    exception rolls the transaction back and propagates. ``fn`` must therefore be safe to run
    several times, and must not swallow :class:`TransactionConflictError`.

    Inside an enclosing transaction ``fn`` joins it and is not retried: a conflict propagates to
    the outermost transaction (an outer ``atomically`` retries the whole).
    """
    return _ext._atomically(fn, args, kwargs or None, retries)


def in_transaction() -> bool:
    """Whether the calling thread runs a transaction."""
    return _ext.in_transaction()


# ---- read scopes -------------------------------------------------------------------------------


def read_scope() -> ReadScope:
    """A read scope, as a context manager::

        with colors_shm.read_scope():
            for c in part.to:
                visit(c.to)

    Inside the ``with`` block, the proxies of shared objects of mapped classes that this thread
    reads (fields, list elements) take no GC root each: the scope keeps their objects alive
    instead, which makes reading a large graph cheaper. Nothing changes for the code: a proxy that
    is still referenced when the scope ends (kept in a variable, a private list, anywhere) is
    rooted then, and one whose object is stored into a shared field or container is rooted at that
    moment. Identity holds as outside: reading an object twice gives the same proxy.

    Inside a scope the thread must not wait for the shared collector: :func:`collect`, a
    :func:`transaction` and an allocation that finds the heap full raise instead of waiting for a
    cycle that waits for the scope. A scope cannot begin inside a transaction
    (:class:`InvalidArgumentError`). Keep scopes short: the collector frees nothing while one that
    began before its cycle is open (past 1 s it gives the cycle up). Scopes nest; the outermost
    one counts.
    """
    return _ext.read_scope()


def in_read_scope() -> bool:
    """Whether the calling thread is inside a read scope."""
    return _ext.in_read_scope()


# ---- the proxy cache ----------------------------------------------------------------------------


def _watch_heap_pressure(gen: int) -> None:
    """The proxy cache's heap-pressure watcher (src/ext/proxy_cache.cpp): when an allocation of
    another process finds the heap full, drops the roots of the proxies only this process's cache
    keeps, as this process's own allocations do. One per attachment; ends at its detach."""
    try:
        seen = _ext._watch_heap_pressure_start(gen)
        while seen >= 0:
            now = _ext._await_heap_pressure(gen, seen, 1.0)
            if now < 0:
                return
            if now != seen:
                seen = now
                _ext._relieve_heap_pressure(gen)
    except SharedMemoryError:
        return  # detached meanwhile: the next attachment starts its own


_watchers: list = []  # the watcher threads started (one per attachment), for _stop_pressure_watchers


def _start_pressure_watcher(gen: int) -> None:
    t = _threading.Thread(target=_watch_heap_pressure, args=(gen,), name="colors_shm heap-pressure watcher",
                          daemon=True)
    t.start()
    _watchers[:] = [w for w in _watchers if w.is_alive()] + [t]


def _stop_pressure_watchers() -> None:
    """At interpreter exit, before finalization: a daemon thread that takes the GIL back during
    finalization is ended by CPython in a way that aborts a C++ extension's thread (pybind11's GIL
    guard), so every watcher leaves its wait (within 50 ms) and ends first."""
    _ext._stop_pressure_watcher()
    for w in _watchers:
        w.join(timeout=5.0)


_ext._set_pressure_watcher_starter(_start_pressure_watcher)
_atexit.register(_stop_pressure_watchers)


def proxy_cache(capacity: int | None = None) -> int:
    """The capacity of this process's proxy cache; with ``capacity``, sets it first (0 turns the
    cache off, and setting it empties the cache). Returns the capacity in effect.

    A proxy lives while Python code holds it; the cache also holds the last ``capacity`` proxies
    this process made (default 131072), so reading an object again (a traversal repeated, an index
    probed twice) finds its proxy instead of making a new one: several times cheaper. Identity is
    unchanged: one shared object has at most one proxy in a process, cached or not.

    The price: a cached proxy keeps its shared object alive, as any proxy does, after your code
    dropped it, until the proxy leaves the cache (``capacity`` newer proxies made since, a
    :func:`collect`, which empties the cache first, or a :func:`detach`). When an allocation in
    this process or another finds the heap full, the cache lets go of the objects only it keeps
    before that allocation gives up (this process's own allocations directly, other processes'
    through a daemon thread, "colors_shm heap-pressure watcher", started with the cache's first
    proxy in each attachment). Proxies read inside a :func:`read_scope` are not cached.

    Raises :class:`InvalidArgumentError` for a capacity outside 0..2**22 and ``TypeError`` for
    one that is not an int.
    """
    return _ext.proxy_cache(capacity)


del _builtins
