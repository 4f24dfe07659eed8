"""Protocol Buffers over a plain TCP socket: request = method tag (1 byte), length (4 bytes, big
endian), serialized message; reply = length, serialized message (java ProtoTcpServer)."""

from __future__ import annotations

import socket
import struct

from . import _pb, base

_TAG = {"bool": 1, "int": 2, "float": 3, "string": 4}  # trees: 5
_HEADER = struct.Struct(">BI")
_LENGTH = struct.Struct(">I")


class Adapter(base.JavaServerAdapter):
    name = "protobuf_tcp"

    def connect(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb", buffering=1 << 16)

    def close(self) -> None:
        if getattr(self, "sock", None) is not None:
            self.rfile.close()
            self.sock.close()
            self.sock = None

    def build_input(self, kind: str, n: int):
        return _pb.build_input(kind, n)

    def call(self, kind: str, payload):
        body = payload.SerializeToString()
        self.sock.sendall(_HEADER.pack(_TAG.get(kind, 5), len(body)) + body)
        (length,) = _LENGTH.unpack(self._read(4))
        return _pb.list_type(kind).FromString(self._read(length)).v

    def _read(self, n: int) -> bytes:
        data = self.rfile.read(n)
        if len(data) != n:
            raise ConnectionError("protobuf_tcp: server closed the connection")
        return data

    def read_all(self, kind: str, reply) -> float:
        return _pb.read_all(kind, reply)
