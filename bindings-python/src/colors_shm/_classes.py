"""User classes: how a Python class maps to a shared class and back (section 3.1 of the paper).

* A Python class ``C`` maps to the shared class named ``C.__colors_name__`` if the class itself
  defines it, else ``f"{C.__module__}.{C.__qualname__}"`` (or the name given to :func:`register`).
* Its declared fields are its dataclass fields, else the annotations of its classes (base classes
  first), plus its ``__slots__``. Annotations give the shared field types (``int`` -> integer,
  ``float`` -> float, ``str`` -> string, ``list[...]`` -> list, another mapped class -> that class,
  ``Optional[X]`` -> X, anything else -> any); ``ClassVar`` annotations are not fields.
* A shared object of class ``pkg.mod.Name`` appears in Python as an instance of a *proxy class*
  made once per private class: a subclass of the private class (so ``isinstance`` holds and its
  methods run against shared state) whose declared fields are data descriptors reading and writing
  the heap (``_colors_shm._FieldDescriptor``), and whose other attribute writes add shared fields.
  The private class is found through :func:`register` (``allocate`` and ``copy_to`` register
  the classes they see) or by importing ``pkg.mod`` and looking ``Name`` up in it; if that
  fails, the object appears as a generic :class:`~colors_shm.SharedObject`.

Importing on demand runs the module's top-level code, as unpickling does: only attach to servers
shared with processes you trust (the server admits the same user, or a named group).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import typing
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from . import _colors_shm as _ext

# Shared type kinds (colors/types.hpp TypeKind), by name.
KINDS: dict[str, int] = dict(_ext._type_kinds())
_ANY = KINDS["any"]

_registry: dict[str, type] = {}  # shared name -> private class
_names: dict[type, str] = {}  # private class -> shared name given to register()
_specs: dict[type, tuple] = {}  # private class -> (shared name, fields)
_proxy_classes: dict[type, type] = {}  # private class -> proxy class
_unmappable: dict[type, str] = {}  # private class -> why it cannot have a proxy class


class SharedInstance:
    """Marker base class of the proxy classes of mapped user classes (``isinstance(x,
    SharedInstance)`` is true exactly for shared user objects mapped to a Python class)."""

    __slots__ = ()

    # Reached only by a class with its own __setattr__/__delattr__ (see _own_setattr) calling
    # super(): an attribute it lets through becomes a field of the shared object, as on any proxy.
    def __setattr__(self, name: str, value: object) -> None:
        _ext._shared_setattr(self, name, value)

    def __delattr__(self, name: str) -> None:
        _ext._shared_delattr(self, name)


def shared_name(cls: type) -> str:
    """The name of the shared class that the Python class ``cls`` maps to."""
    n = _names.get(cls)
    if n is not None:
        return n
    n = cls.__dict__.get("__colors_name__")
    if isinstance(n, str):
        return n
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type, name: str | None = None) -> type:
    """Maps the Python class ``cls`` to the shared class ``name`` (default: its qualified name)
    in both directions: objects of that shared class appear as instances of ``cls``, and
    ``allocate(cls)``/``copy_to`` create them under that name. Usable as a class decorator.
    Needed for classes the importer cannot find by name (defined in functions, or named
    differently in another language)."""
    if not isinstance(cls, type):
        raise TypeError(f"register() takes a class, not {cls!r}")
    if name is not None:
        if not isinstance(name, str) or not name:
            raise TypeError("register(): name must be a non-empty str")
        _names[cls] = name
    _specs.pop(cls, None)
    _registry[shared_name(cls)] = cls
    _ext._forget_class_mappings()
    return cls


def _optional_inner(tp):
    origin = typing.get_origin(tp)
    if origin is typing.Union or (sys.version_info >= (3, 10) and origin is getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        return None
    return tp


def field_kind(tp) -> tuple[int, str]:
    """Shared (kind, class name) of a field annotated with ``tp``."""
    if tp is None or isinstance(tp, str):
        return _ANY, ""
    tp = _optional_inner(tp)
    if tp is None:
        return _ANY, ""
    origin = typing.get_origin(tp) or tp
    if origin is bool:
        return KINDS["boolean"], ""
    if origin is int:
        return KINDS["integer"], ""
    if origin is float:
        return KINDS["float"], ""
    if origin is str:
        return KINDS["string"], ""
    if origin in (bytes, bytearray):
        return KINDS["binary"], ""
    if origin in (list, tuple) or origin in (typing.List, typing.Tuple):
        return KINDS["list"], ""
    if origin is dict or origin is typing.Dict:
        return KINDS["map"], ""
    if origin in (set, frozenset) or origin in (typing.Set, typing.FrozenSet):
        return KINDS["set"], ""
    if isinstance(origin, type):
        if issubclass(origin, Mapping):
            return KINDS["map"], ""
        if issubclass(origin, AbstractSet):
            return KINDS["set"], ""
        if issubclass(origin, Sequence) and not issubclass(origin, (str, bytes)):
            return KINDS["list"], ""
        if _mappable_reason(origin) is None:
            return KINDS["object"], shared_name(origin)
    return _ANY, ""


def value_kind(value) -> tuple[int, str]:
    """Shared (kind, class name) for a field created by storing ``value`` (an attribute the class
    does not declare): scalars, strings, binaries and containers give their kind, others any."""
    if isinstance(value, bool):
        return KINDS["boolean"], ""
    if isinstance(value, int):
        return KINDS["integer"], ""
    if isinstance(value, float):
        return KINDS["float"], ""
    if isinstance(value, str):
        return KINDS["string"], ""
    if isinstance(value, (bytes, bytearray)):
        return KINDS["binary"], ""
    from ._proxies import SharedDict, SharedList, SharedSet

    if isinstance(value, (list, tuple, SharedList)):
        return KINDS["list"], ""
    if isinstance(value, (dict, SharedDict)):
        return KINDS["map"], ""
    if isinstance(value, (set, frozenset, SharedSet)):
        return KINDS["set"], ""
    return _ANY, ""


def _mappable_reason(cls: type) -> str | None:
    """Why ``cls`` cannot be a shared user class, or None if it can."""
    if cls in _unmappable:
        return _unmappable[cls]
    if not isinstance(cls, type):
        return "not a class"
    if cls.__module__ == "builtins" or not (cls.__flags__ & (1 << 9)):  # Py_TPFLAGS_HEAPTYPE
        return f"{cls.__qualname__} is a builtin or extension type"
    from ._proxies import SharedProxy

    if issubclass(cls, (SharedProxy, SharedInstance)):
        return f"{cls.__qualname__} is a proxy class"
    for base in cls.__mro__[1:]:
        if base is object:
            continue
        if not (base.__flags__ & (1 << 9)):
            return f"{cls.__qualname__} derives from the builtin type {base.__qualname__}"
    if not _ext._is_plain_class(cls):
        return f"{cls.__qualname__} derives from an extension type"
    return None


def _hints(cls: type) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        out: dict = {}
        for klass in reversed(cls.__mro__):
            out.update(getattr(klass, "__dict__", {}).get("__annotations__", {}))
        return out


def _is_classvar(tp) -> bool:
    if tp is typing.ClassVar or typing.get_origin(tp) is typing.ClassVar:
        return True
    return isinstance(tp, str) and tp.replace("typing.", "").startswith("ClassVar")


def declared_fields(cls: type) -> list[tuple[str, int, str]]:
    """The declared fields of ``cls`` as (name, kind, class name), in declaration order."""
    hints = _hints(cls)
    names: list[str] = []
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
    else:
        for klass in reversed(cls.__mro__):
            if klass is object or klass is SharedInstance:
                continue
            for n, tp in klass.__dict__.get("__annotations__", {}).items():
                if not _is_classvar(tp) and n not in names:
                    names.append(n)
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for n in slots:
            if n not in ("__dict__", "__weakref__") and n not in names:
                names.append(n)
    return [(n, *field_kind(hints.get(n))) for n in names]


def spec(cls: type) -> tuple[str, list[tuple[str, int, str]]]:
    """(shared name, declared fields) of ``cls``; raises TypeMismatchError if it cannot map."""
    s = _specs.get(cls)
    if s is None:
        why = _mappable_reason(cls)
        if why is not None:
            raise _ext.TypeMismatchError(f"cannot share instances of {cls!r}: {why}")
        s = (shared_name(cls), declared_fields(cls))
        _specs[cls] = s
        if _registry.get(s[0]) is not cls:  # the class last used under a name is the mapped one
            _registry[s[0]] = cls
            _ext._forget_class_mappings()
    return s


def _class_default(cls: type, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            v = klass.__dict__[name]
            if hasattr(type(v), "__get__") or hasattr(type(v), "__set__"):
                return _ext._NO_DEFAULT
            return v
    return _ext._NO_DEFAULT


def _no_pickle(self, protocol):
    raise TypeError(
        f"cannot pickle a shared {type(self).__qualname__}: shared objects are handed over through "
        "colors_shm.repository() or colors_shm.channel(), not by pickling"
    )


def _proxy_dir(self):
    names = set(object.__dir__(self))
    names.update(_ext._field_names(self))
    return sorted(names)


def _own_setattr(cls: type) -> bool:
    """True if ``cls`` or a base other than ``object`` defines ``__setattr__`` or ``__delattr__``
    (a frozen dataclass, a validating class): its proxy then keeps them, and they reach the shared
    fields through ``object.__setattr__`` or ``super()``."""
    return any("__setattr__" in k.__dict__ or "__delattr__" in k.__dict__ for k in cls.__mro__ if k is not object)


def proxy_class(cls: type) -> type | None:
    """The proxy class of the private class ``cls`` (made on first use), or None if it has none."""
    p = _proxy_classes.get(cls)
    if p is not None:
        return p
    if _mappable_reason(cls) is not None:
        return None
    _, fields = spec(cls)
    slots = ["_colors_ref"]  # the handle (hidden again by _install_user_class)
    if not cls.__weakrefoffset__:
        slots.append("__weakref__")
    ns = {
        "__slots__": tuple(slots),
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        # Shared user objects compare and hash by identity (one proxy per object while alive).
        "__eq__": object.__eq__,
        "__ne__": object.__ne__,
        "__hash__": object.__hash__,
        "__reduce_ex__": _no_pickle,
        "__dir__": _proxy_dir,
        "__colors_private_class__": cls,
    }
    try:
        p = type(cls)(cls.__name__, (cls, SharedInstance), ns)
    except Exception as e:  # noqa: BLE001  instance layout conflict, a metaclass or __init_subclass__ refusing
        _unmappable[cls] = f"no proxy class can derive from it ({e})"
        return None
    try:
        _ext._install_user_class(
            p, [(n, k, c, _class_default(cls, n)) for n, k, c in fields], _own_setattr(cls)
        )
    except TypeError as e:
        _unmappable[cls] = str(e)
        return None
    _proxy_classes[cls] = p
    return p


def _import_by_name(name: str) -> type | None:
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod_name = ".".join(parts[:i])
        mod = sys.modules.get(mod_name)
        if mod is None:
            try:
                mod = importlib.import_module(mod_name)
            except Exception:
                continue
        obj = mod
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return obj if isinstance(obj, type) else None
    return None


def resolve(name: str) -> type | None:
    """The proxy class for shared objects of class ``name`` (None: use the generic proxy).
    Called by the extension once per shared class version."""
    cls = _registry.get(name)
    if cls is None:
        cls = _import_by_name(name)
        if cls is None or _mappable_reason(cls) is not None:
            return None
        _registry[name] = cls
    return proxy_class(cls)


_ext._register_classes(SharedInstance, resolve, spec)
