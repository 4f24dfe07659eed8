"""Where a loader publishes the database: the repository ``oo7.<size>``."""

from __future__ import annotations

import colors_shm as cs

from . import schema  # noqa: F401  (registers the shared class names before any shared read)


def repository_name(size: str) -> str:
    return f"oo7.{size}"


def publish(db, size: str) -> None:
    """Publishes ``db`` (a shared oo7.Database) in ``oo7.<size>``, replacing an older one."""
    cs.repository(repository_name(size)).set(db)


def fetch(size: str):
    """The published oo7.Database of ``size``; LookupError if none is published."""
    db = cs.repository(repository_name(size)).get()
    if db is None:
        raise LookupError(f"no OO7 database in repository {repository_name(size)!r}: run a loader first")
    if not isinstance(db, schema.Database):
        raise TypeError(f"repository {repository_name(size)!r} holds {type(db).__name__}, not oo7.Database")
    return db
