"""The OO7 indexes: atomic parts by ``id`` and by ``buildDate``.

Shared (published beside the database): ``oo7.<size>.parts_by_id``, a ``SharedSortedDict`` from
id to the part, and ``oo7.<size>.parts_by_date``, a ``SharedSortedDict`` from buildDate to a shared
list of the parts with that date in id order. Private (the queries' baselines): a ``dict`` by id
and a ``sortedcontainers.SortedDict`` by date of Python lists.
"""

from __future__ import annotations

import colors_shm as cs
from sortedcontainers import SortedDict

from .publish import repository_name
from .schema import AtomicPart


def by_id_repository(size: str) -> str:
    return repository_name(size) + ".parts_by_id"


def by_date_repository(size: str) -> str:
    return repository_name(size) + ".parts_by_date"


def _parts(db):
    return [part for cp in db.composites for part in cp.parts]


def _grouped_by_date(db):
    """{buildDate: [parts in id order]} over ``composites[*].parts[*]``."""
    groups = {}
    for part in sorted(_parts(db), key=lambda p: p.id):
        groups.setdefault(part.buildDate, []).append(part)
    return groups


def build_shared(db):
    """(by_id, by_date) shared sorted maps over the shared database ``db`` (not published)."""
    by_id = cs.allocate(cs.SharedSortedDict)
    by_date = cs.allocate(cs.SharedSortedDict)
    for date, parts in sorted(_grouped_by_date(db).items()):
        same = cs.allocate(list)
        same.extend(parts)
        by_date[date] = same
        for part in parts:
            by_id[part.id] = part
    return by_id, by_date


def build_private(db):
    """(dict by id, SortedDict by date of lists) over a private database."""
    groups = _grouped_by_date(db)
    by_id = {part.id: part for parts in groups.values() for part in parts}
    return by_id, SortedDict(groups)


def publish(by_id, by_date, size: str) -> None:
    cs.repository(by_id_repository(size)).set(by_id)
    cs.repository(by_date_repository(size)).set(by_date)


def fetch(size: str):
    """The published (by_id, by_date), or None when neither repository holds one (a loader that
    builds no index); LookupError when only one does, TypeError when one holds something else."""
    by_id = cs.repository(by_id_repository(size)).get()
    by_date = cs.repository(by_date_repository(size)).get()
    if by_id is None and by_date is None:
        return None
    for name, ix in ((by_id_repository(size), by_id), (by_date_repository(size), by_date)):
        if ix is None:
            raise LookupError(f"repository {name!r} holds no index while its companion does")
        if not isinstance(ix, cs.SharedSortedDict):
            raise TypeError(f"repository {name!r} holds {type(ix).__name__}, not a shared sorted map")
    return by_id, by_date


def problems(db, by_id, by_date, limit: int = 10) -> list[str]:
    """What is wrong with the indexes against ``db``: every part indexed exactly once, under its id
    and under its buildDate (in id order within a date), and nothing else. Empty: all is well."""
    out = []

    def problem(msg):
        if len(out) < limit:
            out.append(msg)

    parts = _parts(db)
    if len(by_id) != len(parts):
        problem(f"parts_by_id holds {len(by_id)} entries for {len(parts)} atomic parts")
    for part in parts:
        found = by_id.get(part.id)
        if found is None:
            problem(f"parts_by_id has no entry for part {part.id}")
        elif found is not part:  # one proxy per shared object while held: identity
            problem(f"parts_by_id maps {part.id} to another object than part {part.id}")

    date_of = {}  # id(proxy) -> date; the proxies stay alive in `keep`
    keep = []
    listed = 0
    for date, same in by_date.items():
        last = 0
        if not isinstance(same, (list, cs.SharedList)):
            problem(f"parts_by_date holds a {type(same).__name__} under {date!r}")
            continue
        for part in same:
            listed += 1
            if not isinstance(part, AtomicPart):
                problem(f"parts_by_date lists a {type(part).__name__} under {date!r}")
                continue
            keep.append(part)
            if id(part) in date_of:
                problem("parts_by_date lists a part twice")
            date_of[id(part)] = date
            if part.id <= last:
                problem(f"parts_by_date's list under {date} is not in id order")
            last = part.id
    if listed != len(parts):
        problem(f"parts_by_date lists {listed} parts for {len(parts)} atomic parts")
    for part in parts:
        date = date_of.get(id(part))
        if date is None:
            problem(f"parts_by_date does not list part {part.id}")
        elif date != part.buildDate:
            problem(f"parts_by_date lists part {part.id} under {date}, its buildDate is {part.buildDate}")
    return out
