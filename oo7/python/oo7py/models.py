"""The two models the generator fills and the operations read: how each makes an object and a
list, and the monitor an update of a composite part's atomic parts runs under.

PRIVATE: instances of the schema classes in this process (``cls()``: an empty ``__dict__``, then
the builder sets the fields) and Python lists; updates need no lock (one process, one thread).

SHARED: the same classes allocated in the shared heap (``colors_shm.allocate(cls)``: an object of
the shared class with all declared fields null, then the builder stores them) and shared lists.
Updates of a composite part's atomic parts run under the composite part's monitor (``synchronized``),
so two processes running T2 at once lose no swap (transactions do not exist yet).
"""

from __future__ import annotations

import contextlib

import colors_shm as cs

from . import schema  # noqa: F401  (registers the shared class names before any shared read)


class Model:
    __slots__ = ("name", "new", "new_list", "synchronized")

    def __init__(self, name, new, new_list, synchronized):
        self.name = name
        self.new = new  # cls -> an instance with no field set yet
        self.new_list = new_list  # () -> an empty list of this model
        self.synchronized = synchronized  # obj -> context manager holding obj's monitor

    def __repr__(self):
        return f"<oo7 model {self.name}>"


_NO_LOCK = contextlib.nullcontext()


def _private_new(cls):
    return cls()


def _no_lock(obj):
    return _NO_LOCK


def _shared_new_list():
    return cs.allocate(list)


PRIVATE = Model("private", _private_new, list, _no_lock)
SHARED = Model("shared", cs.allocate, _shared_new_list, cs.synchronized)
