"""Dates in statements: is there one, and "tomorrow" or "on Friday" made absolute.

An important date is only worth remembering with the date itself ("my birthday is March
3"); "my birthday is coming up" is not a fact. Relative words are resolved against the
conversation's ``now`` so that "my birthday is tomorrow" stays true next year.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
DATE = re.compile(
    rf"\b(?:(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}\.?(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\.?\s+(?:the\s+)?{_DAY}(?:,?\s+\d{{4}})?"
    r"|\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\b(?:on\s+)?(?P<word>today|tomorrow|yesterday)\b", re.IGNORECASE)
_OFFSETS: Final = {"yesterday": -1, "today": 0, "tomorrow": 1}
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: Any day of the week, as a regular expression (match it case-insensitively).
WEEKDAY: Final = rf"(?:{'|'.join(WEEKDAYS)})"
#: "on Friday", "this Friday": one coming day. Not "on Fridays" or "on Friday nights" (a
#: habit), and not "next Friday", which people read two ways.
_COMING_WEEKDAY = re.compile(
    rf"\b(?P<lead>on|this)\s+(?P<day>{WEEKDAY})\b(?!'?s\b)"
    r"(?!\s+(?:nights?|mornings?|afternoons?|evenings?)\b)(?!,?\s+(?:the\s+)?\d)"
    rf"(?!,?\s+{_MONTH}\b)",
    re.IGNORECASE,
)


def has_date(text: str) -> bool:
    """Whether ``text`` names a calendar day ("March 3", "12 June 2015", "2025-06-12")."""
    return DATE.search(text) is not None


def resolve_relative_dates(text: str, now: datetime) -> str:
    """``text`` with today/tomorrow/yesterday, and "on/this <weekday>", replaced by the day
    they mean ("on March 4", "on Friday, March 6")."""

    def absolute(match: re.Match[str]) -> str:
        day = now + timedelta(days=_OFFSETS[match.group("word").lower()])
        return f"on {MONTHS[day.month - 1]} {day.day}"

    def coming(match: re.Match[str]) -> str:
        wanted = WEEKDAYS.index(match.group("day").lower())
        ahead = (wanted - now.weekday()) % 7
        if ahead == 0 and match.group("lead").lower() == "on":
            ahead = 7  # "on Friday", said on a Friday, is the next one
        day = now + timedelta(days=ahead)
        return f"on {WEEKDAYS[wanted].capitalize()}, {MONTHS[day.month - 1]} {day.day}"

    return _COMING_WEEKDAY.sub(coming, _RELATIVE.sub(absolute, text))
