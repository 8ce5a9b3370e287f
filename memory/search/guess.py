"""A ranking made ahead of its search, while the turn's reads are still in flight.

A reply's retrieval cannot rank before the turn's memory read has confirmed the viewer's
cached index (the partition versions), and that read waits behind the message's journal
writes. Ranking on the index the viewer's last search used, during those writes, moves
the ranking's CPU (the keyword leg, the vector scan, fusion and blending: a few
milliseconds at 10,000 facts) off the reply's critical path. The guess is worth nothing
until the search confirms it: it is taken only when the index the search confirms is the
very index it ranked, with the same number of changes before and after it ran, so the
same facts and signals give the ranking the search would make itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, runtime_checkable

from memory.models import Viewer
from memory.ports import Vector

Result = TypeVar("Result")


@dataclass
class Guess(Generic[Result]):
    """One ranking made ahead (``result``), and what it was made from.

    ``stamp`` names the index and how many changes it had taken (a prepared search's
    ``stamp``: the application-side backend has one, Atlas none). The privacy filter
    and the re-check by :func:`memory.privacy.is_visible` ran inside the ranking as in
    any other, and a guess is only looked up by the viewer, thread and query it was
    made for (:func:`guess_key`)."""

    limit: int
    stamp: object
    result: Result
    vector: asyncio.Task[Vector | None]
    #: The prepared search ranked (held, so the index it names stays the same object).
    source: object
    task: asyncio.Task[object] = field(init=False)

    async def holds_for(self, prepared: object, limit: int, about: object) -> bool:
        """Whether this ranking is the one a search of ``prepared`` would make: the same
        limit, nobody named (the guess names nobody), and the same index, unchanged."""
        if limit != self.limit or about or stamp_of(prepared) != self.stamp:
            self.task.cancel()
            return False
        try:
            after = await self.task
        except Exception:  # a guess that failed: the search ranks for itself
            return False
        return after == self.stamp == stamp_of(prepared)

    def drop(self) -> None:
        self.task.cancel()
        self.vector.cancel()


@runtime_checkable
class Stamped(Protocol):
    """A prepared search that names the index it searches and the changes it had taken
    (the application-side one); equal stamps, equal rankings."""

    @property
    def stamp(self) -> object: ...


def stamp_of(prepared: object) -> object:
    """A prepared search's stamp, or None for a backend that keeps no index to name."""
    return prepared.stamp if isinstance(prepared, Stamped) else None


def guess_key(viewer: Viewer, text: str) -> tuple[str, str, str, str]:
    """Who asked what, where: a guess serves no other viewer, thread or query."""
    return (viewer.user_id, viewer.thread.id, ",".join(sorted(viewer.circle_ids)), text)
