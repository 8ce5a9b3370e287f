"""The dependency watch of :mod:`runtime.watch`, driven probe round by probe round: which
dependency it reports down, and when its recovery steps run (once per outage)."""

from __future__ import annotations

import asyncio

from runtime.watch import DependencyWatch


class Switch:
    """A probe that answers, fails, or never answers, as the test says."""

    def __init__(self) -> None:
        self.state = "up"
        self.calls = 0
        self.probed = asyncio.Event()

    async def __call__(self) -> None:
        self.calls += 1
        self.probed.set()
        if self.state == "down":
            raise ConnectionError("refused")
        if self.state == "hung":
            await asyncio.Event().wait()


async def test_down_and_back_runs_recovery_once_per_outage() -> None:
    db, queue = Switch(), Switch()
    watch = DependencyWatch({"database": db, "queue": queue}, probe_timeout=0.05)
    recovered: list[str] = []

    async def note(name: str) -> None:
        recovered.append(name)

    watch.on_recovery(note)
    await watch.probe_all()
    assert watch.down() == frozenset() and recovered == []

    db.state = "down"
    queue.state = "hung"  # a probe that never returns counts as down too
    await watch.probe_all()
    await watch.probe_all()
    assert watch.down() == {"database", "queue"} and watch.is_down("database")
    assert watch.outages == 2 and recovered == []

    db.state = "up"
    await watch.probe_all()
    await watch.probe_all()
    assert watch.down() == {"queue"} and recovered == ["database"]

    queue.state = "up"
    await watch.probe_all()
    assert watch.down() == frozenset() and recovered == ["database", "queue"]


async def test_a_failing_recovery_step_does_not_stop_the_watch() -> None:
    db = Switch()
    watch = DependencyWatch({"database": db}, probe_timeout=0.05)
    ran: list[str] = []

    async def broken(name: str) -> None:
        raise RuntimeError("replay failed")

    async def after(name: str) -> None:
        ran.append(name)

    watch.on_recovery(broken)
    watch.on_recovery(after)
    db.state = "down"
    await watch.probe_all()
    db.state = "up"
    await watch.probe_all()
    assert ran == ["database"] and not watch.is_down("database")


async def test_check_soon_probes_without_waiting_for_the_interval() -> None:
    db = Switch()
    watch = DependencyWatch({"database": db}, interval=3600, probe_timeout=0.05)
    watch.start()
    try:
        await asyncio.wait_for(db.probed.wait(), 10)  # the first round runs at start
        db.probed.clear()
        db.state = "down"
        watch.check_soon()  # an hour early
        await asyncio.wait_for(db.probed.wait(), 10)
        await asyncio.sleep(0)  # the round records what its probe said
        assert db.calls == 2 and watch.is_down("database")
    finally:
        await watch.aclose()
