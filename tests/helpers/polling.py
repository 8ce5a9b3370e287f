"""Waiting in a test for something the code under test does in the background.

One helper for every test that polls: a check (plain or awaitable) is tried until it
holds, and the test fails with what it waited for once ``within`` seconds have passed.
``within`` is a deadline for what must happen, never a measured duration.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

import pytest


async def eventually(
    check: Callable[[], bool | Awaitable[bool]],
    what: str,
    *,
    within: float,
    every: float = 0.05,
) -> None:
    """Return once ``check()`` holds; fail the test naming ``what`` after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within}s: {what}")
        await asyncio.sleep(every)
