"""Stopping a helper task: its own cancellation is absorbed, the caller's never is."""

from __future__ import annotations

import asyncio

import pytest

from memory.tasks import await_ignoring_inner_cancel, cancel_and_wait


async def _slow_to_stop(stopped: asyncio.Event) -> None:
    """A helper that takes a moment to stop, like a renewal with a write in flight."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await asyncio.sleep(0.2)
        stopped.set()
        raise


async def test_the_helpers_own_cancellation_is_absorbed() -> None:
    stopped = asyncio.Event()
    helper = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    await cancel_and_wait(helper)
    assert stopped.is_set() and helper.cancelled()


async def test_a_helper_already_done_is_harmless() -> None:
    helper = asyncio.create_task(asyncio.sleep(0))
    await helper
    await cancel_and_wait(helper)


async def test_an_error_raised_while_stopping_reaches_the_caller() -> None:
    async def breaks_on_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("could not stop cleanly") from None

    helper = asyncio.create_task(breaks_on_stop())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="could not stop cleanly"):
        await cancel_and_wait(helper)


async def test_the_callers_cancellation_during_the_wait_is_not_swallowed() -> None:
    steps: list[str] = []

    async def closer() -> None:
        helper = asyncio.create_task(_slow_to_stop(asyncio.Event()))
        await asyncio.sleep(0)
        await cancel_and_wait(helper)
        steps.append("went on after being cancelled")

    outer = asyncio.create_task(closer())
    await asyncio.sleep(0.05)  # the closer now waits for its helper to stop
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert steps == []


async def test_a_timeout_that_runs_out_during_the_wait_still_fires() -> None:
    steps: list[str] = []
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            helper = asyncio.create_task(_slow_to_stop(asyncio.Event()))
            await asyncio.sleep(0)
            await cancel_and_wait(helper)
            steps.append("went on past the timeout")
    assert steps == []


async def test_a_finally_run_by_the_callers_cancellation_goes_on_with_its_clean_up() -> None:
    steps: list[str] = []
    started = asyncio.Event()

    async def holder() -> None:
        helper = asyncio.create_task(_slow_to_stop(asyncio.Event()))
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            await cancel_and_wait(helper)
            steps.append("released")

    outer = asyncio.create_task(holder())
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert steps == ["released"]


async def test_a_task_stopped_by_someone_else_is_awaited_quietly() -> None:
    stopped = asyncio.Event()
    helper = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    helper.cancel()  # as arq's close() cancels its jobs, then re-raises from them
    await await_ignoring_inner_cancel(helper)
    assert stopped.is_set()
