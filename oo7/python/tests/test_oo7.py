"""OO7 in Python: the SPEC's checks on the private and the shared database, every operation on
both with agreeing results, the indexes and Q1/Q2/Q3 through the shared and the private ones, the
loader's contract, T2b from two processes at once losing no update, and a database built by the
C++ loader read from Python."""

from __future__ import annotations

import re
import subprocess

import colors_shm as cs
import pytest

from oo7_harness import build_dir, child_env, oo7_server, run_load, spawn_load  # noqa: F401  (fixtures)
from oo7py import build, checks, indexes, models, ops, params, publish, queries

SMALL = params.params("small")
VISITS, FINGERPRINT, ORDER = checks.expected("small", 42)
CONTRACT_LINES = [
    "oo7 size=small seed=42 lang={lang}",
    f"visits {VISITS}",
    f"fingerprint {FINGERPRINT}",
    f"visit-order {ORDER}",
]


def private_db():
    return build.build(models.PRIVATE, SMALL, 42)


def shared_db():
    return build.build(models.SHARED, SMALL, 42)


def assert_spec_values(db):
    assert checks.visits_and_order(db) == (VISITS, ORDER)
    assert checks.fingerprint(db) == FINGERPRINT


def assert_swaps(db, generated, swaps):
    """Each atomic part's x/y are its generated values, exchanged iff ``swaps[part id]`` is odd."""
    wrong = []
    for cp, gcp in zip(db.composites, generated.composites, strict=True):
        for p, g in zip(cp.parts, gcp.parts, strict=True):
            assert p.id == g.id
            want = (g.y, g.x) if swaps.get(g.id, 0) % 2 else (g.x, g.y)
            if (p.x, p.y) != want:
                wrong.append((p.id, swaps.get(g.id, 0), (p.x, p.y), want))
    assert not wrong, f"{len(wrong)} parts with wrong x/y (id, swaps, found, expected): {wrong[:5]}"


def add_swaps(swaps, generated, op, runs=1):
    """Adds to ``swaps`` what ``runs`` runs of the update ``op`` do to each part: every composite
    part is visited once per base assembly using it, and every visit reaches all its parts."""
    root, other = ops.swaps_per_visit(op)
    for cp in generated.composites:
        visits = len(cp.usedIn) * runs
        for p in cp.parts:
            swaps[p.id] = swaps.get(p.id, 0) + visits * (root if p is cp.rootPart else other)


def contract_lines(stdout: str, lang: str) -> None:
    lines = stdout.splitlines()
    for want in CONTRACT_LINES:
        assert want.format(lang=lang) in lines, f"missing {want.format(lang=lang)!r} in:\n{stdout}"


def scanned_query(db, name: str, seed: int = 42) -> tuple[int, int]:
    """Q1/Q2/Q3 by scanning every part of ``db``, without an index: the model the indexed queries
    are checked against."""
    parts = [p for cp in db.composites for p in cp.parts]
    if name == "q1":
        rng = params.SplitMix64(seed + 1)
        wanted = [1 + rng.rand(len(parts)) for _ in range(10)]
        found = [p.x for i in wanted for p in parts if p.id == i]
        return len(found), sum(found)
    lo, hi = {"q2": (1000, 1010), "q3": (1000, 1100)}[name]
    xs = [p.x for p in parts if lo <= p.buildDate < hi]
    return len(xs), sum(xs)


def query_results(stdout: str) -> dict[str, tuple[int, int]]:
    return {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r"^op (q\d) result \((\d+), (-?\d+)\)", stdout, re.M)}


def assert_loader_queries(run_load, seed: int = 42) -> None:
    """load.py --op q1|q2|q3 on the published database gives what the scan of the generator's
    parts gives."""
    generated = build.build(models.PRIVATE, SMALL, seed)
    for name in queries.NAMES:
        r = run_load("--op", name, "--seed", str(seed))
        assert r.returncode == 0, r.stderr
        assert query_results(r.stdout) == {name: scanned_query(generated, name, seed)}, r.stdout


def test_private_database_has_the_spec_values():
    assert_spec_values(private_db())


def test_shared_database_has_the_spec_values():
    db = shared_db()
    assert cs.is_shared(db) and isinstance(db.module.designRoot, models.schema.ComplexAssembly)
    assert_spec_values(db)


I, S, L = "integer", "string", "list"


def obj(cls: str) -> tuple[str, str]:
    return "object", f"oo7.{cls}"


# The SPEC's shared schema with this loader's field types (the cross-language contract).
SCHEMA = {
    "oo7.Module": [("id", I), ("type", S), ("buildDate", I), ("designRoot", obj("ComplexAssembly"))],
    "oo7.ComplexAssembly": [("id", I), ("type", S), ("buildDate", I), ("superAssembly", obj("ComplexAssembly")),
                            ("subAssemblies", L)],
    "oo7.BaseAssembly": [("id", I), ("type", S), ("buildDate", I), ("superAssembly", obj("ComplexAssembly")),
                         ("components", L)],
    "oo7.CompositePart": [("id", I), ("type", S), ("buildDate", I), ("document", S), ("rootPart", obj("AtomicPart")),
                          ("parts", L), ("usedIn", L)],
    "oo7.AtomicPart": [("id", I), ("x", I), ("y", I), ("buildDate", I), ("type", S), ("to", L), ("from_", L),
                       ("partOf", obj("CompositePart"))],
    "oo7.Connection": [("id", I), ("type", S), ("length", I), ("from_", obj("AtomicPart")), ("to", obj("AtomicPart"))],
    "oo7.Database": [("module", obj("Module")), ("composites", L), ("assemblies", L)],
}


def test_shared_classes_have_the_spec_fields_in_order():
    db = shared_db()
    cp = db.composites[0]
    objs = {"oo7.Database": db, "oo7.Module": db.module, "oo7.ComplexAssembly": db.module.designRoot,
            "oo7.BaseAssembly": cp.usedIn[0], "oo7.CompositePart": cp, "oo7.AtomicPart": cp.rootPart,
            "oo7.Connection": cp.rootPart.to[0]}
    for name, o in objs.items():
        t = cs.shared_type(o)
        assert t.name == name
        got = [(f.name, f.type if f.type != "object" else (f.type, f.class_name)) for f in t.fields]
        assert got == SCHEMA[name], name


def test_every_operation_agrees_on_both_models():
    generated, priv, shared = private_db(), private_db(), shared_db()
    expected = {"t1": VISITS, "t6": 3 ** 6 * 3, "t2a": VISITS, "t2b": VISITS, "t2c": VISITS}
    swaps: dict[int, int] = {}
    for op in ("q7",) + ops.NAMES:
        rp = ops.run(op, priv, models.PRIVATE.atomic)
        rs = ops.run(op, shared, models.SHARED.atomic)
        assert rp == rs, op
        if op == "q7":
            assert rp == (10_000, sum(p.x for cp in priv.composites for p in cp.parts))
        else:
            assert rp == expected[op], op
        if op in ops.UPDATES:
            add_swaps(swaps, generated, op)
            assert_swaps(priv, generated, swaps)
            assert_swaps(shared, generated, swaps)
    # T2a and T2b leave some parts exchanged (odd usedIn counts): the checks above saw a change.
    assert any(n % 2 for n in swaps.values())


def test_queries_agree_on_the_shared_and_the_private_indexes():
    priv, shared = private_db(), shared_db()
    shared_ix = indexes.build_shared(shared)
    assert all(isinstance(ix, cs.SharedSortedDict) for ix in shared_ix)
    assert len(shared_ix[0]) == 10_000
    assert indexes.problems(shared, *shared_ix) == []
    private_ix = indexes.build_private(priv)
    assert indexes.problems(priv, *private_ix) == []
    n = queries.atomic_parts(SMALL)
    for name in queries.NAMES:
        want = scanned_query(priv, name)
        assert queries.run(name, *private_ix, 42, n) == want, name
        assert queries.run(name, *shared_ix, 42, n) == want, name
    assert scanned_query(priv, "q1")[0] == 10
    assert scanned_query(priv, "q2")[0] > 50 and scanned_query(priv, "q3")[0] > 500  # ~1% and ~10%


def test_loader_publishes_a_database_that_checks(run_load):
    r = run_load()
    assert r.returncode == 0, r.stderr
    contract_lines(r.stdout, "python")
    assert "indexes ok" in r.stdout.splitlines()
    r = run_load("--check")
    assert r.returncode == 0, r.stderr
    contract_lines(r.stdout, "python")
    assert "indexes ok" in r.stdout.splitlines()
    assert_spec_values(publish.fetch("small"))
    assert_loader_queries(run_load)
    r = run_load("--seed", "7")  # another database: the indexes are rebuilt with it
    assert r.returncode == 0 and "indexes ok" in r.stdout.splitlines(), r.stderr
    assert_loader_queries(run_load, 7)


def _broken_by_id(by_id, by_date):
    del by_id[17]
    return "parts_by_id has no entry for part 17"


def _wrong_id(by_id, by_date):
    by_id[17] = by_id[18]
    return "parts_by_id maps 17 to another object than part 17"


def _wrong_date(by_id, by_date):
    part = by_id[17]
    by_date[part.buildDate].remove(part)
    other = 1000 if part.buildDate != 1000 else 1001
    by_date[other].append(part)  # small has parts on every date
    return f"parts_by_date lists part 17 under {other}, its buildDate is {part.buildDate}"


def _twice(by_id, by_date):
    part = by_id[17]
    by_date[part.buildDate].append(part)
    return "parts_by_date lists a part twice"


def _not_a_list(by_id, by_date):
    by_date[1000] = "not a list"
    return "parts_by_date holds a str under 1000"


@pytest.mark.parametrize("breakage", [_broken_by_id, _wrong_id, _wrong_date, _twice, _not_a_list])
def test_index_check_fails_on_a_broken_index(run_load, breakage):
    assert run_load().returncode == 0
    message = breakage(*indexes.fetch("small"))
    r = run_load("--check")
    assert r.returncode == 1, r.stdout
    assert f"oo7: index: {message}" in r.stderr.splitlines()
    assert "indexes ok" not in r.stdout.splitlines()
    contract_lines(r.stdout, "python")  # the database itself still checks
    assert run_load().returncode == 0  # a new load replaces the indexes
    assert run_load("--check").returncode == 0


def test_check_reports_a_changed_database(run_load):
    assert run_load().returncode == 0
    r = run_load("--op", "t2a")  # exchanges the root parts of composites used an odd number of times
    assert r.returncode == 0, r.stderr
    r = run_load("--check")
    assert r.returncode == 1
    assert f"fingerprint mismatch: expected {FINGERPRINT}, found " in r.stderr
    assert run_load().returncode == 0  # a new load replaces it
    assert run_load("--check").returncode == 0


def test_loader_bad_input_is_a_clear_error(run_load):
    r = run_load("--op", "t1", "--size", "medium")  # nothing published in oo7.medium
    assert r.returncode == 2 and "no OO7 database in repository 'oo7.medium'" in r.stderr
    r = run_load("--repeat", "0", "--op", "t1")
    assert r.returncode == 2 and "--repeat must be at least 1" in r.stderr
    r = run_load("--size", "huge")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_two_processes_t2b_at_once_lose_no_update(run_load, spawn_load):
    """Two processes run T2b 4 and 5 times at once on the published database. Each part is then
    exchanged 9 times per use of its composite part: a lost update (two read-modify-writes of one
    part interleaved) changes that parity, which the final check sees."""
    assert run_load().returncode == 0
    runs = (4, 5)
    procs = [spawn_load("--op", "t2b", "--repeat", str(n), "--wait-stdin") for n in runs]
    try:
        for p in procs:
            line = p.stdout.readline()
            assert line.strip() == "ready", (line, p.stderr.read() if p.poll() is not None else "")
        for p in procs:  # release both at once
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    spans = []
    for p, n, (out, err) in zip(procs, runs, outs):
        assert p.returncode == 0, err
        done = re.findall(r"^op t2b result (\d+) start ([\d.]+) end ([\d.]+)", out, re.M)
        assert [int(v) for v, _, _ in done] == [VISITS] * n, out
        spans.append((float(done[0][1]), float(done[-1][2])))
    (s0, e0), (s1, e1) = spans
    assert s0 < e1 and s1 < e0, f"the two T2b runs did not overlap ({spans}): nothing was tested"
    generated = private_db()
    swaps: dict[int, int] = {}
    add_swaps(swaps, generated, "t2b", sum(runs))
    assert_swaps(publish.fetch("small"), generated, swaps)


CPP_LOAD = build_dir() / "oo7" / "oo7-load"


def test_reads_the_database_the_cpp_loader_built(oo7_server, run_load):
    # The top-level CMake build always builds it (oo7/CMakeLists.txt): its absence is a failure.
    assert CPP_LOAD.is_file(), f"the C++ loader is not built ({CPP_LOAD} is missing: cmake --build <build> --target oo7-load)"
    r = subprocess.run([str(CPP_LOAD), "--size", "small", "--seed", "42"], capture_output=True, text=True,
                       env=child_env(oo7_server.socket), timeout=120)
    assert r.returncode == 0, r.stderr
    contract_lines(r.stdout, "cpp")
    assert "indexes ok" in r.stdout.splitlines()
    r = run_load("--check")
    assert r.returncode == 0, r.stderr
    contract_lines(r.stdout, "python")
    assert "indexes ok" in r.stdout.splitlines()  # the C++ loader's indexes, checked from Python
    assert_loader_queries(run_load)
    db, generated, priv = publish.fetch("small"), private_db(), private_db()
    assert_spec_values(db)
    for op in ("t1", "t6", "q7", "t2b"):
        assert ops.run(op, db, models.SHARED.atomic) == ops.run(op, priv), op
    swaps: dict[int, int] = {}
    add_swaps(swaps, generated, "t2b")
    assert_swaps(db, generated, swaps)
