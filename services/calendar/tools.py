"""The chat model's calendar tools: list upcoming events, create an event.

Offered only when they can work: calendars are configured here, and the speaker has a
connected calendar (create; list only in the speaker's own DM), or — in a group —
another member has connected theirs *and* allowed others to add events to it (create,
for that member; default no). Listing only ever reads the speaker's own calendar, and
only in their DM: a group reply is read by everyone, and is journaled in the group. A
created event is remembered at once, in the partition of the chat it was created in
(DESIGN.md §3).

Tool results are plain text for the model. Failures come back as ``error: …`` lines
the model can explain; nothing here raises into the reply path.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

from memory.calendar_memories import describe_when, is_person_address, parse_event
from memory.calendar_ports import (
    TOOL_RETRY,
    CalendarBadRequest,
    CalendarClient,
    CalendarConnection,
    CalendarForbidden,
    CalendarRevoked,
    EventsPage,
    RetryPolicy,
    UnreadableTokens,
)
from memory.errors import AlfredError, Unavailable
from memory.llm import ToolCall, ToolSpec
from memory.models import ThreadKind, User, Viewer
from services.calendar.deliver import deliver_event
from services.calendar.feature import CalendarFeature

log = logging.getLogger(__name__)
T = TypeVar("T")

LIST_EVENTS = ToolSpec(
    name="list_calendar_events",
    description=(
        "List the upcoming events in the Google Calendar of the person speaking now (only "
        "theirs; never anyone else's). Use it for questions like 'what's on my calendar "
        "tomorrow?'."
    ),
    parameters={
        "type": "object",
        "properties": {
            "days": {
                "type": "integer",
                "minimum": 1,
                "maximum": 60,
                "default": 7,
                "description": "how many days ahead to look, from now",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 25, "default": 10},
        },
        "additionalProperties": False,
    },
)

CREATE_EVENT = ToolSpec(
    name="create_calendar_event",
    description=(
        "Add an event to a Google Calendar: the speaker's own, or, in a group, another "
        "member's (for_member) if that member connected their calendar and allowed others "
        "to add events. Confirm the details with the person before creating it."
    ),
    parameters={
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "what the event is"},
            "start": {
                "type": "string",
                "description": "ISO 8601 start, e.g. 2026-03-10T15:00 (the speaker's time "
                "zone, as in the current time above, unless an offset is given) or "
                "2026-03-10 for an all-day event",
            },
            "end": {
                "type": "string",
                "description": "ISO 8601 end; for all-day events the last day (inclusive). "
                "Default: one hour after the start, or the same day",
            },
            "all_day": {"type": "boolean", "default": False},
            "location": {"type": "string"},
            "description": {"type": "string"},
            "attendees": {
                "type": "array",
                "maxItems": 20,
                "items": {
                    "type": "object",
                    "properties": {"email": {"type": "string"}, "name": {"type": "string"}},
                    "required": ["email"],
                    "additionalProperties": False,
                },
            },
            "for_member": {
                "type": "string",
                "description": "group only: the name of the member whose calendar gets the "
                "event; omit for the speaker's own",
            },
        },
        "required": ["title", "start"],
        "additionalProperties": False,
    },
)

NOT_CONNECTED = (
    "error: the speaker has not connected a Google Calendar. They can send /calendar to "
    "Alfred in a private chat to connect it."
)
REVOKED = (
    "error: Google no longer lets Alfred use this calendar (access revoked or expired). "
    "The owner can send /calendar in a private chat with Alfred to reconnect."
)
GOOGLE_DOWN = "error: Google Calendar is not answering right now. Suggest trying again later."
LIST_ONLY_IN_DM = (
    "error: calendar events are only read out in a private chat with Alfred, never in a "
    "group. The person can ask Alfred there."
)


class _ToolInputError(Exception):
    """Arguments the model got wrong: explained back to it."""


@dataclass
class CalendarTools:
    """The calendar tools for one speaker in one chat."""

    calendar: CalendarFeature
    viewer: Viewer
    specs: list[ToolSpec] = field(default_factory=list)
    retry: RetryPolicy = TOOL_RETRY

    @classmethod
    async def for_viewer(
        cls, calendar: CalendarFeature, viewer: Viewer, *, retry: RetryPolicy = TOOL_RETRY
    ) -> CalendarTools:
        """The tools this speaker may use here (none when calendars are off)."""
        tools = cls(calendar, viewer, retry=retry)
        if calendar.problem() is not None:
            return tools
        own = await calendar.store.get(viewer.user_id)
        if own is not None and own.connected:
            # Listing reads private events out loud: only in the speaker's own DM, never
            # where other members would see the reply (DESIGN.md §3).
            in_own_dm = _in_own_dm(viewer)
            tools.specs = [LIST_EVENTS, CREATE_EVENT] if in_own_dm else [CREATE_EVENT]
        elif viewer.thread.kind is ThreadKind.GROUP and viewer.thread.circle_id:
            members = await calendar.directory.members(viewer.thread.circle_id)
            others = [m.id for m in members if m.id != viewer.user_id]
            if any(
                c.connected and c.allow_others_to_create for c in await calendar.store.many(others)
            ):
                tools.specs = [CREATE_EVENT]
        return tools

    def handles(self, name: str) -> bool:
        return any(spec.name == name for spec in self.specs)

    async def run(self, call: ToolCall) -> str:
        """Run one tool call; the answer is text for the model, errors included."""
        try:
            if call.name == LIST_EVENTS.name:
                return await self._list(call.arguments)
            if call.name == CREATE_EVENT.name:
                return await self._create(call.arguments)
            return f"error: unknown tool {call.name}"
        except _ToolInputError as exc:
            return f"error: {exc}"
        except CalendarBadRequest as exc:
            return f"error: {exc.message}"
        except CalendarForbidden:
            return "error: Google refused to do this for this calendar."
        except Unavailable:
            return GOOGLE_DOWN
        except AlfredError as exc:
            log.warning("calendar tool failed: %s", exc.one_line())
            return "error: the calendar could not be reached."

    # --- helpers -----------------------------------------------------------------------

    async def _connection(self, user_id: str) -> CalendarConnection | None:
        connection = await self.calendar.store.get(user_id)
        return connection if connection is not None and connection.connected else None

    async def _with_client(
        self, connection: CalendarConnection, action: Callable[[CalendarClient], Awaitable[T]]
    ) -> T:
        """Run ``action(client)``; store refreshed tokens; handle a revoked calendar."""
        calendar = self.calendar
        try:
            client = calendar.client(calendar.tokens(connection), retry=self.retry)
        except UnreadableTokens:
            await calendar.store.mark_revoked(
                connection.user_id, calendar.clock.now(), "tokens unreadable"
            )
            raise CalendarRevoked("tokens unreadable") from None
        try:
            return await action(client)
        except CalendarRevoked:
            await calendar.store.mark_revoked(
                connection.user_id, calendar.clock.now(), "revoked (seen by a tool)"
            )
            if connection.user_id == self.viewer.user_id:
                # The model tells the speaker now; no second notice later.
                await calendar.store.take_revoked_notice(connection.user_id)
            raise
        finally:
            with contextlib.suppress(AlfredError):
                await calendar.save_refreshed(connection.user_id, client)
            client.close()

    async def _own_zone(self) -> str | None:
        """The speaker's own time zone, when they set one."""
        zones = self.calendar.zones
        return await zones.user_zone(self.viewer.user_id) if zones is not None else None

    # --- list ------------------------------------------------------------------------

    async def _list(self, args: dict[str, Any]) -> str:
        if not _in_own_dm(self.viewer):  # a forced call in a group: nothing is read
            return LIST_ONLY_IN_DM
        connection = await self._connection(self.viewer.user_id)
        if connection is None:
            return NOT_CONNECTED
        days = _int(args.get("days"), 7, 1, 60)
        limit = _int(args.get("limit"), 10, 1, 25)
        now = self.calendar.clock.now()

        async def action(client: CalendarClient) -> EventsPage:
            return await client.upcoming(start=now, end=now + timedelta(days=days), limit=limit)

        try:
            page = await self._with_client(connection, action)
        except CalendarRevoked:
            return REVOKED
        zone = page.time_zone or connection.time_zone
        if page.time_zone and page.time_zone != connection.time_zone:
            await self.calendar.store.set_time_zone(connection.user_id, page.time_zone)
        # Read out on the speaker's own clock when they set one (else the calendar's,
        # which is the next in the time zone order anyway).
        mine = await self._own_zone()
        lines = []
        for raw in page.items:
            event = parse_event(raw, default_zone=zone)
            if event.cancelled:
                continue
            when = describe_when(event, mine) or "(time unknown)"
            lines.append(f"- {event.title or '(no title)'} {when}")
        if not lines:
            return f"No events in the next {days} day(s)."
        return f"Upcoming events (next {days} day(s)):\n" + "\n".join(lines)

    # --- create ----------------------------------------------------------------------

    async def _target(self, name: str | None) -> tuple[str, str]:
        """(user id, display name) whose calendar gets the event."""
        speaker = self.viewer.user_id
        if not name or not name.strip():
            return speaker, "your"
        wanted = name.strip().lstrip("@").casefold()
        if self.viewer.thread.kind is not ThreadKind.GROUP or not self.viewer.thread.circle_id:
            me = await self.calendar.directory.user(speaker)
            if me is not None and _matches(me, wanted):
                return speaker, "your"
            raise _ToolInputError(
                "in a private chat, events can only be added to the speaker's own calendar"
            )
        members = await self.calendar.directory.members(self.viewer.thread.circle_id)
        found = [m for m in members if _matches(m, wanted)]
        if not found:
            found = [m for m in members if m.name.split()[0].casefold() == wanted]
        if len(found) != 1:
            raise _ToolInputError(f"there is no single member called {name!r} in this group")
        target = found[0]
        if target.id == speaker:
            return speaker, "your"
        connection = await self._connection(target.id)
        if connection is None or not connection.allow_others_to_create:
            # One answer for "not connected" and "not allowed": the group reads it, and
            # whether a member connected a calendar is theirs to tell.
            raise _ToolInputError(
                f"{target.name} hasn't allowed others to add events to their calendar "
                "(only they can change that, in a private chat with Alfred)"
            )
        return target.id, f"{target.name}'s"

    async def _create(self, args: dict[str, Any]) -> str:
        title = " ".join(str(args.get("title") or "").split())[:200]
        if not title:
            raise _ToolInputError("an event needs a title")
        owner_id, whose = await self._target(_str(args.get("for_member")))
        connection = await self._connection(owner_id)
        if connection is None:
            return NOT_CONNECTED
        start, end = _str(args.get("start")), _str(args.get("end"))
        all_day = bool(args.get("all_day"))
        _times(start, end, all_day, "UTC")  # validate before calling Google
        body: dict[str, Any] = {"summary": title}
        if location := _str(args.get("location")):
            body["location"] = location[:200]
        if description := _str(args.get("description")):
            body["description"] = description[:2000]
        attendees = _attendees(args.get("attendees"))
        if attendees:
            body["attendees"] = attendees

        zone = connection.time_zone
        store = self.calendar.store
        # "at 14:00" is the speaker's 14:00: their own zone when they set one.
        mine = await self._own_zone()

        async def action(client: CalendarClient) -> dict[str, Any]:
            nonlocal zone
            if zone is None:  # not synced yet: ask the calendar for its time zone once
                now = self.calendar.clock.now()
                page = await client.upcoming(start=now, end=now + timedelta(days=1), limit=1)
                zone = page.time_zone
                if zone:
                    await store.set_time_zone(owner_id, zone)
            body.update(_times(start, end, all_day, mine or zone or "UTC"))
            return await client.create_event(body)

        try:
            created = await self._with_client(connection, action)
        except CalendarRevoked:
            return REVOKED
        try:
            await deliver_event(
                self.calendar,
                owner_id,
                created,
                self.viewer.thread,
                creator_user_id=self.viewer.user_id,
                default_zone=zone,
            )
        except AlfredError as exc:  # the event exists; memory is a bonus
            log.warning("memories of a created event not stored: %s", exc.one_line())
        event = parse_event(created, default_zone=zone)
        when = describe_when(event, mine)
        return f'Created "{event.title or title}" {when} in {whose} calendar.'.replace("  ", " ")


def _in_own_dm(viewer: Viewer) -> bool:
    """Whether the viewer speaks in their own private chat (nobody else reads the reply)."""
    thread = viewer.thread
    return thread.kind is ThreadKind.DM and thread.user_id == viewer.user_id


def _matches(user: User, wanted: str) -> bool:
    return user.name.casefold() == wanted or (user.username or "").casefold() == wanted


def _str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _int(value: Any, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value is not None else default
    except (TypeError, ValueError):
        number = default
    return max(low, min(high, number))


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _times(start: str | None, end: str | None, all_day: bool, zone: str) -> dict[str, Any]:
    """Google's ``start``/``end`` for the model's ISO strings (validated)."""
    if not start:
        raise _ToolInputError("an event needs a start (ISO 8601)")
    if all_day or _DATE.match(start):
        try:
            first = date.fromisoformat(start[:10])
            last = date.fromisoformat(end[:10]) if end else first
        except ValueError:
            raise _ToolInputError("dates look like 2026-03-10") from None
        if last < first:
            raise _ToolInputError("the event ends before it starts")
        return {
            "start": {"date": first.isoformat()},
            "end": {"date": (last + timedelta(days=1)).isoformat()},
        }
    try:
        begins = datetime.fromisoformat(start.replace("Z", "+00:00"))
        ends = datetime.fromisoformat(end.replace("Z", "+00:00")) if end else None
    except ValueError:
        raise _ToolInputError("times look like 2026-03-10T15:00 (ISO 8601)") from None
    if ends is None:
        ends = begins + timedelta(hours=1)
    # One side with an offset and the other without: both are read in the offset given
    # (never silently dropped), so the event is where the model said.
    if begins.tzinfo is None and ends.tzinfo is not None:
        begins = begins.replace(tzinfo=ends.tzinfo)
    elif ends.tzinfo is None and begins.tzinfo is not None:
        ends = ends.replace(tzinfo=begins.tzinfo)
    if ends <= begins:
        raise _ToolInputError("the event ends before it starts")

    def when(moment: datetime) -> dict[str, Any]:
        if moment.tzinfo is None:  # the calendar's own zone
            return {"dateTime": moment.isoformat(timespec="seconds"), "timeZone": zone}
        return {"dateTime": moment.isoformat(timespec="seconds")}

    return {"start": when(begins), "end": when(ends)}


def _attendees(value: Any) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if not isinstance(value, list):
        return out
    for item in value[:20]:
        if not isinstance(item, dict):
            continue
        email = _str(item.get("email"))
        if not email or not is_person_address(email):
            raise _ToolInputError(f"{email!r} is not an email address")
        guest = {"email": email.lower()}
        if name := _str(item.get("name")):
            guest["displayName"] = name[:100]
        out.append(guest)
    return out
