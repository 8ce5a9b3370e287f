"""How fast the machine under a bench is, read at the start of the run.

The reply path's figures are mostly the embedded database's time per command, and that
server is a Python process: on the same code, the same bench has given a reply overhead
p95 of 25 ms one day and 98 ms another, on a shared 2-core machine whose speed moved.
Without a reading of the machine beside them, such figures cannot be compared across
runs. These three are cheap and move with what the benches measure:

* ``python_loop_ms``: one fixed pure-Python loop (the interpreter's speed on this core);
* ``database_ping_ms``: a ``ping`` to the database the bench uses (loopback, the
  server's wake-up and its command dispatch, no storage);
* ``database_insert_ms``: one small document inserted with the bench's write concern
  (the dispatch plus a durable commit).

Each is the median of several tries, so one descheduling does not set it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from pymongo.asynchronous.database import AsyncDatabase

#: The loop timed by :func:`python_loop_ms` (sum of the first N integers).
LOOP_SIZE: Final = 1_000_000
LOOP_ROUNDS: Final = 7
DATABASE_ROUNDS: Final = 40
#: A collection of its own, dropped after (never one the benches read).
SCRATCH: Final = "bench_machine_scratch"


def python_loop_ms(rounds: int = LOOP_ROUNDS) -> float:
    """Median time of ``sum(range(LOOP_SIZE))`` in ms."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        sum(range(LOOP_SIZE))
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


async def _median_ms(rounds: int, call: Callable[[int], Awaitable[None]]) -> float:
    await call(-1)  # the first pays for a connection or a cold page
    times = []
    for i in range(rounds):
        started = time.perf_counter()
        await call(i)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


async def machine_speed(
    db: AsyncDatabase[dict[str, Any]], rounds: int = DATABASE_ROUNDS
) -> dict[str, float]:
    """The three readings of this module, for a bench's JSON (``machine``)."""
    loop_ms = python_loop_ms()

    async def ping(_: int) -> None:
        await db.command("ping")

    async def insert(i: int) -> None:
        await db[SCRATCH].insert_one({"i": i, "text": "a small document, as a message is"})

    ping_ms = await _median_ms(rounds, ping)
    try:
        insert_ms = await _median_ms(rounds, insert)
    finally:
        await db.drop_collection(SCRATCH)
    return {"python_loop_ms": loop_ms, "database_ping_ms": ping_ms, "database_insert_ms": insert_ms}


def machine_line(speed: dict[str, float]) -> str:
    """The readings in a bench's summary line."""
    return (
        f"machine: Python loop {speed['python_loop_ms']} ms, database ping"
        f" {speed['database_ping_ms']} ms, insert {speed['database_insert_ms']} ms"
    )
