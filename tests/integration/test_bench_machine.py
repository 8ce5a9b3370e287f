"""The machine readings a bench reports beside its figures: measured on the real
embedded database, and leaving nothing of theirs in it."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.machine import SCRATCH, machine_line, machine_speed


async def test_machine_speed_reads_the_database_and_leaves_no_scratch(
    db: AsyncDatabase[dict[str, Any]],
) -> None:
    await db["kept"].insert_one({"_id": "k"})
    speed = await machine_speed(db, rounds=5)
    assert set(speed) == {"python_loop_ms", "database_ping_ms", "database_insert_ms"}
    assert all(value > 0 for value in speed.values()), speed
    assert SCRATCH not in await db.list_collection_names()
    assert await db["kept"].count_documents({}) == 1  # only its own collection dropped
    line = machine_line(speed)
    assert f"ping {speed['database_ping_ms']} ms" in line, line
