"""What the reply path needs beyond storage: the calendar, metrics, and moving a circle.

Each is a port so the reply service stays free of Telegram, Google and Prometheus: the
composition root hands in the adapters (or nothing, for a feature that is off).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memory.llm import ToolCall, ToolSpec
from memory.models import CircleMove, Viewer
from memory.search.results import RetrievalResult


class CalendarToolbox(Protocol):
    """The calendar tools one viewer may use in one reply (none when not connected)."""

    @property
    def specs(self) -> Sequence[ToolSpec]: ...

    def handles(self, name: str) -> bool: ...

    async def run(self, call: ToolCall) -> str: ...


class CalendarAccess(Protocol):
    """The calendar as the reply path sees it."""

    async def toolbox(self, viewer: Viewer, *, enabled: bool) -> CalendarToolbox:
        """The viewer's tools; ``enabled`` False gives none without any lookup."""
        ...

    async def take_revoked_notice(self, user_id: str) -> str | None:
        """A notice that the person's calendar access was revoked, once."""
        ...

    async def forget_user(self, user_id: str) -> None:
        """Erase the person's calendar connection and everything derived from it."""
        ...

    async def command(self, viewer: Viewer, argument: str) -> str:
        """The answer to ``/calendar [argument]`` (connect, off, allow, deny)."""
        ...


class ErasureResidue(Protocol):
    """What a forget must clean beyond the memory stores: copies of a person's words that
    lie outside the database (spooled updates on disk) and the history Redis keeps of its
    own writes (its append-only file, rewritten so deleted keys are not kept there)."""

    async def scrub(
        self,
        telegram_user_id: int | None,
        needles: Sequence[str] | None,
        user_id: str | None = None,
    ) -> dict[str, int]:
        """Drop the spooled updates from ``telegram_user_id`` (every one of theirs when
        ``needles`` is None, else those that mention a needle) and the kept job results
        about ``user_id`` (an export), then have Redis rewrite its append-only file.
        Returns what was removed, per kind."""
        ...


class ReplyObserver(Protocol):
    """Where the reply path reports what it measured (Prometheus in production)."""

    def record_retrieval(self, result: RetrievalResult) -> None: ...


class CircleMover(Protocol):
    """Re-keys a circle's documents when its group becomes a supergroup (idempotent)."""

    async def move_circle(
        self, old_chat_id: int, new_chat_id: int, title: str | None, at: datetime
    ) -> CircleMove: ...


class PendingDeliveries(Protocol):
    """Deliveries waiting for a person to open a chat with Alfred.

    Telegram refuses a bot's first message to someone who never started it, so what Alfred
    must send to a person's DM (an export asked for in a group) waits here until they open
    the start link. An entry names the person and what to send (``kind``), never its
    content: the content is made again when it is delivered, from what is visible then."""

    async def hold(self, user_id: str, kind: str, *, at: datetime, until: datetime) -> str:
        """Keep a delivery of ``kind`` for ``user_id`` until ``until``; returns the token
        of its start link (random; the same one while such a delivery is waiting)."""
        ...

    async def claim(self, user_id: str, token: str | None, *, now: datetime) -> list[str]:
        """Take the person's deliveries still in time, and return their kinds, each once:
        a second claim finds nothing. Only the person's own deliveries are taken: a
        ``token`` (from a start link) of someone else's delivery is ignored."""
        ...
