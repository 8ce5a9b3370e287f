"""Time zone statements and questions: "my time zone is Europe/Lisbon", "I'm on London
time", "our time zone is America/New_York" (in a group), "what's my time zone?".

The whole message must be the statement (after addressing and politeness): "my time
zone is a mess this week" is not a setting, and a zone said in passing ("I was in
Lisbon") never changes anything. What was said as the zone is kept raw: reading and
validating it is :func:`memory.timezones.parse_zone`'s job, so an unknown zone gets a
clear answer instead of being ignored.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from memory.rules.addressing import strip_addressing
from memory.rules.text import clean_text

_ZONE: Final = r"(?:time\s*-?\s*zone|tz)"
_LEAD: Final = r"^(?:(?:please|ok|so|btw|fyi|also)[\s,]+)*"
_SET: Final = (
    # "my time zone is X", "our timezone is now X"
    re.compile(rf"{_LEAD}(?P<who>my|our)\s+{_ZONE}\s+is\s+(?:now\s+)?(?P<value>.+)$", re.I),
    # "set my time zone to X", "change our timezone to X"
    re.compile(
        rf"{_LEAD}(?:(?:can|could|would)\s+you\s+)?(?:set|change|switch|update|make)\s+"
        rf"(?P<who>my|our)\s+{_ZONE}\s+(?:to|as|is)\s+(?P<value>.+)$",
        re.I,
    ),
    # "I'm on London time", "we're in the Europe/Paris time zone", "I live on CET"
    re.compile(
        rf"{_LEAD}(?P<who>i'?m|i\s+am|i\s+live|we'?re|we\s+are|we\s+live)\s+(?:in|on)\s+"
        rf"(?:the\s+)?(?P<value>.+?)\s+(?:time|{_ZONE})$",
        re.I,
    ),
    # "use Europe/Lisbon for my times"
    re.compile(
        rf"{_LEAD}use\s+(?P<value>.+?)\s+(?:time\s+)?for\s+(?P<who>my|our)\s+(?:times|{_ZONE})$",
        re.I,
    ),
)
_ASK: Final = (
    re.compile(
        rf"{_LEAD}(?:what'?s|what\s+is|which\s+is|tell\s+me)\s+(?P<who>my|our)\s+{_ZONE}$", re.I
    ),
    re.compile(
        rf"{_LEAD}(?:what|which)\s+{_ZONE}\s+(?:do\s+you\s+use\s+for\s+(?P<who1>me|us)"
        rf"|(?P<who2>am\s+i|are\s+we)\s+(?:in|on))$",
        re.I,
    ),
)
#: A value is a zone's name, not a sentence: at most this many words.
MAX_VALUE_WORDS: Final = 4


class TimeZoneIntent(BaseModel):
    """Set or ask a time zone: the person's own ("me") or the group's circle's ("us")."""

    model_config = ConfigDict(frozen=True)

    action: Literal["set", "ask"]
    scope: Literal["me", "us"]
    #: What was said as the zone (set only), unvalidated.
    value: str | None = None


def _scope(who: str) -> Literal["me", "us"]:
    return "us" if who.lower().startswith(("our", "we", "us", "are")) else "me"


def detect_time_zone(text: str) -> TimeZoneIntent | None:
    """A time zone statement or question making up the whole message, else None."""
    if not text or len(text) > 200:
        return None
    body = strip_addressing(clean_text(text)).strip()
    body = re.sub(r"[\s.!]+$", "", body)
    asked = body.endswith("?")
    body = body.rstrip("?").strip()
    body = re.sub(r"[\s,]+(?:please|thanks|thank\s+you|thx)$", "", body, flags=re.I)
    for pattern in _ASK:
        match = pattern.match(body)
        if match is not None:
            who = next(g for g in match.groups() if g)
            return TimeZoneIntent(action="ask", scope=_scope(who))
    if asked:
        return None
    for pattern in _SET:
        match = pattern.match(body)
        if match is None:
            continue
        value = match.group("value").strip()
        if not value or len(value.split()) > MAX_VALUE_WORDS:
            return None
        return TimeZoneIntent(action="set", scope=_scope(match.group("who")), value=value)
    return None
