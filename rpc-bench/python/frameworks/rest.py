"""REST: HTTP/1.1 + JSON. http.client on one keep-alive connection, json from the standard
library; Java server: the JDK's com.sun.net.httpserver with Jackson. POST /bench/<kind>."""

from __future__ import annotations

import http.client
import json
import socket

from . import base

import workload  # noqa: E402

_PATH = {"bool": "/bench/bools", "int": "/bench/ints", "float": "/bench/floats",
         "string": "/bench/strings"}
_HEADERS = {"Content-Type": "application/json"}


def _node(i, f, b, s, left, right):
    return {"i": i, "f": f, "b": b, "s": s, "left": left, "right": right}


class Adapter(base.JavaServerAdapter):
    name = "rest"

    def connect(self) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        if getattr(self, "conn", None) is not None:
            self.conn.close()
            self.conn = None

    def build_input(self, kind: str, n: int):
        depth = workload.tree_depth(kind)
        if depth:
            return workload.build_trees(n, depth, _node)
        return [workload.scalar_value(kind, k) for k in range(n)]

    def call(self, kind: str, payload):
        self.conn.request("POST", _PATH.get(kind, "/bench/trees"),
                          json.dumps(payload).encode(), _HEADERS)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"rest: HTTP {resp.status}: {body[:200]!r}")
        return json.loads(body)

    def read_all(self, kind: str, reply) -> float:
        if workload.tree_depth(kind):
            return workload.read_dict_trees(reply)
        return workload.read_scalars(kind, reply)
