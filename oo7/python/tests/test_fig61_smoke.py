"""Smoke test of Figure 6-1 (oo7/fig61): the Java server builds OO7 small into its shared objects
and serves it; below one level-3 assembly (540 visits) every remote way of running T1 (colors rpc
per access, aggregated, batched by hand; gRPC per access and batched by hand) visits the same
parts in the same order as the direct traversal of the shared objects, with the request and call
counts the direct traversal's accesses predict; the whole T1, aggregated, matches the SPEC; and
the Java plan executor's failures reach the client where values are used.

Needs the Java server built by oo7/fig61/setup.sh (run here; it reuses rpc-bench's setup, which
`make test` runs for rpc-bench --smoke anyway)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from oo7_harness import REPO, build_dir, oo7_server  # noqa: F401  (fixture)

FIG61 = REPO / "oo7" / "fig61"
sys.path.insert(0, str(FIG61 / "python"))

REPOSITORY = "fig61.test.small"
ENDPOINT = "oo7.fig61.test"


@pytest.fixture(scope="module")
def java(oo7_server):
    env = dict(os.environ, BUILD_DIR=str(build_dir()))
    setup = subprocess.run(["bash", str(FIG61 / "setup.sh")], capture_output=True, text=True, env=env, timeout=600)
    assert setup.returncode == 0, f"oo7/fig61/setup.sh failed:\n{setup.stdout}\n{setup.stderr}"
    sys.path.insert(0, str(FIG61 / "build" / "gen-py"))
    from fig61 import servers

    os.environ.setdefault("BUILD_DIR", str(build_dir()))  # where servers.py finds the JNI library
    srv = servers.JavaServer(oo7_server.socket, ENDPOINT, repository=REPOSITORY)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def ends(java):
    import colors_shm as cs
    import grpc
    from colors_shm import rpc

    import oo7_pb2
    import oo7_pb2_grpc
    from oo7py import schema  # noqa: F401  (registers the shared class names)

    db = cs.repository(REPOSITORY).get()
    assert isinstance(db, schema.Database)
    client = rpc.connect(ENDPOINT, timeout=30)
    channel = grpc.insecure_channel(f"127.0.0.1:{java.port}")
    grpc.channel_ready_future(channel).result(timeout=30)
    yield db, client, oo7_pb2_grpc.Oo7Stub(channel), oo7_pb2
    channel.close()


def _fold():
    from oo7py.checks import Fold

    f = Fold()
    return f, f.int


def _level3(db):
    from oo7py.schema import ComplexAssembly

    a = db.module.designRoot
    while isinstance(a.subAssemblies[0].subAssemblies[0], ComplexAssembly):
        a = a.subAssemblies[0]
    return a


def test_the_server_built_the_spec_database(java):
    assert java.checks == {"visits": "43740", "fingerprint": "e0381c302e05b74a", "visit-order": "2c0f1a48f8151d7d"}


def test_every_remote_row_visits_like_the_direct_one_below_an_assembly(ends):
    from fig61 import aggregate, handles, traversal
    from fig61.access import AggregatedAccess, ColorsAccess, DirectAccess, GrpcAccess
    from fig61.main import _CountingDirect
    from oo7py.schema import ComplexAssembly

    db, client, stub, pb = ends
    a = _level3(db)
    h = handles.make(handles.COMPLEX, a.id)
    direct = _CountingDirect(ComplexAssembly)
    f, fi = _fold()
    n = traversal.assembly_walk(direct, a, fi)
    want = (n, f.hex())
    assert n == 540
    accesses = sum(direct.counts.values())
    composites = direct.counts["rootPart"]
    tree = accesses - composites - direct.counts["outgoing"] - direct.counts["target"]

    colors, grpc_acc = ColorsAccess(client), GrpcAccess(stub, pb)
    agg = aggregate.Aggregator(aggregate.ColorsPlanTransport(client))
    rows = {
        "colors": (lambda fi: traversal.assembly_walk(colors, h, fi), (accesses, accesses)),
        "aggregated": (lambda fi: traversal.assembly_walk(AggregatedAccess(agg), agg.ref(h), fi), None),
        "colors batched": (lambda fi: _batched_below(colors, h, fi), (tree + composites,) * 2),
        "grpc": (lambda fi: traversal.assembly_walk(grpc_acc, h, fi), (accesses, accesses)),
        "grpc batched": (lambda fi: _batched_below(grpc_acc, h, fi), (tree + composites,) * 2),
    }
    for name, (run, counts) in rows.items():
        client.resetStats()
        f, fi = _fold()
        got = (run(fi), f.hex())
        requests, calls, _ = client.stats()
        assert got == want, f"{name}: {got} != direct {want}"
        if counts is None:  # aggregated: fewer requests carrying every access
            counts = (agg.round_trips, accesses)
            assert agg.calls == accesses and agg.round_trips < accesses
        assert (requests, calls) == counts, name


def _batched_below(acc, h, visit):
    from fig61 import traversal

    def walk(a):
        if acc.is_complex(a):
            return sum(walk(s) for s in acc.sub_assemblies(a))
        return sum(traversal.search_graph(acc.composite(c), visit) for c in acc.components(a))

    return walk(h)


def test_whole_t1_aggregated_matches_the_spec(ends):
    from fig61 import aggregate, traversal
    from fig61.access import AggregatedAccess

    db, client, _, _ = ends
    agg = aggregate.Aggregator(aggregate.ColorsPlanTransport(client))
    f, fi = _fold()
    n = traversal.t1(AggregatedAccess(agg), agg.ref(client.module()), fi)
    assert (n, f.hex()) == (43740, "2c0f1a48f8151d7d")
    assert agg.calls == 178241 and agg.round_trips < agg.calls


def test_the_java_executor_fails_calls_where_their_values_are_used(ends):
    from colors_shm.rpc import RemoteError

    from fig61 import aggregate, handles

    _, client, _, _ = ends
    agg = aggregate.Aggregator(aggregate.ColorsPlanTransport(client))
    part = agg.ref(handles.make(handles.PART, 1))
    wrong = part.target()                      # a part is not a connection
    chained = wrong.outgoing()                 # depends on the failed call
    conns = part.outgoing()                    # fine
    assert len(conns) == 3                     # sends all three; nothing raised
    assert agg.round_trips == 1
    with pytest.raises(aggregate.DeferredCallError) as e:
        wrong.value()
    assert e.value.remote_type == "java.lang.IllegalArgumentException"
    assert "does not name a Connection" in e.value.remote_message
    with pytest.raises(aggregate.DependencyError):
        chained.value()
    assert [handles.tag(int(k.target())) for k in conns] == [handles.PART] * 3
    # A malformed plan is refused as a whole, before any call runs.
    with pytest.raises(RemoteError, match="no method"):
        client.runPlan([99, 1, 0, 1])
    with pytest.raises(RemoteError, match="not an earlier one"):
        client.runPlan([0, 1, 1, 0])
    # Bad handles in single calls are remote errors too; the server serves on.
    with pytest.raises(RemoteError, match="does not name a Connection"):
        client.target(handles.make(handles.CONNECTION, 10**9))
    with pytest.raises(RemoteError, match="does not name a module"):
        client.designRoot(-1)
    assert handles.tag(client.target(handles.make(handles.CONNECTION, 1))) == handles.PART
