"""The calendar as other use cases see it: the reply's
:class:`memory.reply_ports.CalendarAccess`, and the purge's
:class:`memory.admin_ports.CalendarEraser`.

The reply path holds this port, not the calendar package: it asks for the speaker's
tools, the one-time revocation notice, erasure and the /calendar answer, and knows
nothing else of calendars.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.models import Viewer
from services.calendar.commands import calendar_command
from services.calendar.connect import forget_calendar_user
from services.calendar.feature import CalendarFeature, take_revoked_notice
from services.calendar.tools import CalendarTools


@dataclass(frozen=True)
class CalendarForReply:
    """:class:`memory.reply_ports.CalendarAccess` over the calendar use cases."""

    calendar: CalendarFeature

    async def toolbox(self, viewer: Viewer, *, enabled: bool) -> CalendarTools:
        if not enabled:  # MEMORY_CALENDAR off: no connection lookup on every reply
            return CalendarTools(self.calendar, viewer)
        return await CalendarTools.for_viewer(self.calendar, viewer)

    async def take_revoked_notice(self, user_id: str) -> str | None:
        return await take_revoked_notice(self.calendar, user_id)

    async def forget_user(self, user_id: str) -> None:
        await forget_calendar_user(self.calendar, user_id)

    async def command(self, viewer: Viewer, argument: str) -> str:
        return await calendar_command(self.calendar, viewer, argument)


@dataclass(frozen=True)
class CalendarForPurge:
    """:class:`memory.admin_ports.CalendarEraser`: a person's calendar records, counted
    and erased by the operator's purge."""

    calendar: CalendarFeature

    async def counts(self, user_id: str) -> dict[str, int]:
        return await self.calendar.store.footprint(user_id)

    async def forget(self, user_id: str) -> None:
        await forget_calendar_user(self.calendar, user_id)
