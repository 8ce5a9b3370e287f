"""Refuse every network connection that leaves the machine.

Tests talk to real servers, but only on loopback: Telegram, OpenAI, Google and mem0 are
local HTTP servers speaking their protocols. An accidental call to the internet fails
the test at once instead of hanging or passing by luck.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class OutboundNetworkBlocked(OSError):
    """Raised when a test tries to reach a host that is not this machine."""


def _is_local_host(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host).strip("[]")
    if host in LOCAL_NAMES or host == "":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any, family: int) -> None:
    if family == socket.AF_UNIX:
        return
    host = address[0] if isinstance(address, tuple) else address
    if not _is_local_host(host):
        raise OutboundNetworkBlocked(f"test tried to reach {address!r}: no network in tests")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(address, self.family)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(address, self.family)
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_local_host(host):
        raise OutboundNetworkBlocked(f"test tried to resolve {host!r}: no network in tests")
    return _real_getaddrinfo(host, *args, **kwargs)


def install() -> None:
    """Patch the socket module for the whole test session."""
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo
