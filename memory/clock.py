"""Clocks: the real one, and a settable one for replays and tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to: replays and tests drive time explicitly."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (naive datetimes are taken as UTC)."""
        self._now = when if when.tzinfo else when.replace(tzinfo=UTC)

    def advance(self, delta: timedelta) -> None:
        """Move forward by ``delta``."""
        self._now += delta
