"""``/calendar``: connect, inspect, share or disconnect a Google Calendar.

* in a group: connecting happens in a DM (the link is personal, and what Alfred learns
  from a calendar stays in that DM), so the group gets an explanation only;
* ``/calendar`` in a DM: the status when connected, else a one-time consent link;
* ``/calendar confirm``: yes, the Google account Alfred named is the right one (until
  then nothing is read from it; ``/calendar`` asks again while it waits);
* ``/calendar off``: disconnect, deleting the tokens (and revoking them at Google);
* ``/calendar allow`` / ``/calendar deny``: whether the people of your circles may ask
  Alfred to add events to your calendar (default: no).
"""

from __future__ import annotations

import logging

from memory.errors import AlfredError, ConfigurationError
from memory.models import ThreadKind, Viewer
from services.calendar.connect import (
    confirm_connect,
    disconnect,
    pending_question,
    start_connect,
)
from services.calendar.feature import CalendarFeature

log = logging.getLogger(__name__)

IN_GROUP = (
    "Connecting a Google Calendar happens in a private chat: message me directly and send "
    "/calendar there. What I learn from your calendar stays in that private chat."
)
USAGE = (
    "/calendar — connect your Google Calendar, or see its status\n"
    "/calendar confirm — connect the account I asked you about after you signed in\n"
    "/calendar off — disconnect it and delete my access\n"
    "/calendar allow — let the people in your circles add events to it through me\n"
    "/calendar deny — only you can add events (the default)"
)
NOT_CONNECTED = "Your Google Calendar isn't connected. Send /calendar to connect it."


async def calendar_command(calendar: CalendarFeature, viewer: Viewer, args: str = "") -> str:
    """The reply to ``/calendar [args]`` from ``viewer`` (never raises for the person)."""
    if viewer.thread.kind is ThreadKind.GROUP:
        return IN_GROUP
    word = (args.strip().split() or [""])[0].lower()
    try:
        if word in ("off", "disconnect", "stop"):
            if await disconnect(calendar, viewer.user_id):
                return (
                    "Done — your Google Calendar is disconnected: I've deleted my access and "
                    "stopped syncing. What I already remember from it stays until you ask me "
                    "to forget it."
                )
            return NOT_CONNECTED
        if word in ("allow", "deny"):
            allow = word == "allow"
            if not await calendar.store.set_allow(viewer.user_id, allow):
                return NOT_CONNECTED
            if allow:
                return (
                    "OK — people in your circles can now ask me to add events to your "
                    "calendar (in the group). Send /calendar deny to stop it."
                )
            return "OK — only you can add events to your calendar through me."
        if word not in ("", "connect", "status", "confirm", "yes"):
            return USAGE
        problem = calendar.problem()
        if problem is not None:
            return problem
        if word in ("confirm", "yes"):
            return await confirm_connect(calendar, viewer.user_id)
        connection = await calendar.store.get(viewer.user_id)
        if connection is not None and connection.awaiting_confirmation and word != "connect":
            return await pending_question(calendar, viewer.user_id)
        if connection is not None and connection.connected and word != "connect":
            return await _status(calendar, viewer.user_id)
        url = await start_connect(calendar, viewer.user_id)
    except ConfigurationError as exc:
        return exc.message
    except AlfredError as exc:
        log.warning("/calendar failed: %s", exc.one_line())
        return "Sorry — I couldn't do that right now. Please try again in a minute."
    return (
        "Open this link to let me see and add events in your Google Calendar (it works "
        f"once, for 10 minutes):\n{url}\n\nWhat I learn from your calendar stays in this "
        "private chat. Send /calendar off at any time to disconnect."
    )


async def _status(calendar: CalendarFeature, user_id: str) -> str:
    connection = await calendar.store.get(user_id)
    if connection is None:  # disconnected since the caller looked
        return "Your Google Calendar is not connected. Send /calendar connect to connect it."
    email = await calendar.account_email(connection)
    lines = [f"Your Google Calendar{f' ({email})' if email else ''} is connected."]
    if connection.last_sync_at is not None:
        lines.append(f"Last synced: {connection.last_sync_at:%Y-%m-%d %H:%M} UTC.")
    elif connection.last_error:
        lines.append("I couldn't sync it yet; I'll keep trying.")
    else:
        lines.append("The first sync is on its way.")
    lines.append(
        "People in your circles can add events to it through me: "
        + ("yes (/calendar deny to stop)." if connection.allow_others_to_create else "no.")
    )
    lines.append(USAGE)
    return "\n".join(lines)
