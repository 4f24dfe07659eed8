"""Protocol Buffers messages of the workload (shared by the grpc and protobuf_tcp adapters)."""

from __future__ import annotations

from . import base  # noqa: F401  (puts the generated code on sys.path)

import bench_pb2 as pb  # noqa: E402

import workload  # noqa: E402

LIST_TYPES = {"bool": pb.BoolList, "int": pb.IntList, "float": pb.FloatList,
              "string": pb.StringList}


def list_type(kind: str):
    return pb.TreeList if workload.tree_depth(kind) else LIST_TYPES[kind]


def _node(i, f, b, s, left, right):
    node = pb.Node(i=i, f=f, b=b, s=s)
    if left is not None:
        node.left.CopyFrom(left)
    if right is not None:
        node.right.CopyFrom(right)
    return node


def build_input(kind: str, n: int):
    depth = workload.tree_depth(kind)
    if depth:
        return pb.TreeList(v=workload.build_trees(n, depth, _node))
    return LIST_TYPES[kind](v=[workload.scalar_value(kind, k) for k in range(n)])


def read_trees(seq) -> float:
    """workload's tree checksum over protobuf nodes (absent children: HasField is False)."""

    def walk(p):
        acc = p.i + p.f + p.b + len(p.s)
        if p.HasField("left"):
            acc += walk(p.left)
        if p.HasField("right"):
            acc += walk(p.right)
        return acc

    acc = 0.0
    for p in seq:
        acc += walk(p)
    return acc


def read_all(kind: str, reply) -> float:
    return read_trees(reply) if workload.tree_depth(kind) else workload.read_scalars(kind, reply)
