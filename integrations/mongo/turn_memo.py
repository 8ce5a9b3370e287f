"""One reply's reads, each made once: a memo that lives for one turn of the reply path.

A reply used to ask MongoDB the same things several times (the circle and its members for
names, again for the time zone; the partition versions for the always-in-context block,
again for the search index) and to ask related things one query at a time. Within one
turn (:func:`reply_turn`, opened by the reply service through ``ReplyDeps.turn_scope``)
the adapters fetch what a reply needs in two combined reads (:mod:`.turn_reads`) and
serve the later reads of the same documents from here.

Correctness rests on three rules, so a cached answer is never older than a read made at
the moment it was fetched:

* **One turn only.** The memo is dropped when the turn ends; the next message reads
  afresh, so a membership change, a forget or a new time zone is seen by it.
* **Writes invalidate.** :class:`WriteInvalidation`, a PyMongo command listener on the
  client, drops a collection's entries from every open memo when this process starts a
  write to it, and a read that raced with such a write is not stored.
* **A short life.** An entry older than :data:`MAX_AGE_S` is not served (a reply that
  waited on the model reads again), except the thread's formation counters, which only
  decide when formation is requested.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any, Final

from pymongo import monitoring

#: How long a memoised read may be served within a turn.
MAX_AGE_S: Final = 1.0
#: Commands that change documents (the collection is the command's value).
WRITE_COMMANDS: Final = frozenset({"insert", "update", "delete", "findAndModify"})
#: Commands that change or remove whole collections.
DROP_COMMANDS: Final = frozenset({"drop", "dropDatabase", "renameCollection"})

#: Writes started by this process, per collection ("*" for drops), to tell a read that
#: raced with a write (not stored) from one that did not.
_writes: Counter[str] = Counter()
_open: weakref.WeakSet[TurnMemo] = weakref.WeakSet()
_current: ContextVar[TurnMemo | None] = ContextVar("alfred_turn_memo", default=None)


class _Missing(Enum):
    """Nothing memoised under that key (``None`` can be a memoised answer)."""

    MISSING = 0


MISSING: Final = _Missing.MISSING


class TurnMemo:
    """Read results of one turn, by collection and key."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[Hashable, tuple[float, Any]]] = {}
        self.closed = False
        #: One combined read at a time (the retrieval legs ask concurrently).
        self.lock = asyncio.Lock()

    def get(self, collection: str, key: Hashable, *, max_age: float | None = MAX_AGE_S) -> Any:
        """The memoised value, or :data:`MISSING`."""
        if self.closed:
            return MISSING
        entry = self._entries.get(collection, {}).get(key)
        if entry is None:
            return MISSING
        stored_at, value = entry
        if max_age is not None and time.monotonic() - stored_at > max_age:
            return MISSING
        return value

    def put(self, collection: str, key: Hashable, value: Any, *, seen: int) -> None:
        """Keep ``value`` unless this process wrote to ``collection`` since ``seen``
        (:func:`generation` taken before the read)."""
        if self.closed or generation(collection) != seen:
            return
        self._entries.setdefault(collection, {})[key] = (time.monotonic(), value)

    def drop(self, collection: str) -> None:
        if collection == "*":
            self._entries.clear()
        else:
            self._entries.pop(collection, None)


def current() -> TurnMemo | None:
    """The memo of the turn this code runs in, or None outside a reply turn."""
    memo = _current.get()
    return memo if memo is not None and not memo.closed else None


def generation(collection: str) -> int:
    """Writes this process started on ``collection`` (and drops of any), so far."""
    return _writes[collection] + _writes["*"]


@contextmanager
def reply_turn() -> Iterator[None]:
    """Memoise the reads of the code run inside (one reply turn)."""
    memo = TurnMemo()
    token = _current.set(memo)
    _open.add(memo)
    try:
        yield
    finally:
        memo.closed = True
        _open.discard(memo)
        _current.reset(token)


def wrote(collection: str) -> None:
    """Record a write to ``collection`` and drop its entries from every open memo."""
    _writes[collection] += 1
    for memo in list(_open):
        memo.drop(collection)


class WriteInvalidation(monitoring.CommandListener):
    """Sees every command this client starts and invalidates on writes.

    It is called synchronously as the command starts, before its result can be read,
    so no later memoised read can miss a write this process made."""

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        name = event.command_name
        if name in WRITE_COMMANDS:
            wrote(str(event.command.get(name)))
        elif name == "bulkWrite":  # the client-level bulk write names its namespaces
            for ns in event.command.get("nsInfo", []):
                wrote(str(ns.get("ns", "")).split(".", 1)[-1])
        elif name in DROP_COMMANDS:
            wrote("*")

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        """Only the start of a write matters."""

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        """Only the start of a write matters."""
