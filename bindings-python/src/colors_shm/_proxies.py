"""Proxies of shared containers and objects.

A proxy owns exactly one ``_Ref`` (a GC root of this process) in its ``_ref`` slot: while the proxy
lives, its shared object lives. Proxies are created only by the extension (``_colors_shm``), which
keeps a raw-word -> live proxy table so that one shared object has at most one live proxy.

The extension offers a few primitive operations per kind (``lget``/``lset``/``lappend``/...); the
classes below build the full ``collections.abc`` behaviour of ``list``, ``dict`` and ``set`` on them.
Results of operations that create a new container (slicing, ``+``, set algebra, ``copy()``) are
private Python containers, as they would be for the private types; use ``copy_to`` to share them.
"""

from __future__ import annotations

import abc
import itertools
import operator
import reprlib
import sys
from collections.abc import (
    ItemsView,
    Iterable,
    KeysView,
    Mapping,
    MutableMapping,
    MutableSequence,
    MutableSet,
    Set,
    ValuesView,
)

from . import _colors_shm as _ext

_MISSING = object()


class SharedProxy:
    """Base class of every proxy of a shared object."""

    # _colors_handle: the identity table's handle, hidden by _register_proxies (the extension).
    __slots__ = ("_ref", "_colors_handle", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError(
            f"{type(self).__name__} cannot be created directly: use colors_shm.copy_to() or colors_shm.allocate()"
        )

    def __reduce_ex__(self, protocol):
        raise TypeError(
            f"cannot pickle a {type(self).__name__}: shared objects are handed over through "
            "colors_shm.repository() or colors_shm.channel(), not by pickling"
        )

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        import copy

        return copy.deepcopy(self.copy(), memo)


def _elem_eq(a, b) -> bool:
    return a is b or a == b


def _resolved(index: slice) -> slice:
    """The slice with its bounds' ``__index__`` called once, as ``list`` does: a whole-list rewrite
    may apply it again after a concurrent change, and a bound whose ``__index__`` changed the list
    would otherwise change it on every try."""
    return slice(*(None if b is None else operator.index(b) for b in (index.start, index.stop, index.step)))


# A remove() whose element comparisons keep changing the list (an __eq__ that writes to it) would
# otherwise look again for ever; concurrent changes by others end long before this.
_REMOVE_TRIES = 1000


# --------------------------------------------------------------------------------------------
# list


class SharedList(SharedProxy, MutableSequence):
    """A shared list: behaves like ``list`` (``collections.abc.MutableSequence``)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable, like list

    # ---- reading ----
    # __len__, __iter__ (over a snapshot: the elements at the instant iteration starts) and
    # __getitem__ are C methods the extension installs on the class (_install_list_fast_paths):
    # one atomic read each.

    def __reversed__(self):
        return reversed(self._ref.litems())  # a snapshot, as __iter__

    def __contains__(self, value) -> bool:
        return any(_elem_eq(v, value) for v in self._ref.litems())

    def index(self, value, start=0, stop=sys.maxsize) -> int:
        items = self._ref.litems()
        n = len(items)
        start, stop, _ = slice(start, stop).indices(n)
        for i in range(start, stop):
            if _elem_eq(items[i], value):
                return i
        raise ValueError(f"{value!r} is not in list")

    def count(self, value) -> int:
        return sum(1 for v in self._ref.litems() if _elem_eq(v, value))

    def copy(self) -> list:
        """A private (shallow) copy, like ``list.copy()``."""
        return self._ref.litems()

    # ---- writing ----
    def __setitem__(self, index, value):
        ref = self._ref
        if isinstance(index, slice):
            index = _resolved(index)
            new_values = list(value)
            for v in new_values:
                _ext.check_storable(v)

            def assign(items):
                items[index] = new_values  # list semantics incl. ValueError for extended slices

            self._rewrite(assign)
            return
        try:
            ref.lset(operator.index(index), value)
        except IndexError:
            raise IndexError("list assignment index out of range") from None

    def __delitem__(self, index):
        ref = self._ref
        if isinstance(index, slice):
            index = _resolved(index)
            self._rewrite(lambda items: items.__delitem__(index))
            return
        try:
            ref.lpop(operator.index(index))
        except IndexError:
            raise IndexError("list assignment index out of range") from None

    def insert(self, index, value) -> None:
        self._ref.linsert(operator.index(index), value)  # clamped as list.insert, atomically

    def append(self, value) -> None:
        self._ref.lappend(value)

    def extend(self, values: Iterable) -> None:
        if values is self:
            values = self._ref.litems_for_update()[0]
        self._ref.lextend(values)

    def pop(self, index=-1):
        ref = self._ref
        try:
            return ref.lpop(operator.index(index))  # one atomic operation
        except IndexError:
            raise IndexError("pop from empty list" if len(ref) == 0 else "pop index out of range") from None

    def remove(self, value) -> None:
        # Finds the first equal element in a snapshot, then removes it only if that position still
        # holds it (one atomic operation); retries on a list changed meanwhile.
        ref = self._ref
        for _ in range(_REMOVE_TRIES):
            for i, v in enumerate(ref.litems()):
                if _elem_eq(v, value):
                    if ref.lpop_if(i, v):
                        return
                    break
            else:
                raise ValueError("list.remove(x): x not in list")
        raise RuntimeError(f"list.remove(x): the list changed under each of {_REMOVE_TRIES} tries (does x.__eq__ change it?)")

    def clear(self) -> None:
        self._ref.clear()

    # Whole-list rewrites (slice assignment and deletion, reverse, sort, *=) read the elements "for
    # update" (once no transaction of another thread holds the list, so that a rollback never takes
    # back what they read after they wrote it back) with the list's version, and write the result
    # only if the list is still at that version: one atomic step against every other thread and
    # process. A change in between is never overwritten.
    def _rewrite(self, change) -> None:
        """Replaces the elements by ``change(items)``'s in-place result; reads and recomputes when
        another change came between the read and the write. ``change`` runs no user code."""
        ref = self._ref
        while True:
            items, version = ref.litems_for_update()
            change(items)
            if ref.lreplace_if(version, items):
                return

    def reverse(self) -> None:
        self._rewrite(list.reverse)

    def sort(self, *, key=None, reverse=False) -> None:
        """Sorts in place (reads the elements out, sorts them, writes them back in one atomic step).
        As ``list.sort``, raises ``ValueError`` when the list changed meanwhile (``key`` or an
        element's ``__lt__`` may change it, as may another thread or process); the list then keeps
        that change instead of the sorted order. It does not sort again by itself, because the
        change may be the sort's own code's."""
        items, version = self._ref.litems_for_update()
        items.sort(key=key, reverse=reverse)
        if not self._ref.lreplace_if(version, items):
            raise ValueError("list modified during sort")

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __imul__(self, n):
        n = operator.index(n)
        if n <= 0:
            self.clear()
        else:
            self._rewrite(lambda items: items.__imul__(n))
        return self

    # ---- operators giving new (private) lists ----
    def __add__(self, other):
        if isinstance(other, (list, SharedList)):
            return self._ref.litems() + list(other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, list):
            return other + self._ref.litems()
        return NotImplemented

    def __mul__(self, n):
        return self._ref.litems() * n

    __rmul__ = __mul__

    # ---- comparisons ----
    def _cmp_other(self, other):
        if isinstance(other, SharedList):
            return other._ref.litems()
        if isinstance(other, list):
            return other
        return None

    def __eq__(self, other):
        o = self._cmp_other(other)
        if o is None:
            return NotImplemented
        if other is self:
            return True
        return self._ref.litems() == o

    def __lt__(self, other):
        o = self._cmp_other(other)
        return NotImplemented if o is None else self._ref.litems() < o

    def __le__(self, other):
        o = self._cmp_other(other)
        return NotImplemented if o is None else self._ref.litems() <= o

    def __gt__(self, other):
        o = self._cmp_other(other)
        return NotImplemented if o is None else self._ref.litems() > o

    def __ge__(self, other):
        o = self._cmp_other(other)
        return NotImplemented if o is None else self._ref.litems() >= o

    @reprlib.recursive_repr("[...]")
    def __repr__(self) -> str:
        return "[" + ", ".join(repr(v) for v in self._ref.litems()) + "]"


# --------------------------------------------------------------------------------------------
# dict


class _SharedKeysView(KeysView):
    __slots__ = ()

    def __iter__(self):
        return iter(self._mapping._ref.mkeys())

    def __repr__(self):
        return f"shared_dict_keys({self._mapping._ref.mkeys()!r})"


class _SharedValuesView(ValuesView):
    __slots__ = ()

    def __iter__(self):
        return iter(self._mapping._ref.mvalues())

    def __contains__(self, value):
        return any(_elem_eq(v, value) for v in self._mapping._ref.mvalues())

    def __repr__(self):
        return f"shared_dict_values({self._mapping._ref.mvalues()!r})"


class _SharedItemsView(ItemsView):
    __slots__ = ()

    def __iter__(self):
        return iter(self._mapping._ref.mitems())

    def __repr__(self):
        return f"shared_dict_items({self._mapping._ref.mitems()!r})"


def _update_items(other, kwds) -> list:
    """The (key, value) pairs of ``dict.update(other, **kwds)``, each key and value checked to be
    storable (a failed update then changes nothing)."""
    if isinstance(other, Mapping):
        items = [(k, other[k]) for k in other]
    elif hasattr(other, "keys"):
        items = [(k, other[k]) for k in other.keys()]
    else:
        items = []
        for pair in other:
            k, v = pair
            items.append((k, v))
    items.extend(kwds.items())
    for k, v in items:
        _ext.check_storable(k)
        _ext.check_storable(v)
    return items


class SharedDict(SharedProxy, MutableMapping):
    """A shared map: behaves like ``dict`` (``collections.abc.MutableMapping``).

    Differences from ``dict``: iteration order is the hash table's, not insertion order, and
    ``popitem()`` removes an arbitrary item. Keys compare language-neutrally (``True != 1``).
    """

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self._ref)

    def __getitem__(self, key):
        return self._ref.mget(key)

    def get(self, key, default=None):
        return self._ref.mget_default(key, default)

    def __contains__(self, key) -> bool:
        return self._ref.mcontains(key)

    def __iter__(self):
        return iter(self._ref.mkeys())

    def __setitem__(self, key, value) -> None:
        self._ref.mput(key, value)

    def __delitem__(self, key) -> None:
        if not self._ref.mremove(key):
            raise KeyError(key)

    def keys(self):
        return _SharedKeysView(self)

    def values(self):
        return _SharedValuesView(self)

    def items(self):
        return _SharedItemsView(self)

    def pop(self, key, default=_MISSING):
        if default is _MISSING:
            return self._ref.mpop(key)
        try:
            return self._ref.mpop(key)
        except KeyError:
            return default

    def popitem(self):
        kv = self._ref.mpopitem()  # one atomic operation
        if kv is None:
            raise KeyError("popitem(): dictionary is empty")
        return kv

    def setdefault(self, key, default=None):
        return self._ref.msetdefault(key, default)  # one atomic operation

    def clear(self) -> None:
        self._ref.clear()

    def copy(self) -> dict:
        """A private (shallow) copy, like ``dict.copy()``."""
        return dict(self._ref.mitems())

    def __or__(self, other):
        if not isinstance(other, (dict, SharedDict)):
            return NotImplemented
        d = self.copy()
        d.update(other.items())
        return d

    def __ror__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        d = dict(other)
        d.update(self._ref.mitems())
        return d

    def update(self, other=(), /, **kwds) -> None:
        """As ``dict.update``; every key and value is checked first, so one that cannot be stored
        raises before anything is stored."""
        items = _update_items(other, kwds)
        ref = self._ref
        for k, v in items:
            ref.mput(k, v)

    def __ior__(self, other):
        self.update(other)
        return self

    def __eq__(self, other):
        if other is self:
            return True
        if not isinstance(other, (dict, SharedDict)):
            return NotImplemented
        if len(self) != len(other):
            return False
        for k, v in self._ref.mitems():
            ov = other.get(k, _MISSING)
            if ov is _MISSING or not _elem_eq(v, ov):
                return False
        return True

    @reprlib.recursive_repr("{...}")
    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self._ref.mitems()) + "}"


# --------------------------------------------------------------------------------------------
# set


class SharedSet(SharedProxy, MutableSet):
    """A shared set: behaves like ``set`` (``collections.abc.MutableSet``).

    Set algebra (``|``, ``&``, ``-``, ``^`` and the named methods) returns private ``set`` objects;
    the in-place forms (``|=``, ``update()`` ...) change the shared set.
    """

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def __len__(self) -> int:
        return len(self._ref)

    def __contains__(self, value) -> bool:
        return self._ref.scontains(value)

    def __iter__(self):
        return iter(self._ref.sitems())

    def add(self, value) -> None:
        self._ref.sadd(value)

    def discard(self, value) -> None:
        self._ref.sremove(value)

    def remove(self, value) -> None:
        if not self._ref.sremove(value):
            raise KeyError(value)

    def pop(self):
        v = self._ref.spop()  # one atomic operation
        if v is None:
            raise KeyError("pop from an empty set")
        return v[0]

    def clear(self) -> None:
        self._ref.clear()

    def copy(self) -> set:
        """A private (shallow) copy, like ``set.copy()``."""
        return set(self._ref.sitems())

    # Operators and named forms compute on a private copy with set's own algorithm, so results
    # (including which of two equal elements such as 1 and 1.0 is kept) are exactly set's.
    def __and__(self, other):
        return self.copy() & other if isinstance(other, Set) else NotImplemented

    def __rand__(self, other):
        return other & self.copy() if isinstance(other, Set) else NotImplemented

    def __or__(self, other):
        return self.copy() | other if isinstance(other, Set) else NotImplemented

    def __ror__(self, other):
        return other | self.copy() if isinstance(other, Set) else NotImplemented

    def __sub__(self, other):
        return self.copy() - other if isinstance(other, Set) else NotImplemented

    def __rsub__(self, other):
        return other - self.copy() if isinstance(other, Set) else NotImplemented

    def __xor__(self, other):
        return self.copy() ^ other if isinstance(other, Set) else NotImplemented

    def __rxor__(self, other):
        return other ^ self.copy() if isinstance(other, Set) else NotImplemented

    def __iand__(self, other):
        if not isinstance(other, Set):
            return NotImplemented
        self.intersection_update(other)
        return self

    def __ior__(self, other):
        if not isinstance(other, Set):
            return NotImplemented
        self.update(other)
        return self

    def __isub__(self, other):
        if not isinstance(other, Set):
            return NotImplemented
        if other is self:
            self.clear()
        else:
            self.difference_update(other)
        return self

    def __ixor__(self, other):
        if not isinstance(other, Set):
            return NotImplemented
        if other is self:
            self.clear()
        else:
            self.symmetric_difference_update(other)
        return self

    def union(self, *others) -> set:
        return self.copy().union(*others)

    def intersection(self, *others) -> set:
        return self.copy().intersection(*others)

    def difference(self, *others) -> set:
        return self.copy().difference(*others)

    def symmetric_difference(self, other) -> set:
        return self.copy().symmetric_difference(other)

    def issubset(self, other) -> bool:
        return self.copy().issubset(other)

    def issuperset(self, other) -> bool:
        return self.copy().issuperset(other)

    def isdisjoint(self, other) -> bool:
        return self.copy().isdisjoint(other)

    def update(self, *others) -> None:
        """As ``set.update``; every element is checked first, so one that cannot be stored raises
        before anything is added."""
        values = [v for o in others for v in list(o)]
        for v in values:
            _ext.check_storable(v)
        for v in values:
            self._ref.sadd(v)

    def intersection_update(self, *others) -> None:
        # Read "for update" (as SharedList.reverse): never a transaction's changes about to roll
        # back. Removes what the intersection drops in one operation: an element another thread
        # or process adds meanwhile stays (the update came first), and of two equal elements
        # (1 and 1.0) the shared one stays.
        items = self._ref.sitems_for_update()
        keep = set(items).intersection(*others)
        self._ref.sremove_all([v for v in items if v not in keep])

    def difference_update(self, *others) -> None:
        for o in others:
            self._ref.sremove_all(list(o))  # each operand in one operation

    def symmetric_difference_update(self, other) -> None:
        if other is self:
            self.clear()
            return
        for v in set(other):
            if not self._ref.sremove(v):
                self._ref.sadd(v)

    def __le__(self, other):
        return self.copy() <= other if isinstance(other, Set) else NotImplemented

    def __lt__(self, other):
        return self.copy() < other if isinstance(other, Set) else NotImplemented

    def __ge__(self, other):
        return self.copy() >= other if isinstance(other, Set) else NotImplemented

    def __gt__(self, other):
        return self.copy() > other if isinstance(other, Set) else NotImplemented

    def __eq__(self, other):
        if other is self:
            return True
        if not isinstance(other, Set):
            return NotImplemented
        return len(self) == len(other) and all(v in other for v in self._ref.sitems())

    @reprlib.recursive_repr("{...}")
    def __repr__(self) -> str:
        items = self._ref.sitems()
        if not items:
            return "set()"
        return "{" + ", ".join(repr(v) for v in items) + "}"


# --------------------------------------------------------------------------------------------
# user objects (generic proxy; mapping to private classes by name is still to come)


def _check_field_name(name):
    """Names starting with ``__`` are not a generic proxy's fields: reads of them are refused
    (``__getattr__``), so writes and deletions are too, rather than making fields nobody can read
    (or, for ``__class__``, changing the proxy's class)."""
    if isinstance(name, str) and name.startswith("__"):
        raise AttributeError(f"{name!r}: a name starting with '__' is not a field of a generic SharedObject")


class SharedObject(SharedProxy):
    """A shared user object whose class maps to no Python class (it could not be imported and was
    not :func:`~colors_shm.register`-ed): attribute access reads and writes its fields; assigning
    a new attribute adds a field and ``del`` removes one (new class versions, object not moved)."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        ref = object.__getattribute__(self, "_ref")
        if not ref.ohas(name):
            cls, version = ref.oclass()
            raise AttributeError(f"shared object of class {cls} (version {version}) has no field {name!r}")
        return ref.oget(name)

    def __setattr__(self, name, value):
        if name == "_ref":
            object.__setattr__(self, name, value)  # read-only: raises AttributeError
            return
        _check_field_name(name)
        object.__getattribute__(self, "_ref").oset(name, value)

    def __delattr__(self, name):
        _check_field_name(name)
        object.__getattribute__(self, "_ref").odel(name)

    def __dir__(self):
        return list(self._ref.ofields())

    def copy(self):
        raise TypeError("shared user objects cannot be copied")

    __hash__ = object.__hash__  # identity, as for mapped user objects

    @reprlib.recursive_repr("<shared object ...>")
    def __repr__(self) -> str:
        cls, version = self._ref.oclass()
        fields = ", ".join(f"{f}={self._ref.oget(f)!r}" for f in self._ref.ofields())
        return f"<shared {cls} v{version} (no Python class mapped) {fields}>"



# --------------------------------------------------------------------------------------------
# sorted map

_KEYS, _VALUES, _ITEMS = 0, 1, 2
_RANGE_BATCH = 256  # entries fetched per locked read while iterating


def _scan(ref, lo, hi, lo_incl, hi_incl, reverse, mode):
    """Iterates a key range in batches: each batch is one locked read that starts after the last
    key of the previous one, so the iteration sees each key once, in order, and sees changes made
    ahead of it (never a RuntimeError for a changed size, unlike ``dict``). The first batch is read
    at once (like ``SortedDict.irange``, which finds its bounds when called), the others lazily."""
    fetch = _ITEMS if mode == _VALUES else mode
    batch = ref.trange(lo, hi, lo_incl, hi_incl, reverse, _RANGE_BATCH, fetch)
    first = [kv[1] for kv in batch] if mode == _VALUES else batch
    if len(batch) < _RANGE_BATCH:
        return iter(first)
    return itertools.chain(first, itertools.chain.from_iterable(_more_batches(ref, batch, lo, hi, lo_incl, hi_incl, reverse, mode)))


def _more_batches(ref, batch, lo, hi, lo_incl, hi_incl, reverse, mode):
    """The batches after a full one (a list per locked read), for _scan."""
    fetch = _ITEMS if mode == _VALUES else mode
    while len(batch) == _RANGE_BATCH:
        last = batch[-1] if mode == _KEYS else batch[-1][0]
        if reverse:
            hi, hi_incl = last, False
        else:
            lo, lo_incl = last, False
        batch = ref.trange(lo, hi, lo_incl, hi_incl, reverse, _RANGE_BATCH, fetch)
        yield [kv[1] for kv in batch] if mode == _VALUES else batch


class _SortedKeysView(KeysView):
    __slots__ = ()

    def __iter__(self):
        return _scan(self._mapping._ref, None, None, True, True, False, _KEYS)

    def __reversed__(self):
        return _scan(self._mapping._ref, None, None, True, True, True, _KEYS)

    def __getitem__(self, index):
        """The key at a position (negative from the end), as ``SortedKeysView`` allows."""
        return self._mapping.peekitem(index)[0]

    def __repr__(self):
        return f"shared_sorted_keys({list(self)!r})"


class _SortedValuesView(ValuesView):
    __slots__ = ()

    def __iter__(self):
        return _scan(self._mapping._ref, None, None, True, True, False, _VALUES)

    def __reversed__(self):
        return _scan(self._mapping._ref, None, None, True, True, True, _VALUES)

    def __contains__(self, value):
        return any(_elem_eq(v, value) for v in self)

    def __repr__(self):
        return f"shared_sorted_values({list(self)!r})"


class _SortedItemsView(ItemsView):
    __slots__ = ()

    def __iter__(self):
        return _scan(self._mapping._ref, None, None, True, True, False, _ITEMS)

    def __reversed__(self):
        return _scan(self._mapping._ref, None, None, True, True, True, _ITEMS)

    def __repr__(self):
        return f"shared_sorted_items({list(self)!r})"


class SharedSortedDict(SharedProxy, MutableMapping):
    """A shared sorted map (a B+tree in the heap): a ``MutableMapping`` kept in key order, with the
    range and position queries of ``sortedcontainers.SortedDict``.

    Make one with ``colors_shm.allocate(colors_shm.SharedSortedDict)`` (or
    ``allocate(sortedcontainers.SortedDict)``), or ``colors_shm.copy_to(a_sorted_dict)``.

    Keys of one map are all numbers (``int`` and ``float`` compared by value, as Python does:
    ``1 == 1.0 < 1.5``), all ``str`` (code point order) or all ``bytes``; a key of another kind, a
    NaN, ``None`` or a ``bool`` raises :class:`TypeMismatchError` (a ``TypeError``) and changes
    nothing (lookups too). Each method call is atomic across processes; iteration reads batches
    of 256 entries, each continuing after the last key seen (see ``irange``). Differences from
    ``SortedDict``: no ``key=`` function; ``bisect_*``, ``index``, ``peekitem`` and ``popitem``
    with an index walk the leaves before the position (O(n/24)); results of ``copy()`` are private.
    """

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    # __getitem__, get, __contains__, __setitem__ and __len__ are C methods the extension installs
    # on the class below (_install_sorted_fast_paths): one map operation each.

    def __iter__(self):
        return _scan(self._ref, None, None, True, True, False, _KEYS)

    def __reversed__(self):
        return _scan(self._ref, None, None, True, True, True, _KEYS)

    def __delitem__(self, key) -> None:
        if not self._ref.tremove(key):
            raise KeyError(key)

    def keys(self):
        """The keys in order (a ``KeysView`` that also supports ``keys()[i]`` and ``reversed``)."""
        return _SortedKeysView(self)

    def values(self):
        return _SortedValuesView(self)

    def items(self):
        return _SortedItemsView(self)

    def irange(self, minimum=None, maximum=None, inclusive=(True, True), reverse=False):
        """The keys k with ``minimum <= k <= maximum`` in order (``None``: unbounded; ``inclusive``
        says whether each end belongs to the range), descending if ``reverse``. Lazy: it reads
        256 keys per locked call, each batch after the last key returned."""
        return _scan(self._ref, minimum, maximum, inclusive[0], inclusive[1], reverse, _KEYS)

    def irange_items(self, minimum=None, maximum=None, inclusive=(True, True), reverse=False):
        """``irange`` yielding ``(key, value)`` pairs (one call per 256 entries instead of one
        lookup per key). Not in ``SortedDict``."""
        return _scan(self._ref, minimum, maximum, inclusive[0], inclusive[1], reverse, _ITEMS)

    def bisect_left(self, key) -> int:
        """The number of keys < key."""
        return self._ref.trank(key, False)

    def bisect_right(self, key) -> int:
        """The number of keys <= key."""
        return self._ref.trank(key, True)

    bisect = bisect_right

    def index(self, key, start=None, stop=None) -> int:
        """The position of key; ``ValueError`` if it is absent (or outside ``[start, stop)``)."""
        if key not in self:
            raise ValueError(f"{key!r} is not in the sorted dict")
        i = self._ref.trank(key, False)
        n = len(self)
        lo = 0 if start is None else (start + n if start < 0 else start)
        hi = n if stop is None else (stop + n if stop < 0 else stop)
        if not lo <= i < hi:
            raise ValueError(f"{key!r} is not in the sorted dict between {start} and {stop}")
        return i

    def peekitem(self, index=-1):
        """The ``(key, value)`` at a position (default the last); ``IndexError`` out of range."""
        return self._ref.tat(index)

    def popitem(self, index=-1):
        """Removes and returns the ``(key, value)`` at a position (default the last), in one
        operation. ``KeyError`` when empty, ``IndexError`` out of range."""
        try:
            return self._ref.tpopat(index)
        except IndexError:
            if len(self) == 0:
                raise KeyError("popitem(): dictionary is empty") from None
            raise

    def pop(self, key, default=_MISSING):
        if default is _MISSING:
            return self._ref.tpop(key)
        try:
            return self._ref.tpop(key)
        except KeyError:
            return default

    def update(self, other=(), /, **kwds) -> None:
        """As ``dict.update``; every key and value is checked to be storable first, so one that
        cannot be stored raises before anything is stored (a key of another kind than the map's
        is refused when it is stored)."""
        for k, v in _update_items(other, kwds):
            self[k] = v

    def setdefault(self, key, default=None):
        return self._ref.tsetdefault(key, default)  # one atomic operation

    def clear(self) -> None:
        self._ref.tclear()

    def copy(self):
        """A private (shallow) copy: a ``sortedcontainers.SortedDict`` when that package is
        installed, else a ``dict`` in key order."""
        items = list(self.items())
        try:
            from sortedcontainers import SortedDict
        except ImportError:
            return dict(items)
        return SortedDict(items)

    @reprlib.recursive_repr("SharedSortedDict({...})")
    def __repr__(self) -> str:
        return "SharedSortedDict({" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "})"

_ext._register_proxies(SharedProxy, SharedList, SharedDict, SharedSet, SharedObject)
_ext._install_list_fast_paths(SharedList)
abc.update_abstractmethods(SharedList)
_ext._register_sorted_proxy(SharedSortedDict)
_ext._install_sorted_fast_paths(SharedSortedDict)
abc.update_abstractmethods(SharedSortedDict)
