"""Make a real async method fail its next few calls, then behave as itself: the way
tests cut one write of a running bot (a reset connection, an outage shorter than a
ping) without replacing the part they cut."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


class FailNext:
    """``left`` calls through :meth:`wrap` raise ``error()``; every later one calls the
    real method. Set ``left`` again to cut more."""

    def __init__(self, error: Callable[[], Exception], left: int = 0) -> None:
        self.error = error
        self.left = left

    def wrap(self, real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``real`` (a function, to be set on its class in its place) behind this cut."""

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.left > 0:
                self.left -= 1
                raise self.error()
            return await real(*args, **kwargs)

        return call
