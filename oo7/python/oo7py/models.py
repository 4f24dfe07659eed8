"""The two models the generator fills and the operations read: how each makes an object and a
list, and how an update of a composite part's atomic parts runs.

PRIVATE: instances of the schema classes in this process (``cls()``: an empty ``__dict__``, then
the builder sets the fields) and Python lists; updates need no lock (one process, one thread).

SHARED: the same classes allocated in the shared heap (``colors_shm.allocate(cls)``: an object of
the shared class with all declared fields null, then the builder stores them) and shared lists.
The updates of a composite part's atomic parts run as one transaction (``atomic``:
``colors_shm.atomically``), so T2 runs in several processes and languages at once lose no swap, and
one killed in the middle is rolled back by the server.
"""

from __future__ import annotations

import colors_shm as cs

from . import schema  # noqa: F401  (registers the shared class names before any shared read)


class Model:
    __slots__ = ("name", "new", "new_list", "atomic")

    def __init__(self, name, new, new_list, atomic):
        self.name = name
        self.new = new  # cls -> an instance with no field set yet
        self.new_list = new_list  # () -> an empty list of this model
        self.atomic = atomic  # (fn, *args) -> fn(*args), as one transaction in the shared model

    def __repr__(self):
        return f"<oo7 model {self.name}>"


def _private_new(cls):
    return cls()


def _call(fn, *args):
    return fn(*args)


def _shared_new_list():
    return cs.allocate(list)


PRIVATE = Model("private", _private_new, list, _call)
SHARED = Model("shared", cs.allocate, _shared_new_list, cs.atomically)
