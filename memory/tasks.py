"""Stopping a helper task (a lease's renewal, a heartbeat, a job's runner, a worker)
from the task that started it.

Every layer keeps such tasks, so the one way to stop them lives here, at the bottom. The
usual ``task.cancel()`` then ``suppress(CancelledError)`` around ``await task`` has a
flaw: the suppress also swallows a cancellation aimed at the *caller* while it waits (a
shutdown, an ``asyncio.timeout`` running out, arq's job timeout), and the caller then
runs on as if nobody had stopped it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def await_ignoring_inner_cancel(awaitable: Awaitable[Any]) -> None:
    """Await ``awaitable``, absorbing a cancellation that comes from inside it (the
    tasks being stopped end that way, and arq's ``close()`` re-raises its jobs').

    A cancellation of the calling task that arrives during the wait is raised, as any
    other await would raise it. One already under way when this is called (a ``finally``
    that runs because the caller is being cancelled) does not count, so that ``finally``
    goes on with its clean-up. Any other error is raised."""
    current = asyncio.current_task()
    before = current.cancelling() if current is not None else 0
    try:
        await awaitable
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > before:
            raise


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has stopped (see
    :func:`await_ignoring_inner_cancel` for which cancellations are raised)."""
    task.cancel()
    await await_ignoring_inner_cancel(task)
