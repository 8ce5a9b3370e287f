"""The background loop of the dependency watch and the spool's retry: one task however
often it is started, and nothing left running after close."""

from __future__ import annotations

import asyncio

from runtime.background import BackgroundLoop


class Counting(BackgroundLoop):
    task_name = "test-loop"

    def __init__(self) -> None:
        super().__init__()
        self.runs = 0
        self.cancelled = asyncio.Event()

    async def _loop(self) -> None:
        self.runs += 1
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def _named(name: str) -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == name]


async def test_a_second_start_runs_no_second_loop_and_close_stops_it() -> None:
    loop = Counting()
    loop.start()
    loop.start()
    await asyncio.sleep(0)
    assert loop.runs == 1
    assert len(_named("test-loop")) == 1
    await loop.aclose()
    assert loop.cancelled.is_set()
    assert _named("test-loop") == []
    loop.start()  # closed, it may be started again
    await asyncio.sleep(0)
    assert loop.runs == 2
    await loop.aclose()
    await loop.aclose()  # twice is harmless


async def test_closing_a_loop_never_started_is_harmless() -> None:
    await Counting().aclose()
