"""The spool's retry: an update that failed while the database answered is replayed
without waiting for an outage or a restart, oldest first, a bounded number of times.

The spool is the real one (a file in ``tmp_path``); the application is its queue, and a
handler task stands in for PTB's: it takes updates from the queue and, like the message
handler, spools the ones that fail.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from telegram import Update

from bot.telegram.delivery import ANSWERED, Spool, answers_to_line
from bot.telegram.spool_retry import MOST_TRIES, SpoolRetry, replay_spool
from services.messages import SentReply
from tests.helpers.polling import eventually as poll

WAIT = 10.0  # a deadline, never a measured duration
FIRST_WAIT = 0.005


def _update(update_id: int, chat: int = 1) -> Update:
    data = {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 0,
            "chat": {"id": chat, "type": "private"},
            "text": f"message {update_id}",
        },
    }
    update = Update.de_json(data, None)
    assert update is not None
    return update


class World:
    """A spool, a queue, a handler that fails each update ``fails[id]`` times, and the
    retry under test."""

    def __init__(self, path: Path) -> None:
        self.spool = Spool(path)
        self.app = SimpleNamespace(bot=None, update_queue=asyncio.Queue())
        self.fails: dict[int, int] = {}
        self.handled: list[int] = []  # ids in the order they were handled well
        self.tries: dict[int, int] = {}
        self.replayed: list[bool] = []
        self.down = False
        self.retry = SpoolRetry(
            self.spool,
            lambda: replay_spool(self.app, self.spool, retry=True),
            lambda: self.down,
            first_wait=FIRST_WAIT,
        )

    async def handle_forever(self) -> None:
        while True:
            update: Update = await self.app.update_queue.get()
            self.replayed.append(self.spool.replayed(update.update_id))
            self.tries[update.update_id] = self.tries.get(update.update_id, 0) + 1
            if self.fails.get(update.update_id, 0) > 0:
                self.fails[update.update_id] -= 1
                await self.spool.add(update)
            else:
                self.handled.append(update.update_id)

    def spooled_ids(self) -> list[int]:
        if not self.spool.path.exists():
            return []
        return [json.loads(line)["update_id"] for line in self.spool.path.open()]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path / "spool" / "updates.jsonl")
    handler = asyncio.create_task(w.handle_forever())
    w.retry.start()
    try:
        yield w
    finally:
        await w.retry.aclose()
        handler.cancel()


eventually = partial(poll, within=WAIT, every=0.005)


async def settled(world: World) -> None:
    """Let the retry run out of work: far longer than its waits, with nothing changing."""
    await asyncio.sleep(FIRST_WAIT * 2 ** (MOST_TRIES + 1))


async def test_an_update_that_failed_while_the_database_answered_is_replayed(
    world: World,
) -> None:
    world.fails[7] = 2
    await world.spool.add(_update(7))  # failed first time, as the handler spools it
    await eventually(lambda: world.handled == [7], "the update handled")
    assert world.tries[7] == 3
    assert world.replayed == [True, True, True]  # each replay knew it was one
    assert not await world.spool.pending()
    await settled(world)
    assert world.handled == [7]  # once


async def test_the_retry_gives_up_after_its_tries_and_leaves_the_update_spooled(
    world: World,
) -> None:
    world.fails[9] = 1_000
    await world.spool.add(_update(9))
    await eventually(lambda: world.tries.get(9) == MOST_TRIES, "every retry")
    await settled(world)
    assert world.tries[9] == MOST_TRIES  # no more
    assert world.spooled_ids() == [9]  # kept, not dropped
    # an outage's end (or a start) replays it regardless
    assert await replay_spool(world.app, world.spool) == 1
    await eventually(lambda: world.tries[9] == MOST_TRIES + 1, "the recovery's replay")
    # a new failure is retried; the update out of tries stays where it is
    world.fails[10] = 1
    await world.spool.add(_update(10))
    await eventually(lambda: world.handled == [10], "the new update")
    await settled(world)
    assert world.tries[9] == MOST_TRIES + 1
    assert world.spooled_ids() == [9]


async def test_while_the_database_is_down_the_retry_leaves_the_spool_alone(
    world: World,
) -> None:
    world.down = True
    await world.spool.add(_update(11))
    await settled(world)
    assert world.tries == {} and world.spooled_ids() == [11]
    world.down = False  # back: the watch's recovery would replay; the retry does too
    await eventually(lambda: world.handled == [11], "the update handled")


async def test_a_replay_puts_updates_back_oldest_first(world: World) -> None:
    """The file holds failures in the order they failed: 6 of a chat failed again after
    7 of the same chat had failed; Telegram's ids give the order they arrived in."""
    world.down = True  # the retry keeps out of the way
    for update_id in (7, 5, 6):
        await world.spool.add(_update(update_id))
    with world.spool.path.open("a", encoding="utf-8") as f:
        f.write('{"update_id": "x", "message": {"mess\n')  # cut short by a crash
    assert await replay_spool(world.app, world.spool) == 3
    await eventually(lambda: len(world.handled) == 3, "every update handled")
    assert world.handled == [5, 6, 7]


async def test_a_retry_that_cannot_read_the_spool_does_not_stop_the_next(
    world: World, tmp_path: Path
) -> None:
    blocked = tmp_path / "spool" / "updates.jsonl"
    world.fails[3] = 1
    await world.spool.add(_update(3))
    blocked.unlink()
    blocked.mkdir()  # the path is a folder now: reading it fails
    await settled(world)
    blocked.rmdir()
    await world.spool.add(_update(4))  # spooled again: the retry sees to both
    await eventually(lambda: world.handled == [4], "the next update")


async def test_take_for_retry_counts_only_what_is_spooled(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "updates.jsonl")
    await spool.add(_update(1))
    await spool.add(_update(2))
    assert [d["update_id"] for d in await spool.take_for_retry(2)] == [1, 2]
    await spool.add(_update(2))  # 1 was handled, 2 failed again
    assert [d["update_id"] for d in await spool.take_for_retry(2)] == [2]
    assert spool.retries == {2: 2}
    await spool.add(_update(2))
    assert await spool.take_for_retry(2) == []  # out of tries: kept in the file
    assert [json.loads(line)["update_id"] for line in spool.path.open()] == [2]
    assert spool.retries == {2: 2}


async def test_a_retry_that_cannot_write_what_it_keeps_loses_nothing(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "updates.jsonl")
    for update_id in (1, 2):
        await spool.add(_update(update_id))
    spool.retries = {1: 2}  # 1 is out of tries: it stays, 2 is due
    (tmp_path / "updates.jsonl.rest").mkdir()  # where the kept ones are written first
    with pytest.raises(OSError):
        await spool.take_for_retry(2)
    assert [json.loads(line)["update_id"] for line in spool.path.open()] == [1, 2]
    (tmp_path / "updates.jsonl.rest").rmdir()
    assert [d["update_id"] for d in await spool.take_for_retry(2)] == [2]
    assert [json.loads(line)["update_id"] for line in spool.path.open()] == [1]


async def test_an_update_spooled_while_a_retry_rewrites_the_file_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is read and written in worker threads: an append that landed between a
    retry's read and its replacing the file would be replaced away. The spool takes one
    file operation at a time, so the append waits for the rewrite."""
    spool = Spool(tmp_path / "updates.jsonl")
    for update_id in (1, 2):
        await spool.add(_update(update_id))
    spool.retries = {1: 2}  # 1 stays in the file, 2 is due: the file is rewritten
    read = spool._read

    def slow_read() -> list[Any]:
        found = read()
        time.sleep(0.3)  # the append's thread has all the time it needs meanwhile
        return found

    monkeypatch.setattr(spool, "_read", slow_read)
    due, _ = await asyncio.gather(spool.take_for_retry(2), spool.add(_update(3)))
    assert [d["update_id"] for d in due] == [2]
    assert [json.loads(line)["update_id"] for line in spool.path.open()] == [1, 3]


async def test_an_answered_update_is_replayed_as_answered_once(tmp_path: Path) -> None:
    """An update spooled after its answer went out carries the replies it was sent on its
    line; its replay takes them off the update PTB reads and gives them to the handler,
    once. A line marked before the replies were kept (``true``) replays as answered with
    none, a reply that cannot be read is left out, and others are replayed unmarked."""
    spool = Spool(tmp_path / "updates.jsonl")
    app = SimpleNamespace(bot=None, update_queue=asyncio.Queue())
    sent = SentReply("5:a:r70:0", "Got it", datetime(2026, 6, 1, 9, 30, tzinfo=UTC))
    await spool.add(_update(7), answers=[sent])
    await spool.add(_update(8))
    older = {**_update(9).to_dict(), ANSWERED: True}
    torn = {**_update(10).to_dict(), ANSWERED: [{"id": "5:a:r71:0"}, answers_to_line([sent])[0]]}
    with spool.path.open("a") as f:
        f.write(json.dumps(older) + "\n" + json.dumps(torn) + "\n")
    lines = [json.loads(line) for line in spool.path.read_text().splitlines()]
    assert [line.get(ANSWERED) for line in lines[:2]] == [
        [{"id": "5:a:r70:0", "text": "Got it", "at": "2026-06-01T09:30:00+00:00"}],
        None,
    ]
    assert await replay_spool(app, spool) == 4
    replayed = [app.update_queue.get_nowait() for _ in range(4)]
    assert [u.update_id for u in replayed] == [7, 8, 9, 10]
    assert all(ANSWERED not in u.api_kwargs for u in replayed)
    assert spool.replayed(7) and spool.answered_before(7) == (sent,)
    assert spool.answered_before(7) is None  # asked once
    assert spool.replayed(8) and spool.answered_before(8) is None
    assert spool.answered_before(9) == ()
    assert spool.answered_before(10) == (sent,)
