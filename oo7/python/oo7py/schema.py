"""The OO7 classes: plain ``__dict__`` classes whose annotations are the SPEC's shared schema.

A private object is an ordinary instance (attributes in its ``__dict__``, lists are Python lists).
The same classes are registered with colors_shm under the SPEC's names (``__colors_name__``), so a
shared object of class ``oo7.AtomicPart`` appears in Python as an instance of a proxy subclass of
``AtomicPart`` whose fields are the annotations below, in this order (the order is the contract:
colors_shm takes declared fields in annotation order). Types: ``int`` -> shared integer, ``str``
-> shared string, ``list`` -> shared list, a class -> a reference typed with that class's shared
name. Annotations are evaluated lazily (``from __future__ import annotations``) so classes can name
each other; colors_shm resolves them with ``typing.get_type_hints``.
"""

from __future__ import annotations

import colors_shm as cs


class Module:
    __colors_name__ = "oo7.Module"
    id: int
    type: str
    buildDate: int
    designRoot: ComplexAssembly


class ComplexAssembly:
    __colors_name__ = "oo7.ComplexAssembly"
    id: int
    type: str
    buildDate: int
    superAssembly: ComplexAssembly
    subAssemblies: list


class BaseAssembly:
    __colors_name__ = "oo7.BaseAssembly"
    id: int
    type: str
    buildDate: int
    superAssembly: ComplexAssembly
    components: list


class CompositePart:
    __colors_name__ = "oo7.CompositePart"
    id: int
    type: str
    buildDate: int
    document: str
    rootPart: AtomicPart
    parts: list
    usedIn: list


class AtomicPart:
    __colors_name__ = "oo7.AtomicPart"
    id: int
    x: int
    y: int
    buildDate: int
    type: str
    to: list
    from_: list
    partOf: CompositePart


class Connection:
    __colors_name__ = "oo7.Connection"
    id: int
    type: str
    length: int
    from_: AtomicPart
    to: AtomicPart


class Database:
    __colors_name__ = "oo7.Database"
    module: Module
    composites: list
    assemblies: list


CLASSES = (Module, ComplexAssembly, BaseAssembly, CompositePart, AtomicPart, Connection, Database)

# Registered at import, before any shared object is read: a process that only reads a database
# (built by another process or language) then sees instances of these classes, not generic proxies.
for _cls in CLASSES:
    cs.register(_cls)
