"""Replaying the spool: at start-up, when an outage ends, and after a failure no outage
explained.

The watch replays the spool when the database answers again after being down. But a
message can fail while every ping succeeds: its call was cut by a server that died and
came back between two pings, it ran on a connection the restart left stale, or its
failure came in after the watch had already seen the database return. Nothing would
then replay it until the next outage or restart, and its person, told "I've kept your
message", would wait for good. :class:`SpoolRetry` closes that gap: whenever something
is spooled, it replays the spool after a short wait while the database answers, waiting
twice as long after each replay that leaves updates behind, and giving up on an update
after :data:`MOST_TRIES` (it stays in the spool for the next outage's end or start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Update

from bot.telegram.delivery import ANSWERED, Spool, answers_from_line, spooled_update_id
from runtime.background import BackgroundLoop

log = logging.getLogger(__name__)

#: Seconds before the first retry; each replay that leaves updates behind doubles it.
FIRST_WAIT = 1.0
#: Retries of one update before the retry leaves it to the next outage's end or start
#: (waits of 1, 2, 4 … 64 s: about two minutes of a database that answers pings but
#: not this update).
MOST_TRIES = 7


async def replay_spool(application: Any, spool: Spool, *, retry: bool = False) -> int:
    """Put the spooled updates back in the application's queue, oldest first; how many
    were. Those a replay puts back get no second apology if they fail again. ``retry``
    replays only the updates with tries left (:meth:`Spool.take_for_retry`).

    Oldest first by ``update_id``, which Telegram numbers in arrival order: the file's
    order is the order of failures, and a message that failed again after a later one of
    its chat had failed is written after it."""
    taken = await (spool.take_for_retry(MOST_TRIES) if retry else spool.take())
    taken.sort(key=_arrival)
    replayed = 0
    for data in taken:
        answers = answers_from_line(data.pop(ANSWERED, None) if isinstance(data, dict) else None)
        try:
            update = Update.de_json(data, application.bot)
        except (TypeError, KeyError, AttributeError, ValueError):
            log.warning("dropped a spooled update PTB cannot read")
            continue
        spool.replaying.add(update.update_id)
        if answers is not None:
            spool.answered[update.update_id] = answers
        await application.update_queue.put(update)
        replayed += 1
    if replayed:
        log.info("replaying %d spooled update(s)", replayed)
    return replayed


def _arrival(data: Any) -> int:
    update_id = spooled_update_id(data)
    return -1 if update_id is None else update_id


class SpoolRetry(BackgroundLoop):
    """Replays the spool after a failure while the database answers (see the module)."""

    task_name = "alfred-spool-retry"

    def __init__(
        self,
        spool: Spool,
        replay: Callable[[], Awaitable[int]],
        database_down: Callable[[], bool],
        *,
        first_wait: float | None = None,
    ) -> None:
        super().__init__()
        self._spool = spool
        self._replay = replay
        self._database_down = database_down
        self._first_wait = FIRST_WAIT if first_wait is None else first_wait
        self._wake = asyncio.Event()
        spool.on_add.append(self.nudge)

    def nudge(self, update_id: int | None = None) -> None:
        """Something was spooled: see to it soon."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._until_empty()
            except Exception:  # a full disk, say: the next spooling tries again
                log.exception("retrying the spool failed")

    async def _until_empty(self) -> None:
        """Replay, waiting longer each time, until the spool stays empty or holds only
        updates out of tries. While the database is down its recovery replays instead."""
        wait = self._first_wait
        while True:
            await asyncio.sleep(wait)
            if not await self._spool.pending():
                return
            if self._database_down():
                continue
            if not await self._replay():
                return
            wait *= 2
