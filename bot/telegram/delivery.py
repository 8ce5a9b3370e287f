"""Each update handled once, and none lost: redelivered updates are dropped by
``update_id``; an update that fails (or arrives while a dependency is known to be down)
is written to a spool file and replayed once the dependency is back, after a short wait
if no outage was seen (:mod:`bot.telegram.spool_retry`), and at the next start.

The spool's file is read and written in a worker thread (a slow or full disk must not
hold up every chat's updates), one operation at a time: a retry's rewrite of the file
racing an append could otherwise drop the appended update."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from telegram import Update
from telegram.ext import ApplicationHandlerStop, ContextTypes

from integrations.mongo.errors import TRANSIENT_ERRORS as DATABASE_ERRORS
from services.messages import SentReply

log = logging.getLogger(__name__)

SEEN_UPDATES = 10_000
#: The key a spooled update's line carries when its person had the answer already: the
#: replies they were sent, for the journal (``true`` in lines written before they were).
ANSWERED = "alfred_answered"


class UpdateDeduplicator:
    """Remembers recent ``update_id``s so a redelivered update is handled once."""

    def __init__(self, size: int = SEEN_UPDATES) -> None:
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._size = size

    def first_time(self, update_id: int) -> bool:
        if update_id in self._seen:
            return False
        self._seen[update_id] = None
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return True

    def forget(self, update_id: int) -> None:
        """Let ``update_id`` through once more: it was spooled and will be replayed."""
        self._seen.pop(update_id, None)

    async def gate(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """First handler group: drop updates seen before."""
        if not self.first_time(update.update_id):
            raise ApplicationHandlerStop


def log_spooled_failure(logger: logging.Logger, exc: Exception, message: str, *args: Any) -> None:
    """Log why an update was spooled: in one line when the database's outage explains it
    (a connection cut by a restart is expected there, and the spool answers it), with its
    traceback otherwise (a bug, which the spool only retries)."""
    if isinstance(exc, DATABASE_ERRORS):
        logger.warning(message + " (%s: %s)", *args, type(exc).__name__, exc)
    else:
        logger.error(message, *args, exc_info=exc)


def answers_to_line(answers: Sequence[SentReply]) -> list[dict[str, str]]:
    """The replies a spooled update was answered with, as its line keeps them."""
    return [{"id": a.id, "text": a.text, "at": a.at.isoformat()} for a in answers]


def answers_from_line(mark: Any) -> tuple[SentReply, ...] | None:
    """The replies an ``ANSWERED`` mark holds; None when the line has no mark. A reply
    that cannot be read is left out (said in the log): the person has it anyway."""
    if mark is None or mark is False:
        return None
    answers = []
    for entry in mark if isinstance(mark, list) else []:
        try:
            answers.append(
                SentReply(str(entry["id"]), str(entry["text"]), datetime.fromisoformat(entry["at"]))
            )
        except (TypeError, KeyError, ValueError):
            log.warning("a spooled reply could not be read; it is not journaled")
    return tuple(answers)


def spooled_update_id(data: Any) -> int | None:
    """The ``update_id`` of a spooled line, if it has a usable one."""
    update_id = data.get("update_id") if isinstance(data, dict) else None
    return update_id if isinstance(update_id, int) else None


def _lines(updates: list[Any]) -> str:
    return "".join(json.dumps(data) + "\n" for data in updates)


class Spool:
    """Updates that could not be handled because a dependency was down, kept on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Updates put back in the queue by a replay: their person was told already, so
        #: a second failure is spooled again without a second apology.
        self.replaying: set[int] = set()
        #: Those of them whose person had their answer already, with its replies (:meth:`add`).
        self.answered: dict[int, tuple[SentReply, ...]] = {}
        #: Called with each spooled update's id: the deduplicator's ``forget`` (so its
        #: replay in this process is not dropped as a redelivery) and the retry's nudge.
        self.on_add: list[Callable[[int], None]] = []
        #: How many times a retry (not an outage's end, not a start) replayed each update
        #: that is in the file: the retry gives up on one after a few, which the next
        #: outage's end or start still replays.
        self.retries: dict[int, int] = {}
        self._lock = asyncio.Lock()

    async def add(self, update: Update, *, answers: Sequence[SentReply] | None = None) -> None:
        """Keep ``update`` for a replay; ``answers`` when its person has the answer
        already (a write after it failed): the replies sent, which the replay journals
        and must not send again."""
        data = update.to_dict()
        if answers is not None:
            data[ANSWERED] = answers_to_line(answers)
        async with self._lock:
            await asyncio.to_thread(self._append, [data])
        for listener in self.on_add:
            listener(update.update_id)

    async def pending(self) -> bool:
        """Whether anything waits in the spool."""
        return await asyncio.to_thread(self.path.exists)

    async def take(self) -> list[dict[str, Any]]:
        """Every spooled update; the file is removed."""
        async with self._lock:
            return await asyncio.to_thread(self._take)

    async def take_for_retry(self, most_tries: int) -> list[dict[str, Any]]:
        """The spooled updates a retry may replay (each counted as tried once more); those
        tried ``most_tries`` times stay in the file, which is replaced whole (a failed
        write leaves it as it was: nothing is lost)."""
        async with self._lock:
            return await asyncio.to_thread(self._take_for_retry, most_tries)

    def _append(self, updates: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(_lines(updates))

    def answered_before(self, update_id: int) -> tuple[SentReply, ...] | None:
        """The replies this replayed update was answered with before it was spooled, or
        None when it was not answered (asked once)."""
        return self.answered.pop(update_id, None)

    def replayed(self, update_id: int) -> bool:
        """Whether this update comes from a replay (asked once, when it is handled)."""
        if update_id in self.replaying:
            self.replaying.discard(update_id)
            return True
        return False

    def _take(self) -> list[dict[str, Any]]:
        taken = self._read()
        self.path.unlink(missing_ok=True)
        return taken

    def _take_for_retry(self, most_tries: int) -> list[dict[str, Any]]:
        due, kept, tries = [], [], {}
        for data in self._read():
            update_id = spooled_update_id(data)
            tried = self.retries.get(update_id, 0) if update_id is not None else 0
            if tried >= most_tries:
                kept.append(data)
            else:
                due.append(data)
            if update_id is not None:
                tries[update_id] = min(tried + 1, most_tries)
        if kept:
            rest = self.path.with_name(self.path.name + ".rest")
            rest.write_text(_lines(kept), encoding="utf-8")
            os.replace(rest, self.path)
        else:
            self.path.unlink(missing_ok=True)
        self.retries = tries  # only what is spooled now: a handled update leaves the count
        return due

    def _read(self) -> list[Any]:
        if not self.path.exists():
            return []
        taken = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                taken.append(json.loads(line))
            except ValueError:  # e.g. a line cut short by a crash while writing it
                if line.strip():
                    log.warning("dropped an unreadable spool line (%d characters)", len(line))
        return taken
