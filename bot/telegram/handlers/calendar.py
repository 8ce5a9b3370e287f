"""The /calendar command: connect, check or disconnect a Google Calendar."""

from __future__ import annotations

from bot.assistant import Assistant
from bot.incoming import safe_text
from memory.models import Viewer

CALENDAR_OFF = "Calendar features are switched off here."


async def calendar_text(assistant: Assistant, viewer: Viewer, command: str) -> str:
    """The answer to ``/calendar …`` (``command`` is the whole message text)."""
    if not assistant.flags.calendar:
        return CALENDAR_OFF
    from integrations.calendar import calendar_command

    parts = safe_text(command).split(maxsplit=1)
    return await calendar_command(assistant.s, viewer, parts[1] if len(parts) > 1 else "")
