"""Asking a local port whether the expected server answers, with plain sockets.

An open port is not enough: it may belong to another program, or to a server that is
still loading its data. So a MongoDB-wire server must answer ``hello`` and Redis must
answer ``PING`` with ``PONG``. Plain sockets keep the supervisor free of drivers and
event loops, and every call has a short timeout so nothing here can hang.
"""

from __future__ import annotations

import errno
import itertools
import socket
import struct

import bson
from bson.errors import BSONError

from runtime.embedded.state import Kind

HOST = "127.0.0.1"
_OP_MSG = 2013
_request_ids = itertools.count(1)


def pick_free_port() -> int:
    """A port the kernel says is free now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def port_problem(port: int) -> str | None:
    """Why the server could not listen on ``port``, or ``None`` if it can.

    ``SO_REUSEADDR`` matches what the servers themselves do, so a port left in
    TIME_WAIT by our own previous run does not count as taken.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "is already in use by another program"
            return f"cannot be used ({exc.strerror or exc})"
    return None


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks += chunk
    return bytes(chunks)


def _mongo_hello(sock: socket.socket) -> bool:
    body = struct.pack("<IB", 0, 0) + bson.encode({"hello": 1, "$db": "admin"})
    header = struct.pack("<iiii", 16 + len(body), next(_request_ids), 0, _OP_MSG)
    sock.sendall(header + body)
    length, _, _, opcode = struct.unpack("<iiii", _recv_exact(sock, 16))
    payload = _recv_exact(sock, length - 16)
    if opcode != _OP_MSG or payload[4] != 0:
        return False
    reply = bson.decode(payload[5:])
    return bool(reply.get("ok"))


def _redis_ping(sock: socket.socket) -> bool:
    sock.sendall(b"PING\r\n")
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = sock.recv(256)
        if not chunk:
            return False
        reply += chunk
    return reply.startswith(b"+PONG")  # "-LOADING" while Valkey reads its AOF


def answers(kind: Kind, port: int, timeout: float = 1.0) -> bool:
    """Whether the ``kind`` server on ``port`` answers its protocol's health check."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as sock:
            return _mongo_hello(sock) if kind == "mongo" else _redis_ping(sock)
    except (OSError, ValueError, struct.error, BSONError):
        return False
