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

A median says how fast the machine is, not how steady. The benches' targets are p95s,
and on a shared virtual machine a fixed pure-Python loop of about 25 ms has read a p95
1.4-1.7 times its own median, with nothing else running (2026-11-30). So the benches
also time that same loop once after each timed item (:class:`LoopControl`): its p50 and
p95 over the run are the machine's own spread, the same noise the timed figures met. A
figure whose p95 ÷ p50 is no wider than the loop's has no tail of its own to remove.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.common import percentiles

#: The loop timed by :func:`python_loop_ms` (sum of the first N integers).
LOOP_SIZE: Final = 1_000_000
LOOP_ROUNDS: Final = 7
DATABASE_ROUNDS: Final = 40
#: A collection of its own, dropped after (never one the benches read).
SCRATCH: Final = "bench_machine_scratch"


def _loop_once_ms() -> float:
    started = time.perf_counter()
    sum(range(LOOP_SIZE))
    return (time.perf_counter() - started) * 1000


def python_loop_ms(rounds: int = LOOP_ROUNDS) -> float:
    """Median time of ``sum(range(LOOP_SIZE))`` in ms."""
    return round(statistics.median(_loop_once_ms() for _ in range(rounds)), 2)


@dataclass
class LoopControl:
    """The loop of :func:`python_loop_ms`, timed once after each timed item of a run.

    Between items, not beside them, so it takes no core from what is timed; it runs on
    the bench's own thread, where the timed code runs."""

    samples: list[float] = field(default_factory=list)

    def tick(self) -> None:
        self.samples.append(_loop_once_ms())

    def reading(self) -> dict[str, float]:
        """How many times the loop ran, its p50, p95 and p99 over the run, and its
        p95 ÷ p50 (empty if it never ran)."""
        if not self.samples:
            return {}
        spread = percentiles(self.samples)
        p50, p95 = spread["p50"], spread["p95"]
        return {
            "rounds": len(self.samples),
            **spread,
            "p95_over_p50": round(p95 / p50, 3) if p50 > 0 else 0.0,
        }


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


def with_control(speed: dict[str, Any], control: LoopControl) -> dict[str, Any]:
    """``speed`` with the loop's spread over the run (``python_loop_run_ms``), if timed."""
    reading = control.reading()
    return {**speed, "python_loop_run_ms": reading} if reading else dict(speed)


def machine_line(speed: dict[str, Any]) -> str:
    """The readings in a bench's summary line."""
    line = f"machine: Python loop {speed['python_loop_ms']} ms"
    run = speed.get("python_loop_run_ms")
    if run:
        line += (
            f" (over the run: p50 {run['p50']} ms, p95 {run['p95']} ms,"
            f" p95 ÷ p50 {run['p95_over_p50']})"
        )
    return (
        f"{line}, database ping {speed['database_ping_ms']} ms,"
        f" insert {speed['database_insert_ms']} ms"
    )
