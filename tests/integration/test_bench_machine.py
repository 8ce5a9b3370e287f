"""The machine readings a bench reports beside its figures: measured on the real
embedded database, and leaving nothing of theirs in it."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from bot.bench.machine import SCRATCH, LoopControl, machine_line, machine_speed, with_control


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


def test_the_loop_control_reports_its_spread_in_the_line() -> None:
    control = LoopControl()
    speed = {"python_loop_ms": 20.0, "database_ping_ms": 0.4, "database_insert_ms": 1.1}
    assert with_control(speed, control) == speed, "no spread before the loop ever ran"
    assert "over the run" not in machine_line(speed)
    for _ in range(5):
        control.tick()
    run = with_control(speed, control)["python_loop_run_ms"]
    assert run["rounds"] == 5
    assert 0 < run["p50"] <= run["p95"] <= run["p99"]
    line = machine_line(with_control(speed, control))
    assert f"(over the run: p50 {run['p50']} ms, p95 {run['p95']} ms" in line, line
    assert f"p95 ÷ p50 {run['p95_over_p50']})" in line, line
